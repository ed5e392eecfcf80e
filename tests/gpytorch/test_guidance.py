"""What `invlab.gpytorch` tells a user who passes an orbit that does not fit the inputs' shape, or hands
`InducingPatches.from_images` the kernel as their model wraps it: the advice fits the kernel's own arguments
(`input_shape`, `orbit`), and a wrapped `ConvKernel` is found inside its wrappers."""
import pytest
import torch

pytest.importorskip("gpytorch")

from gpytorch.kernels import RBFKernel, ScaleKernel  # noqa: E402

from invlab.errors import ConfigError  # noqa: E402
from invlab.gpytorch import ConvKernel, InducingPatches, InvariantKernel  # noqa: E402


def images(n=3, seed=0):
    """n flattened 1×8×8 images [n, 64]."""
    return torch.rand(n, 64, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@pytest.mark.parametrize("orbit", ["flips", "object"])
def test_an_image_orbit_without_input_shape_says_to_pass_the_images_shape(orbit):
    """Flattened images read as vectors: the advice is input_shape=(C, H, W), never a vector-only orbit."""
    from invlab.transforms import FlipOrbit

    with pytest.raises(ConfigError) as caught:
        InvariantKernel(RBFKernel(), "flips" if orbit == "flips" else FlipOrbit()).double()(images()).to_dense()
    message = str(caught.value)
    assert "input_shape=(C, H, W)" in message and ("'flips'" if orbit == "flips" else "FlipOrbit()") in message
    assert "augmentation=" not in message, message  # the kernel's argument is `orbit`, and images need no vector orbit
    # the advice, followed, works: the orbit of each image is the image and its mirror image
    kernel = InvariantKernel(RBFKernel(), "flips", input_shape=(1, 8, 8)).double()
    X = images()
    mirrored = X.reshape(3, 1, 8, 8).flip(-1).flatten(1)
    torch.testing.assert_close(kernel(X, X).to_dense(), kernel(mirrored, X).to_dense())


def test_an_image_orbit_with_a_vector_input_shape_asks_for_the_images_shape():
    with pytest.raises(ConfigError) as caught:
        InvariantKernel(RBFKernel(), "rot90", input_shape=(64,))
    message = str(caught.value)
    assert "input_shape=(C, H, W)" in message and "(64,)" in message and "augmentation=" not in message, message


def test_a_vector_orbit_on_images_names_only_orbits_the_kernel_takes():
    """'rotation', 'affine' and 'deformation' act on images but are sampled, so the kernel refuses them: the advice
    names the finite image orbits, and says how to use a vector orbit."""
    with pytest.raises(ConfigError) as caught:
        InvariantKernel(RBFKernel(), "permutations", input_shape=(1, 4, 4))
    message = str(caught.value)
    assert "'rot90'" in message and "'flips'" in message and "'cyclic_shifts'" in message, message
    assert "affine" not in message and "deformation" not in message and "augmentation=" not in message, message
    assert "input_shape" in message, message


def test_an_unknown_orbit_is_refused_when_the_kernel_is_built():
    with pytest.raises(ConfigError, match="unknown orbit 'flip'.*'flips'"):
        InvariantKernel(RBFKernel(), "flip")


@pytest.mark.parametrize("wrap", [lambda k: ScaleKernel(k), lambda k: ScaleKernel(ScaleKernel(k)), lambda k: k],
                         ids=["ScaleKernel", "ScaleKernel twice", "bare"])
def test_from_images_takes_the_conv_kernel_as_the_model_wraps_it(wrap):
    conv = ConvKernel(RBFKernel(), image_shape=(8, 8), patch_shape=3)
    X = images(5)
    bare = InducingPatches.from_images(conv, X, 10, torch.Generator().manual_seed(1)).Z
    wrapped = InducingPatches.from_images(wrap(conv), X, 10, torch.Generator().manual_seed(1)).Z
    assert wrapped.shape == (10, 9)
    torch.testing.assert_close(wrapped, bare)


def test_from_images_without_a_conv_kernel_says_what_to_pass():
    X = images(5)
    with pytest.raises(ConfigError) as caught:
        InducingPatches.from_images(ScaleKernel(RBFKernel()), X, 4)
    message = str(caught.value)
    assert "ConvKernel" in message and "RBFKernel" in message and "ScaleKernel(ConvKernel(" in message, message
    with pytest.raises(ConfigError) as caught:
        InducingPatches.from_images(InvariantKernel(RBFKernel(), "flips", input_shape=(1, 8, 8)), X, 4)
    message = str(caught.value)
    assert "InvariantKernel" in message and "inducing inputs" in message, message


def test_input_shape_takes_one_channels_height_and_width_and_refuses_other_lengths():
    assert InvariantKernel(RBFKernel(), "rot90", input_shape=(8, 8)).input_shape == (1, 8, 8)
    with pytest.raises(ValueError, match=r"input_shape is \(C, H, W\).*got \(1, 1, 8, 8\)"):
        InvariantKernel(RBFKernel(), "rot90", input_shape=(1, 1, 8, 8))
