"""Affine augmentation against independent computations (scipy.ndimage), the data's rotation convention,
and the reparameterisation: gradients reach both ends of every range."""
import numpy as np
import pytest
import torch
from scipy import ndimage

from invlab.data.variants import rotate_images
from invlab.errors import ConfigError
from invlab.parameters import learnables
from invlab.transforms import AFFINE_PARAMETERS, AffineAugmentation, UniformRange, all_affine, rotation_only
from invlab.transforms.affine import inverse_affine_matrices, warp

DT = torch.float64


def host(t):
    """A result on the test device and dtype as a float64 numpy array, beside scipy's reference."""
    return t.detach().cpu().double().numpy()


def images(n=3, h=12, w=12, seed=0):
    g = np.random.default_rng(seed)
    X = np.zeros((n, 1, h, w))
    X[:, :, 2:-2, 2:-2] = g.uniform(size=(n, 1, h - 4, w - 4))  # blank border, like MNIST
    return X


def fixed(**phi):
    """An affine augmentation whose every range is a single value (lo = hi), i.e. a fixed map."""
    return AffineAugmentation({k: UniformRange(v, v, AFFINE_PARAMETERS[k][0]) for k, v in phi.items()})


@pytest.mark.parametrize("angle", [30.0, -45.0, 90.0, 137.0])
@pytest.mark.parametrize("shape", [(12, 12), (10, 16)])
def test_rotation_matches_scipy(angle, shape, place, tol):
    X = images(h=shape[0], w=shape[1])
    ours = host(place(fixed(rotation=angle)).sample(place(torch.as_tensor(X)), 1)[:, 0])
    # grid_sample's zero padding is scipy's 'grid-constant' mode: identical everywhere
    ref = np.stack([ndimage.rotate(x, angle, axes=(2, 1), reshape=False, order=1, mode="grid-constant") for x in X])
    assert np.abs(ours - ref).max() < tol.f64(atol=1e-12).atol


def test_rotation_follows_the_data_convention(place, tol):
    """Positive = counter-clockwise as displayed, exactly the rotated-MNIST variant's `rotate_images`."""
    X = images(h=16, w=16)
    ours = host(place(fixed(rotation=35.0)).sample(place(torch.as_tensor(X)), 1)[:, 0])
    ref = rotate_images(X, np.full(len(X), 35.0))
    # the blank border makes scipy's 'constant' mode agree too
    assert np.abs(ours - ref).max() < tol.f64(atol=1e-12).atol
    # counter-clockwise: a dot right of the centre moves to above it
    dot = np.zeros((1, 1, 9, 9))
    dot[0, 0, 4, 7] = 1.0
    turned = host(place(fixed(rotation=90.0)).sample(place(torch.as_tensor(dot)), 1)[0, 0, 0])
    assert turned[1, 4] == pytest.approx(1.0, rel=tol.f64(rtol=1e-6).rtol)
    assert turned.sum() == pytest.approx(1.0, rel=tol.f64(rtol=1e-6).rtol)


def test_general_affine_matches_scipy_affine_transform(place, tol):
    """All six parameters at once against scipy.ndimage.affine_transform with the matrix built independently."""
    phi = dict(rotation=20.0, scale_x=0.15, scale_y=-0.1, shear=0.2, translate_x=0.1, translate_y=-0.05)
    H, W = 14, 18
    X = images(h=H, w=W)
    ours = host(place(fixed(**phi)).sample(place(torch.as_tensor(X)), 1)[:, 0])
    a = np.deg2rad(phi["rotation"])
    R = np.array([[np.cos(a), np.sin(a)], [-np.sin(a), np.cos(a)]])  # counter-clockwise as displayed, y down
    forward = R @ np.array([[1.0, phi["shear"]], [0.0, 1.0]]) @ np.diag(np.exp([phi["scale_x"], phi["scale_y"]]))
    t = np.array([phi["translate_x"] * W, phi["translate_y"] * H])
    inv = np.linalg.inv(forward)  # (x, y) = (col, row) about the centre
    c = np.array([(W - 1) / 2, (H - 1) / 2])
    swap = np.array([[0, 1], [1, 0]])  # scipy works in (row, col)
    matrix = swap @ inv @ swap
    offset = swap @ (c - inv @ (c + t))
    ref = np.stack([ndimage.affine_transform(x[0], matrix, offset, order=1, mode="grid-constant")[None] for x in X])
    assert np.abs(ours - ref).max() < tol.f64(atol=1e-12).atol


def test_integer_translation_is_a_shift(place, tol, assert_close):
    X = place(torch.as_tensor(images(h=10, w=10)))
    moved = place(fixed(translate_x=0.2, translate_y=-0.1)).sample(X, 1)[:, 0]  # 2 pixels right, 1 up
    ref = torch.zeros_like(X)
    ref[..., :-1, 2:] = X[..., 1:, :-2]
    assert_close(moved, ref, tol.f64(atol=1e-12))


def test_zero_ranges_are_the_identity_and_samples_have_the_right_shape(place, tol, assert_close):
    X = place(torch.as_tensor(images()))
    for aug in (rotation_only(0.0), all_affine(0.0, 0.0)):
        A = place(aug).sample(X, 5)
        assert A.shape == (3, 5, 1, 12, 12)
        assert_close(A, X[:, None].expand_as(A), tol.f64(atol=1e-12))


def test_samples_spread_over_the_range(place):
    aug = place(rotation_only(30.0))
    theta = aug.draw(1, 4000, place(torch.zeros(1, dtype=DT)))["rotation"]
    assert -30.0 <= float(theta.min()) < -29.0 and 29.0 < float(theta.max()) <= 30.0
    assert abs(float(theta.mean())) < 1.0  # uniform on [−30, 30]: sd of the mean ≈ 0.27
    aug.ranges["rotation"].half_width.assign(-30.0)  # the sign does not matter
    assert float(aug.range_values()["rotation"]) == pytest.approx(30.0)


def test_reparameterised_gradients_reach_lo_and_hi(place):
    aug = place(all_affine(10.0, 0.1))
    X = place(torch.as_tensor(images()))
    g = torch.Generator().manual_seed(0)
    weights = place(torch.randn(1, 1, 1, 12, 12, generator=g, dtype=DT))
    (aug.sample(X, 6, g) * weights).sum().backward()
    values = learnables(aug)
    assert len(values) == 12  # six parameters, two ends each
    for name, value in values.items():
        grad = value.raw.grad
        assert grad is not None and torch.isfinite(grad) and grad.abs() > 0, name
    # θ = lo + (hi − lo)ε: ∂θ/∂lo = 1 − ε, ∂θ/∂hi = ε
    r = place(UniformRange(-1.0, 2.0, 5.0))
    eps = place(torch.tensor([0.25], dtype=DT))
    r(eps).sum().backward()
    dlo = r.lo.raw.grad / torch.autograd.functional.jacobian(r.lo.transform, r.lo.raw.detach())
    dhi = r.hi.raw.grad / torch.autograd.functional.jacobian(r.hi.transform, r.hi.raw.detach())
    assert float(dlo) == pytest.approx(0.75) and float(dhi) == pytest.approx(0.25)


def test_frozen_range_gets_no_gradient_and_can_be_set(place):
    aug = place(rotation_only(5.0))
    alpha = learnables(aug)["ranges.rotation.half_width"]
    alpha.frozen = True
    alpha.assign(45.0)
    assert not aug.sample(place(torch.as_tensor(images())), 3).requires_grad  # nothing left to learn
    assert alpha.raw.grad is None and float(alpha()) == pytest.approx(45.0)


def test_bad_configuration_is_refused():
    with pytest.raises(ConfigError, match="unknown affine parameter"):
        AffineAugmentation({"zoom": UniformRange(0, 1, 2)})
    with pytest.raises(ConfigError, match="rotation"):
        all_affine(rotation=200.0)


def test_matrices_follow_device_and_dtype(device, tol, assert_close):
    phi = {"rotation": torch.zeros(2, dtype=torch.float32, device=device)}
    theta = inverse_affine_matrices(phi, 8, 8)
    assert theta.dtype == torch.float32 and theta.device == phi["rotation"].device and theta.shape == (2, 2, 3)
    assert_close(theta, torch.eye(2, 3).expand(2, 2, 3), tol.f64())
    warped = warp(torch.ones(2, 1, 8, 8, device=device), theta)
    assert warped.dtype == torch.float32 and warped.device == theta.device
