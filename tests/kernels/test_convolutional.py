"""Convolutional kernels against their definitions (van der Wilk, Rasmussen & Hensman 2017 eq. 13–14, 17–18, 22, 24–25)
on explicit patches."""
import pytest
import torch

from invlab.errors import ShapeError
from invlab.kernels import RBF, Matern52
from invlab.kernels.combinators import ChannelAdditive, Sum
from invlab.kernels.convolutional import (
    Convolutional,
    MultiChannelConvolutional,
    WeightedConvolutional,
    extract_patches,
)


def explicit_patches(X, h, w, sh=1, sw=1):
    """[N, C, H, W] → [N, P, C, h, w] by slicing, positions row-major (independent of `unfold`)."""
    H, W = X.shape[-2:]
    return torch.stack([X[:, :, i:i + h, j:j + w] for i in range(0, H - h + 1, sh) for j in range(0, W - w + 1, sw)], 1)


def terms(kernel, X):
    """Every (group, weight, patch vector) that f(x) sums, per image: the definition of each variant."""
    h, w = kernel.patch_size
    P = explicit_patches(X, h, w, *kernel.stride)  # [N, P', C, h, w]
    N, Pp, C = P.shape[:3]
    if isinstance(kernel, MultiChannelConvolutional):
        Wt = kernel.patch_weights().detach()
        return [[(c, Wt[c, p], P[n, p, c].reshape(-1)) for c in range(C) for p in range(Pp)] for n in range(N)]
    wts = kernel.orbit_weights(X, kernel.num_patches)[0].detach()
    if kernel.colour_patches:
        return [[(0, wts[p], P[n, p].reshape(-1)) for p in range(Pp)] for n in range(N)]
    return [[(0, wts[c * Pp + p], P[n, p, c].reshape(-1)) for c in range(C) for p in range(Pp)] for n in range(N)]


def brute_K(kernel, X, X2):
    A, B = terms(kernel, X), terms(kernel, X2)
    out = torch.zeros(len(A), len(B), dtype=X.dtype, device=X.device)
    for i, ta in enumerate(A):
        for j, tb in enumerate(B):
            Va, Vb = torch.stack([v for _, _, v in ta]), torch.stack([v for _, _, v in tb])
            same = torch.tensor([[ga == gb for gb, _, _ in tb] for ga, _, _ in ta], dtype=X.dtype, device=X.device)
            wa, wb = torch.stack([w for _, w, _ in ta]), torch.stack([w for _, w, _ in tb])
            out[i, j] = (wa[:, None] * wb[None] * same * kernel.base.K(Va, Vb)).sum()
    return out


def images(N, C=1, H=6, W=5, seed=0):
    """Random images, drawn in float64 on the CPU (the tests place them on their device and dtype)."""
    return torch.rand(N, C, H, W, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def random_weights(kernel, seed=1):
    with torch.no_grad():
        kernel.weights.assign(torch.randn(kernel.weights.shape, generator=torch.Generator().manual_seed(seed),
                                          dtype=torch.float64))
    return kernel


VARIANTS = {
    "invariant": lambda: Convolutional(RBF(None, 0.8), (1, 6, 5), 2, weight=0.7),
    "weighted": lambda: random_weights(WeightedConvolutional(RBF(None, 0.9, 1.3), (1, 6, 5), (3, 2), stride=(1, 2))),
    "grey on colour": lambda: random_weights(WeightedConvolutional(RBF(None, 0.8), (3, 6, 5), 2, colour_patches=False)),
    "colour-patch": lambda: random_weights(WeightedConvolutional(Matern52(None, 1.2), (3, 6, 5), 2)),
    "additive": lambda: random_weights(WeightedConvolutional(
        ChannelAdditive([RBF(None, 0.5 + 0.3 * c, 1.0 + c) for c in range(3)]), (3, 6, 5), 2)),
    "multi-channel": lambda: random_weights(MultiChannelConvolutional(RBF(None, 0.7), (3, 6, 5), 2, stride=(2, 1))),
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_kernel_matches_its_definition_on_explicit_patches(name, place, tol, assert_close):
    kernel = place(VARIANTS[name]())
    C = kernel.image_shape[0]
    X, X2 = place(images(3, C, seed=2)), place(images(2, C, seed=3))
    with torch.no_grad():
        assert_close(kernel.K(X, X2), brute_K(kernel, X, X2), tol.f64(atol=1e-10, rtol=0))
        K = kernel.K(X)
        assert_close(kernel.K_diag(X), K.diagonal(), tol.f64(atol=1e-10, rtol=0))
        assert_close(K, K.T, tol.f64(atol=1e-12))
        assert torch.linalg.eigvalsh(K).min() > -tol.f64(atol=1e-10).atol


def test_weighted_with_all_weights_one_equals_translation_invariant(place, tol, assert_close):
    for shape, colour in (((1, 6, 5), True), ((3, 6, 5), True), ((3, 6, 5), False)):
        inv = place(Convolutional(RBF(None, 0.8, 1.5), shape, 2, colour_patches=colour))
        wtd = place(WeightedConvolutional(RBF(None, 0.8, 1.5), shape, 2, colour_patches=colour))
        with torch.no_grad():
            wtd.weights.assign(place(torch.ones(wtd.num_patches, dtype=torch.float64)))
            X, X2 = place(images(4, shape[0], seed=4)), place(images(3, shape[0], seed=5))
            assert_close(wtd.K(X, X2), inv.K(X, X2), tol.f64(atol=1e-12, rtol=0))
            assert_close(wtd.K_diag(X), inv.K_diag(X), tol.f64(atol=1e-12, rtol=0))


def test_translation_invariant_kernel_ignores_where_the_object_is(place, tol, assert_close):
    X = torch.zeros(2, 1, 9, 9, dtype=torch.float64)
    X[0, 0, 2:4, 2:5] = torch.tensor([[1.0, 0.5, 0.2], [0.3, 0.9, 0.4]])
    X[1, 0, 5:7, 3:6] = X[0, 0, 2:4, 2:5]  # the same object elsewhere, away from the border
    k = place(Convolutional(RBF(None, 0.6), (1, 9, 9), 3))
    with torch.no_grad():
        K = k.K(place(X))
    assert_close(K[0, 0], K[1, 1], tol.f64(atol=1e-12))
    assert_close(K[0, 1], K[0, 0], tol.f64(atol=1e-12))


def test_patch_layout_and_weight_images(place):
    X = place(images(2, 3, seed=6))
    k = WeightedConvolutional(RBF(None), (3, 6, 5), (2, 3), stride=(2, 1), colour_patches=False)
    ref = explicit_patches(X, 2, 3, 2, 1)  # [N, P', C, h, w]
    assert torch.equal(extract_patches(X, (2, 3), (2, 1)), ref.reshape(2, ref.shape[1], -1))
    assert torch.equal(k.patches(X), ref.permute(0, 2, 1, 3, 4).reshape(2, -1, 6))  # channel-major
    assert k.weight_shape == (3, 3, 3) and k.num_patches == 27 and k.patch_dim == 6
    assert MultiChannelConvolutional(RBF(None), (3, 6, 5), 2).weight_shape == (3, 5, 4)
    with pytest.raises(ShapeError, match="larger than"):
        Convolutional(RBF(None), (1, 4, 4), 5)
    with pytest.raises(ShapeError, match=r"images \[N, 1, 6, 5\]"):
        place(Convolutional(RBF(None), (1, 6, 5), 2)).K(place(torch.zeros(2, 1, 5, 5)))


def test_multi_channel_with_one_channel_is_the_weighted_kernel(place, tol, assert_close):
    multi = place(random_weights(MultiChannelConvolutional(RBF(None, 0.9), (1, 6, 5), 2)))
    wtd = place(WeightedConvolutional(RBF(None, 0.9), (1, 6, 5), 2))
    with torch.no_grad():
        wtd.weights.assign(multi.weights()[0])
        X = place(images(3, seed=7))
        assert_close(multi.K(X), wtd.K(X), tol.f64(atol=1e-12))


def test_sum_kernel_adds_its_parts(place, tol, assert_close):
    conv = place(VARIANTS["weighted"]())
    rbf = place(RBF(30, 2.0, 0.3))
    k = Sum([rbf, conv])
    X = place(images(3, seed=8))
    with torch.no_grad():
        assert_close(k.K(X), rbf.K(X) + conv.K(X), tol.f64(atol=1e-12))
        assert_close(k.K_diag(X), rbf.K_diag(X) + conv.K_diag(X), tol.f64(atol=1e-12))
