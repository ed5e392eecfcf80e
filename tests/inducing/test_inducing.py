"""Inducing variables (invlab.inducing): locations, patches and blocks — shapes, initialisation and refusals."""
import pytest
import torch

from invlab.errors import ShapeError
from invlab.inducing import (
    InducingBlocks,
    InducingPatches,
    InducingPoints,
    InterDomainPoints,
    SharedInducingPatches,
    block_sizes,
    initial_locations,
    initial_patches,
)
from invlab.kernels import RBF
from invlab.kernels.convolutional import Convolutional

DT = torch.float64


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


# -- points -------------------------------------------------------------------------------------------------------
def test_inducing_points_hold_flattened_locations_and_can_be_frozen():
    Z = torch.rand(5, 1, 3, 3, generator=gen(), dtype=DT)
    ind = InducingPoints(Z)
    assert ind.Z.shape == (5, 9) and ind.num_inducing == len(ind) == 5
    assert torch.equal(ind.Z.detach(), Z.reshape(5, 9)) and ind.Z.data_ptr() != Z.data_ptr()  # a copy
    assert not ind.frozen
    ind.frozen = True
    assert ind.frozen and not ind.Z.requires_grad
    assert InducingPoints(Z, learnable=False).frozen
    assert isinstance(InterDomainPoints(Z), InducingPoints) and block_sizes(ind) == (5,)


@pytest.mark.parametrize("Z", [torch.zeros(0, 3), torch.zeros(4)])
def test_inducing_points_refuse_empty_or_vector_locations(Z):
    with pytest.raises(ShapeError, match="M ≥ 1"):
        InducingPoints(Z)


def test_initial_locations_are_cluster_centres_of_the_data():
    g = gen(1)
    centres = torch.tensor([[-5.0, 0.0], [5.0, 0.0], [0.0, 8.0]], dtype=DT)
    X = torch.cat([c + 0.1 * torch.randn(40, 2, generator=g, dtype=DT) for c in centres])
    Z = initial_locations(X, 3, gen(2))
    assert Z.shape == (3, 2)
    # k-means from distinct data points: each centre is found once, at the mean of its cluster
    order = torch.cdist(centres, Z).argmin(1)
    assert sorted(order.tolist()) == [0, 1, 2]
    for k in range(3):
        assert torch.allclose(Z[order[k]], X[40 * k:40 * (k + 1)].mean(0), atol=1e-12)


def test_initial_locations_are_seeded_flatten_images_and_refuse_too_many():
    X = torch.rand(20, 1, 2, 2, generator=gen(), dtype=DT)
    a, b = initial_locations(X, 6, gen(3)), initial_locations(X, 6, gen(3))
    assert a.shape == (6, 4) and torch.equal(a, b)
    assert not torch.equal(a, initial_locations(X, 6, gen(4)))
    Z0 = initial_locations(X, 6, gen(3), kmeans_iters=0)  # no refinement: distinct training inputs
    assert all(any(torch.equal(z, x) for x in X.reshape(20, 4)) for z in Z0)
    assert torch.unique(Z0, dim=0).shape[0] == 6
    with pytest.raises(ShapeError, match="M=21"):
        initial_locations(X, 21)


# -- patches ------------------------------------------------------------------------------------------------------
def kernel_patches(X):
    return Convolutional(RBF(None), tuple(X.shape[1:]), 2).patches(X)


def test_initial_patches_from_data_are_distinct_patches_of_the_images():
    X = torch.rand(6, 1, 5, 5, generator=gen(), dtype=DT)
    Z = initial_patches(X, 10, kernel_patches, gen(1))
    every = kernel_patches(X).reshape(-1, 4)
    assert Z.shape == (10, 4) and torch.unique(Z, dim=0).shape[0] == 10
    assert all(bool((every == z).all(1).any()) for z in Z)


def test_initial_patches_count_the_background_once_and_pad_with_noisy_copies():
    X = torch.zeros(4, 1, 4, 4, dtype=DT)
    X[:, :, 1, 1] = 1.0  # few distinct 2×2 patches: zeros and the four placements of the dot
    distinct = torch.unique(kernel_patches(X).reshape(-1, 4), dim=0)
    assert distinct.shape[0] == 5
    Z = initial_patches(X, 12, kernel_patches, gen(2))
    assert Z.shape == (12, 4)
    first = Z[:5]
    assert torch.equal(torch.unique(first, dim=0), distinct)  # every distinct patch, zeros counted once
    extra = Z[5:]
    nearest = torch.cdist(extra, distinct).min(1).values
    assert bool((nearest > 0).all()) and bool((nearest < 0.2).all())  # copies with a little noise


def test_initial_patches_noise_init_and_refusals():
    X = 0.5 + 0.25 * torch.rand(3, 1, 4, 4, generator=gen(), dtype=DT)
    Z = initial_patches(X, 7, kernel_patches, gen(1), init="noise")
    assert Z.shape == (7, 4) and float(Z.min()) >= float(X.min()) and float(Z.max()) <= float(X.max())
    with pytest.raises(ShapeError, match="'grid'"):
        initial_patches(X, 7, kernel_patches, gen(1), init="grid")
    with pytest.raises(ShapeError, match="M=0"):
        initial_patches(X, 0, kernel_patches)


def test_inducing_patches_shapes_and_refusals():
    p = InducingPatches(torch.rand(6, 12, generator=gen(), dtype=DT), patch_shape=(3, 2, 2))
    assert p.num_patches == p.num_inducing == 6 and p.block_sizes == (6,) and p.patch_shape == (3, 2, 2)
    assert InducingPatches(torch.rand(6, 4, dtype=DT)).patch_shape == (1, 1, 4)
    with pytest.raises(ShapeError, match="E=12"):
        InducingPatches(torch.rand(6, 12, dtype=DT), patch_shape=(1, 3, 3))


def test_shared_inducing_patches_have_one_block_per_output():
    s = SharedInducingPatches(torch.rand(5, 4, generator=gen(), dtype=DT), num_outputs=3)
    assert s.num_patches == 5 and s.num_inducing == len(s) == 15
    assert s.block_sizes == (5, 5, 5) and block_sizes(s) == (5, 5, 5)
    with pytest.raises(ShapeError, match="num_outputs"):
        SharedInducingPatches(torch.rand(5, 4, dtype=DT), num_outputs=0)


# -- blocks -------------------------------------------------------------------------------------------------------
def test_inducing_blocks_concatenate_their_blocks_and_freeze_together():
    points = InducingPoints(torch.rand(4, 16, generator=gen(), dtype=DT))
    shared = SharedInducingPatches(torch.rand(3, 4, generator=gen(1), dtype=DT), num_outputs=2)
    blocks = InducingBlocks([points, shared])
    assert blocks.num_inducing == 4 + 6 and block_sizes(blocks) == (4, 3, 3)
    assert not blocks.frozen
    blocks.frozen = True
    assert blocks.frozen and points.frozen and shared.frozen
    blocks.frozen = False
    assert not points.frozen and not shared.frozen
    assert len(list(blocks.parameters())) == 2  # the blocks' locations are the module's parameters
    with pytest.raises(ShapeError, match="at least one block"):
        InducingBlocks([])
