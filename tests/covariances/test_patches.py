"""Fast patch covariances against brute-force sums over explicitly extracted patches (van der Wilk, Rasmussen & Hensman
2017 eq. 15, 19, 23).

Every variant's K_uf and k_ff = diag K_ff agree with explicit sums to 1e-10 in float64, with the default chunk
and tile sizes and with tiny ones (so chunk and tile edges are crossed), and so do their gradients. K_uu is
block diagonal for the summed and multi-channel kernels, symmetric and PSD.
"""
import pytest
import torch

from invlab.covariances import Kff_diag, Kuf, Kuu, orbits, patch_kernels, patch_terms
from invlab.covariances import patches as fast
from invlab.covariances.patches import Kuu_blocks, PatchCross, PatchGramQuad, _Profile
from invlab.inducing import InducingBlocks, InducingPatches, InducingPoints, SharedInducingPatches
from invlab.kernels import RBF, Matern52, Polynomial
from invlab.kernels.combinators import ChannelAdditive, Sum
from invlab.kernels.convolutional import Convolutional, MultiChannelConvolutional, WeightedConvolutional

DT = torch.float64


def gen(seed):
    return torch.Generator().manual_seed(seed)


def explicit_terms(kernel, X):
    """Per image: (group, weight, patch vector) for every term of f(x) = Σ w g_group(patch), by slicing."""
    h, w = kernel.patch_size
    sh, sw = kernel.stride
    H, W = X.shape[-2:]
    pos = [(i, j) for i in range(0, H - h + 1, sh) for j in range(0, W - w + 1, sw)]
    C = X.shape[1]
    out = []
    for n in range(X.shape[0]):
        if isinstance(kernel, MultiChannelConvolutional):
            wt = kernel.patch_weights().detach()
            out.append([(c, wt[c, p], X[n, c, i:i + h, j:j + w].reshape(-1)) for c in range(C)
                        for p, (i, j) in enumerate(pos)])
            continue
        wt = kernel.orbit_weights(X, kernel.num_patches)[n].detach()
        if kernel.colour_patches:
            out.append([(0, wt[p], X[n, :, i:i + h, j:j + w].reshape(-1)) for p, (i, j) in enumerate(pos)])
        else:
            out.append([(0, wt[c * len(pos) + p], X[n, c, i:i + h, j:j + w].reshape(-1)) for c in range(C)
                        for p, (i, j) in enumerate(pos)])
    return out


def stacked(terms):
    """(groups [T], weights [T], vectors [T, E]) of one image's terms."""
    return (torch.tensor([g for g, _, _ in terms], device=terms[0][2].device), torch.stack([w for _, w, _ in terms]),
            torch.stack([v for _, _, v in terms]))


def brute_kuf(kernel, Z, X, groups=1):
    """[groups·M, N]: block g holds Σ_{terms of group g} w k_g(z_m, patch)."""
    out = torch.zeros(groups, Z.shape[0], X.shape[0], dtype=X.dtype, device=X.device)
    for n, tn in enumerate(explicit_terms(kernel, X)):
        g, w, V = stacked(tn)
        for c in range(groups):
            out[c, :, n] = kernel.base.K(Z, V[g == c]) @ w[g == c]
    return out.reshape(groups * Z.shape[0], X.shape[0])


def brute_kff_diag(kernel, X):
    """Σ_a Σ_b w_a w_b k_g(patch_a, patch_b) over pairs of terms in the same group (independent g_c)."""
    out = torch.zeros(X.shape[0], dtype=X.dtype, device=X.device)
    for n, tn in enumerate(explicit_terms(kernel, X)):
        g, w, V = stacked(tn)
        out[n] = (w[:, None] * w[None] * (g[:, None] == g[None]) * kernel.base.K(V, V)).sum()
    return out


def weighted(kernel, seed=1):
    with torch.no_grad():
        kernel.weights.assign(torch.randn(kernel.weights.shape, generator=gen(seed), dtype=DT))
    return kernel


CASES = {  # name → (kernel, number of inducing-output blocks); `setup` places them
    "invariant": lambda: (Convolutional(RBF(None, 0.8, 1.4), (1, 7, 6), 3, weight=0.6), 1),
    "weighted": lambda: (weighted(WeightedConvolutional(RBF(None, 0.9), (1, 7, 6), 3)), 1),
    "weighted strided": lambda: (weighted(WeightedConvolutional(RBF(None, 1.1), (1, 7, 6), (2, 3), stride=(2, 1))), 1),
    "weighted matern": lambda: (weighted(WeightedConvolutional(Matern52(None, 1.3, 0.8), (1, 7, 6), 2)), 1),
    "weighted ard": lambda: (weighted(WeightedConvolutional(RBF(4, 1.0, ard=True), (1, 7, 6), 2)), 1),
    "grey on colour": lambda: (weighted(WeightedConvolutional(RBF(None, 0.9), (3, 7, 6), 2, colour_patches=False)), 1),
    "colour-patch": lambda: (weighted(WeightedConvolutional(RBF(None, 1.2), (3, 7, 6), 2)), 1),
    "additive": lambda: (weighted(WeightedConvolutional(
        ChannelAdditive([RBF(None, 0.6 + 0.4 * c, 0.5 + c) for c in range(3)]), (3, 7, 6), 2)), 1),
    "multi-channel": lambda: (weighted(MultiChannelConvolutional(RBF(None, 0.8, 1.2), (3, 7, 6), 2)), 3),
    "multi-channel matern": lambda: (weighted(MultiChannelConvolutional(Matern52(None, 0.9), (2, 7, 6), (2, 3),
                                                                        stride=2)), 2),
}


def setup(place, name, M=5, N=4):
    kernel, groups = CASES[name]()
    if getattr(kernel.base, "ard", False):
        kernel.base.lengthscale.assign(torch.linspace(0.5, 1.5, kernel.patch_dim, dtype=DT))
    Z = torch.rand(M, kernel.patch_dim, generator=gen(2), dtype=DT)
    inducing = SharedInducingPatches(Z, groups) if groups > 1 else InducingPatches(Z)
    X = torch.rand(N, kernel.image_shape[0], 7, 6, generator=gen(3), dtype=DT)
    return place(kernel), place(inducing), place(X), groups


@pytest.fixture(params=["default", "tiny"])
def chunking(request, monkeypatch, device):
    if request.param == "tiny":  # every chunk one image, tiles of 4 patches (the last one shorter)
        monkeypatch.setitem(patch_kernels.CHUNK_ELEMENTS, device.type, 1)
        monkeypatch.setattr(patch_kernels, "GRAM_TILE", 4)
    return request.param


@pytest.mark.parametrize("name", list(CASES))
def test_fast_covariances_equal_brute_force_sums(name, chunking, place, tol, assert_close):
    kernel, inducing, X, groups = setup(place, name)
    with torch.no_grad():
        assert_close(Kuf(inducing, kernel, X), brute_kuf(kernel, inducing.Z, X, groups), tol.f64(atol=1e-10, rtol=0))
        assert_close(Kff_diag(inducing, kernel, X), brute_kff_diag(kernel, X), tol.f64(atol=1e-10, rtol=0))


@pytest.mark.parametrize("name", list(CASES))
def test_fast_gradients_equal_autograd_through_the_definition(name, place, tol, assert_close):
    kernel, inducing, X, groups = setup(place, name)
    X.requires_grad_()
    params = [p for p in kernel.parameters()] + [inducing.Z, X]
    Gu = place(torch.randn(groups * inducing.num_patches, X.shape[0], generator=gen(4), dtype=DT))
    Gf = place(torch.randn(X.shape[0], generator=gen(5), dtype=DT))

    def grads(kuf, kff):
        return torch.autograd.grad((kuf * Gu).sum() + (kff * Gf).sum(), params)

    fast_grads = grads(Kuf(inducing, kernel, X), Kff_diag(inducing, kernel, X))
    cross = fast.channel_cross if isinstance(kernel, MultiChannelConvolutional) else orbits.orbit_cross
    ref = (cross(kernel, inducing.Z, X), kernel.K_diag(X))  # the generic orbit path: autograd end to end
    for g, r in zip(fast_grads, grads(*ref)):
        assert_close(g, r, tol.f64(atol=1e-9, rtol=1e-9))


@pytest.mark.float64_only(reason="gradcheck's finite differences need float64")
@pytest.mark.parametrize("rbf", [True, False])
def test_autograd_functions_pass_gradcheck(rbf, monkeypatch, place):
    monkeypatch.setattr(patch_kernels, "GRAM_TILE", 3)
    k = place(RBF(None) if rbf else Matern52(None))
    Z = place(torch.rand(3, 4, generator=gen(6), dtype=DT)).requires_grad_()
    U = place(torch.rand(2, 5, 4, generator=gen(7), dtype=DT)).requires_grad_()
    w = place(torch.randn(2, 5, generator=gen(8), dtype=DT)).requires_grad_()
    gamma = place(torch.tensor(1.7, dtype=DT)).requires_grad_()
    prof = _Profile(k)
    assert torch.autograd.gradcheck(lambda *a: PatchCross.apply(*a, prof, 7), (Z, U, w, gamma))
    assert torch.autograd.gradcheck(lambda *a: PatchGramQuad.apply(*a, prof, 30, 3), (U, w, gamma))


def test_non_stationary_patch_kernel_falls_back_to_the_generic_path(place, tol, assert_close):
    kernel = place(WeightedConvolutional(Polynomial(2, 0.5), (1, 7, 6), 3))
    inducing = place(InducingPatches(torch.rand(4, 9, generator=gen(9), dtype=DT)))
    X = place(torch.rand(3, 1, 7, 6, generator=gen(10), dtype=DT))
    with torch.no_grad():
        assert_close(Kuf(inducing, kernel, X), brute_kuf(kernel, inducing.Z, X), tol.f64(atol=1e-10))
        assert_close(Kff_diag(inducing, kernel, X), brute_kff_diag(kernel, X), tol.f64(atol=1e-10))
        assert_close(Kuf(inducing, kernel, X), orbits._kuf_interdomain(inducing, kernel, X), tol.f64(atol=1e-12))


def assert_psd(K, tol, assert_close):
    assert_close(K, K.T, tol.f64(atol=1e-12))
    assert torch.linalg.eigvalsh(K).min() > -tol.f64(atol=1e-10).atol


def test_multi_channel_kuu_is_block_diagonal_with_shared_blocks(place, tol, assert_close):
    kernel, inducing, X, C = setup(place, "multi-channel")
    M = inducing.num_patches
    with torch.no_grad():
        K = Kuu(inducing, kernel)
        Kg = kernel.base.K(inducing.Z)
        assert K.shape == (C * M, C * M) and inducing.block_sizes == (M,) * C
        for a in range(C):
            for b in range(C):
                block = K[a * M:(a + 1) * M, b * M:(b + 1) * M]
                assert torch.equal(block, Kg) if a == b else torch.count_nonzero(block) == 0
        assert_psd(K, tol, assert_close)
        blocks = Kuu_blocks(inducing, kernel)
        assert len(blocks) == C and all(B is blocks[0] for B in blocks)  # factored once by the model


def test_sum_kernel_blocks_stack_rbf_above_patches(place, tol, assert_close):
    conv = place(weighted(WeightedConvolutional(RBF(None, 0.9), (1, 7, 6), 3)))
    rbf = place(RBF(42, 2.5, 0.4))
    kernel = Sum([rbf, conv])
    X = place(torch.rand(4, 1, 7, 6, generator=gen(11), dtype=DT))
    images = place(InducingPoints(torch.rand(3, 1, 7, 6, generator=gen(12), dtype=DT)))
    patches = place(InducingPatches(torch.rand(5, 9, generator=gen(13), dtype=DT)))
    inducing = InducingBlocks([images, patches])
    assert inducing.num_inducing == 8 and inducing.block_sizes == (3, 5)
    with torch.no_grad():
        K = Kuu(inducing, kernel)
        assert_close(K[:3, :3], rbf.K(images.Z), tol.f64())
        assert_close(K[3:, 3:], conv.base.K(patches.Z), tol.f64())
        assert torch.count_nonzero(K[:3, 3:]) == 0 and torch.count_nonzero(K[3:, :3]) == 0  # independent in the prior
        assert_psd(K, tol, assert_close)
        Kux = Kuf(inducing, kernel, X)
        assert_close(Kux[:3], rbf.K(images.Z, X), tol.f64(atol=1e-12))
        assert_close(Kux[3:], brute_kuf(conv, patches.Z, X), tol.f64(atol=1e-10))
        assert_close(Kff_diag(inducing, kernel, X), rbf.K_diag(X) + brute_kff_diag(conv, X), tol.f64(atol=1e-10))
        assert_close(Kff_diag(inducing, kernel, X), kernel.K(X).diagonal(), tol.f64(atol=1e-10))


def test_mismatched_pairs_are_refused_with_a_message():  # refused before any arithmetic: one device suffices
    multi = MultiChannelConvolutional(RBF(None), (3, 7, 6), 2)
    wtd = WeightedConvolutional(RBF(None), (1, 7, 6), 2)
    X = torch.rand(2, 3, 7, 6, dtype=DT)
    with pytest.raises(NotImplementedError, match="SharedInducingPatches"):
        Kuf(InducingPatches(torch.rand(3, 4)), multi, X)
    with pytest.raises(NotImplementedError, match="MultiChannelConvolutional"):
        Kuu(SharedInducingPatches(torch.rand(3, 4), 3), wtd)
    with pytest.raises(NotImplementedError, match="pair one to one"):
        Kuu(InducingBlocks([InducingPatches(torch.rand(3, 4))]), Sum([wtd, RBF(42)]))


# -- identical patches counted once (exact: the sums only change order) -----------------------------------------------
def sparse_images(C, N=5, seed=14):
    """Mostly blank binary images: many identical patches in each (as in `rectangles`)."""
    return (torch.rand(N, C, 7, 6, generator=gen(seed), dtype=DT) > 0.85).to(DT)


@pytest.fixture
def deduplicating(monkeypatch, device):
    """Identical patches grouped on the test device too (by default only on the CPU, where counting them is free)."""
    monkeypatch.setattr(patch_terms, "DEDUPLICATE_DEVICES", {"cpu", device.type})


def test_distinct_patches_rebuild_every_patch_and_keep_the_weights(deduplicating, place, tol, assert_close):
    U = place(torch.tensor([[[0., 1.], [2., 3.], [0., 1.], [0., 1.]],
                            [[5., 5.], [5., 5.], [5., 5.], [4., 4.]]], dtype=DT))  # [B = 2, P = 4, E = 2]
    d = fast.distinct_patches(U)
    assert d is not None and d.V.shape == (2, 2, 2)
    assert torch.equal(torch.stack([d.V[b, d.inverse[b]] for b in range(2)]), U)
    w = place(torch.tensor([[1., 2., 3., 4.], [0.5, 0.25, 0.125, 1.]], dtype=DT))
    W = d.weights(w)
    assert_close(W.sum(1), w.sum(1), tol.f64())
    assert W[0, d.inverse[0, 0]] == 8.0 and W[1, d.inverse[1, 3]] == 1.0
    all_distinct = place(torch.rand(2, 8, 3, generator=gen(15), dtype=DT))
    assert fast.distinct_patches(all_distinct) is None  # no gain


@pytest.mark.parametrize("name", list(CASES))
def test_fast_covariances_on_images_with_repeated_patches_equal_brute_force(name, chunking, monkeypatch, deduplicating,
                                                                             place, tol, assert_close):
    monkeypatch.setattr(patch_terms, "DEDUPLICATE_BELOW", 1.0)  # group whatever the gain
    kernel, inducing, _, groups = setup(place, name)
    X = place(sparse_images(kernel.image_shape[0]))
    U = kernel.channel_patches(X).flatten(0, 1) if groups > 1 else kernel.patches(X)
    assert fast.distinct_patches(U) is not None  # the grouped path is the one under test
    with torch.no_grad():
        assert_close(Kuf(inducing, kernel, X), brute_kuf(kernel, inducing.Z, X, groups), tol.f64(atol=1e-10, rtol=0))
        assert_close(Kff_diag(inducing, kernel, X), brute_kff_diag(kernel, X), tol.f64(atol=1e-10, rtol=0))


@pytest.mark.parametrize("name", ["invariant", "weighted", "weighted matern", "weighted ard", "additive",
                                  "multi-channel"])
def test_grouped_patches_give_the_same_gradients(name, monkeypatch, deduplicating, place, tol, assert_close):
    monkeypatch.setattr(patch_terms, "DEDUPLICATE_BELOW", 1.0)
    kernel, inducing, _, groups = setup(place, name)
    X = place(sparse_images(kernel.image_shape[0]))
    params = [p for p in kernel.parameters()] + [inducing.Z]
    Gu = place(torch.randn(groups * inducing.num_patches, X.shape[0], generator=gen(4), dtype=DT))
    Gf = place(torch.randn(X.shape[0], generator=gen(5), dtype=DT))

    def grads():
        loss = (Kuf(inducing, kernel, X) * Gu).sum() + (Kff_diag(inducing, kernel, X) * Gf).sum()
        return torch.autograd.grad(loss, params)

    grouped = grads()
    monkeypatch.setattr(patch_terms, "DEDUPLICATE_DEVICES", set())
    for g, r in zip(grouped, grads()):
        assert_close(g, r, tol.f64(atol=1e-10, rtol=1e-10))


def test_patches_of_the_last_images_are_not_reused_for_other_images(deduplicating, place, tol, assert_close):
    kernel, inducing, _, _ = setup(place, "weighted")
    X = place(sparse_images(1))
    with torch.no_grad():
        first = Kff_diag(inducing, kernel, X)
        assert torch.equal(Kff_diag(inducing, kernel, X), first)  # the same images: the same answer
        X[0].fill_(1.0)  # changed in place: seen through the version counter
        assert_close(Kff_diag(inducing, kernel, X), brute_kff_diag(kernel, X), tol.f64(atol=1e-10))
        Y = place(sparse_images(1, seed=16))
        assert_close(Kuf(inducing, kernel, Y), brute_kuf(kernel, inducing.Z, Y), tol.f64(atol=1e-10))
