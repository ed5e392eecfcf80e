"""The covariance contract: every (inducing variable, kernel) pair registered with `Kuu`, `Kuf`, `Kff_diag` and
`Kuu_blocks` agrees with brute force computed here — explicit loops over the patches or orbit elements with the
base kernel k_g (`tests.helpers.orbit_sums`) — in float64 to 1e-10, and so do its gradients.

The registrations are read from the dispatchers themselves: a pair registered without a case in `SETUPS` that
resolves to it fails `test_every_registered_pair_has_a_contract_case` ("pair X has no contract case").

Brute force, by the kind of inducing variable:
- inducing points u = f(Z): K_uu[i, j] = k(z_i, z_j), K_uf[i, n] = k(z_i, x_n), k_ff[n] = k(x_n, x_n), pair by pair;
- inter-domain points u_c = g_c(Z) with an orbit kernel: K_uu = blockdiag_c k_g(Z, Z), K_uf[c·M + m, n] =
  Σ_{a in group c} w_a k_g(z_m, x_n,a), k_ff[n] = Σ_ab [c(a) = c(b)] w_a w_b k_g(x_n,a, x_n,b);
- blocks with a `Sum` kernel: K_uu block diagonal over the (block, part) pairs, K_uf stacked, k_ff summed.
Sampled orbits (invariant kernels) return per-sample K_uf [M, N, S]; with every element of a finite orbit drawn its
sample mean is the exact K_uf, and for given samples each entry and the pair estimator of k_ff are checked one by one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pytest
import torch

import invlab.covariances as cov
from invlab.covariances import Kff_diag, Kuf, Kuu
from invlab.covariances.invariant import OrbitSample
from invlab.inducing import (
    InducingBlocks,
    InducingPatches,
    InducingPoints,
    InterDomainPoints,
    SharedInducingPatches,
    block_sizes,
)
from invlab.kernels import RBF, ArcCosine, Linear, Matern52, Polynomial
from invlab.kernels.combinators import ChannelAdditive, Sum
from invlab.kernels.convolutional import Convolutional, MultiChannelConvolutional, WeightedConvolutional
from invlab.kernels.gram import NNGPKernel, ReluGram
from invlab.kernels.invariant import InvariantKernel
from invlab.kernels.orbit import OrbitKernel
from invlab.transforms import FlipOrbit, PermutationOrbit, Rot90Orbit, rotation_only
from tests.helpers.orbit_sums import brute_cross, brute_K, brute_kff, num_groups

try:  # the diagonal blocks of K_uu (kept with the patch covariances today)
    from invlab.covariances import Kuu_blocks
except ImportError:
    from invlab.covariances.patches import Kuu_blocks

DT = torch.float64
DISPATCHERS = {"Kuu": Kuu, "Kuf": Kuf, "Kff_diag": Kff_diag, "Kuu_blocks": Kuu_blocks}


def gen(seed):
    return torch.Generator().manual_seed(seed)


def images(N, C, H, W, seed=0, blank=False):
    X = torch.rand(N, C, H, W, generator=gen(seed), dtype=DT)
    if blank:  # mostly background: many identical patches (the engine then sums distinct patches only)
        X[:, :, :, W // 2:] = 0.0
        X[:, :, H // 2:, :] = 0.0
    return X


def weighted(kernel, seed=5):
    with torch.no_grad():
        kernel.weights.assign(torch.randn(kernel.weights.shape, generator=gen(seed), dtype=DT))
    return kernel


def patches(M, E, seed=1):
    return torch.rand(M, E, generator=gen(seed), dtype=DT)


@dataclass
class Setup:
    inducing: torch.nn.Module
    kernel: torch.nn.Module
    X: torch.Tensor
    refused: bool = False  # the pair is registered to refuse with a message


SETUPS: dict[str, Callable[[], Setup]] = {
    # inducing points with plain kernels (u = f(Z))
    "points_rbf": lambda: Setup(InducingPoints(patches(4, 3)), RBF(3, 0.7, 1.2), patches(5, 3, 2)),
    "points_matern_ard": lambda: Setup(InducingPoints(patches(4, 3)), Matern52(3, 0.9, ard=True), patches(5, 3, 2)),
    "points_polynomial": lambda: Setup(InducingPoints(patches(4, 3)), Polynomial(2, 0.5), patches(5, 3, 2)),
    "points_arccos": lambda: Setup(InducingPoints(patches(4, 3)), ArcCosine(1, 0.8), patches(5, 3, 2)),
    "points_nngp": lambda: Setup(InducingPoints(patches(4, 3)), NNGPKernel(3, [ReluGram(1.1)]), patches(5, 3, 2)),
    "points_sum": lambda: Setup(InducingPoints(patches(4, 3)), Sum([RBF(3, 0.8), Linear(0.4)]), patches(5, 3, 2)),
    "points_on_images": lambda: Setup(InducingPoints(patches(4, 16)), RBF(16, 1.5), images(3, 1, 4, 4)),
    # inter-domain points with the generic orbit path
    "interdomain_convolutional": lambda: Setup(InterDomainPoints(patches(4, 4)),
                                               Convolutional(RBF(None, 0.7, 1.3), (1, 4, 4), 2, weight=0.4),
                                               images(3, 1, 4, 4)),
    "interdomain_weighted": lambda: Setup(InterDomainPoints(patches(4, 4)),
                                          weighted(WeightedConvolutional(Matern52(None, 0.8), (1, 4, 4), 2)),
                                          images(3, 1, 4, 4)),
    # inter-domain points with invariant kernels (sampled orbits; S = P draws the whole orbit)
    "invariant_rot90": lambda: Setup(InterDomainPoints(patches(4, 16)),
                                     InvariantKernel(RBF(16, 1.4, 1.1), Rot90Orbit(), 4), images(3, 1, 4, 4)),
    "invariant_flips_ard": lambda: Setup(InterDomainPoints(patches(4, 16)),
                                         InvariantKernel(RBF(16, 1.2, ard=True), FlipOrbit("both"), 4),
                                         images(3, 1, 4, 4)),
    "invariant_permutations_arccos": lambda: Setup(InterDomainPoints(patches(4, 3)),
                                                   InvariantKernel(ArcCosine(1, 0.9), PermutationOrbit(3), 6),
                                                   patches(3, 3, 2)),
    "invariant_rotation_density": lambda: Setup(InterDomainPoints(patches(4, 16)),
                                                InvariantKernel(Matern52(16, 1.5), rotation_only(45.0), 3),
                                                images(3, 1, 4, 4)),
    # inducing patches with convolutional kernels (the conv trick)
    "patches_convolutional": lambda: Setup(InducingPatches(patches(4, 4)),
                                           Convolutional(RBF(None, 0.7, 1.3), (1, 4, 4), 2, weight=0.4),
                                           images(3, 1, 4, 4)),
    "patches_weighted_matern_strided": lambda: Setup(
        InducingPatches(patches(4, 6)), weighted(WeightedConvolutional(Matern52(None, 0.8, 1.4), (1, 5, 4), (3, 2),
                                                                       stride=(2, 1))), images(3, 1, 5, 4)),
    "patches_weighted_ard": lambda: Setup(InducingPatches(patches(4, 4)),
                                          weighted(WeightedConvolutional(RBF(4, 0.9, ard=True), (1, 4, 4), 2)),
                                          images(3, 1, 4, 4)),
    "patches_colour": lambda: Setup(InducingPatches(patches(4, 8)),
                                    weighted(WeightedConvolutional(RBF(None, 0.9), (2, 4, 4), 2)), images(3, 2, 4, 4)),
    "patches_grey_on_colour": lambda: Setup(
        InducingPatches(patches(4, 4)), weighted(WeightedConvolutional(RBF(None, 0.8), (2, 4, 4), 2,
                                                                       colour_patches=False)), images(3, 2, 4, 4)),
    "patches_colour_additive": lambda: Setup(
        InducingPatches(patches(4, 8)),
        weighted(WeightedConvolutional(ChannelAdditive([RBF(None, 0.5, 1.0), Matern52(None, 0.8, 2.0)]), (2, 4, 4), 2)),
        images(3, 2, 4, 4)),
    "patches_repeated": lambda: Setup(InducingPatches(patches(4, 4)),
                                      weighted(WeightedConvolutional(RBF(None, 0.7), (1, 6, 6), 2)),
                                      images(3, 1, 6, 6, blank=True)),
    "patches_polynomial_fallback": lambda: Setup(InducingPatches(patches(4, 4)),
                                                 Convolutional(Polynomial(2, 0.5), (1, 4, 4), 2, weight=0.3),
                                                 images(3, 1, 4, 4)),
    # shared inducing patches with the multi-channel kernel
    "shared_multi_channel": lambda: Setup(SharedInducingPatches(patches(4, 4), 2),
                                          weighted(MultiChannelConvolutional(RBF(None, 0.7, 1.2), (2, 4, 4), 2)),
                                          images(3, 2, 4, 4)),
    "shared_multi_channel_polynomial": lambda: Setup(
        SharedInducingPatches(patches(4, 4), 2), weighted(MultiChannelConvolutional(Polynomial(2, 0.4), (2, 4, 4), 2)),
        images(3, 2, 4, 4)),
    # blocks with sums
    "blocks_rbf_weighted": lambda: Setup(
        InducingBlocks([InducingPoints(patches(3, 16, 3)), InducingPatches(patches(4, 4))]),
        Sum([RBF(16, 1.5, 0.4), weighted(WeightedConvolutional(RBF(None, 0.6, 1.3), (1, 4, 4), 2))]),
        images(3, 1, 4, 4)),
    "blocks_rbf_multi_channel": lambda: Setup(
        InducingBlocks([InducingPoints(patches(3, 32, 3)), SharedInducingPatches(patches(4, 4), 2)]),
        Sum([RBF(32, 2.0, 0.5), weighted(MultiChannelConvolutional(RBF(None, 0.7), (2, 4, 4), 2))]),
        images(3, 2, 4, 4)),
    # pairs registered to refuse, with a message
    "refused_patches_multi_channel": lambda: Setup(InducingPatches(patches(4, 4)),
                                                   MultiChannelConvolutional(RBF(None, 0.7), (2, 4, 4), 2),
                                                   images(2, 2, 4, 4), refused=True),
    "refused_points_multi_channel": lambda: Setup(InterDomainPoints(patches(4, 4)),
                                                  MultiChannelConvolutional(RBF(None, 0.7), (2, 4, 4), 2),
                                                  images(2, 2, 4, 4), refused=True),
    "refused_shared_plain": lambda: Setup(SharedInducingPatches(patches(4, 4), 2), RBF(4, 0.7), patches(3, 4, 2),
                                          refused=True),
}

REFUSED = sorted(k for k in SETUPS if k.startswith("refused"))
COMPUTED = sorted(k for k in SETUPS if k not in REFUSED)


def setup(name, device=torch.device("cpu"), dtype=DT):
    s = SETUPS[name]()
    s.inducing, s.kernel = s.inducing.to(device=device, dtype=dtype), s.kernel.to(device=device, dtype=dtype)
    s.X = s.X.to(device=device, dtype=dtype)
    return s


# -- brute force -------------------------------------------------------------------------------------------------------
def pairwise(k, A, B):
    """k(a_i, b_j) one pair at a time: [len(A), len(B)]."""
    return torch.stack([torch.stack([k.K(a[None], b[None])[0, 0] for b in B]) for a in A])


def brute(inducing, kernel, X) -> dict:
    """K_uu, K_uf, k_ff and the blocks of K_uu, from their definitions."""
    if isinstance(inducing, InducingBlocks):
        parts = [brute(b, k, X) for b, k in zip(inducing.blocks, kernel.parts)]
        return {"Kuu": torch.block_diag(*[p["Kuu"] for p in parts]), "Kuf": torch.cat([p["Kuf"] for p in parts]),
                "Kff_diag": sum(p["Kff_diag"] for p in parts),
                "Kuu_blocks": [b for p in parts for b in p["Kuu_blocks"]]}
    if isinstance(inducing, InterDomainPoints) and isinstance(kernel, OrbitKernel):
        Kg = pairwise(kernel.base, inducing.Z, inducing.Z)
        G = num_groups(kernel)
        if sampled(kernel) and kernel.orbit_size is None:  # a density: no finite orbit to sum over
            return {"Kuu": Kg, "Kuf": None, "Kff_diag": None, "Kuu_blocks": [Kg]}
        return {"Kuu": torch.block_diag(*[Kg] * G), "Kuf": brute_cross(kernel, inducing.Z, X),
                "Kff_diag": brute_kff(kernel, X), "Kuu_blocks": [Kg] * G}
    Xf = X.reshape(X.shape[0], -1)
    K = pairwise(kernel, inducing.Z, inducing.Z)
    return {"Kuu": K, "Kuf": pairwise(kernel, inducing.Z, Xf),
            "Kff_diag": torch.stack([kernel.K(x[None], x[None])[0, 0] for x in Xf]), "Kuu_blocks": [K]}


def brute_Kff(kernel, X):
    """K_ff [N, N] by the double sum (orbit kernels) or pair by pair."""
    if isinstance(kernel, Sum):
        return sum(brute_Kff(k, X) for k in kernel.parts)
    if isinstance(kernel, OrbitKernel):
        return brute_K(kernel, X)
    Xf = X.reshape(X.shape[0], -1)
    return pairwise(kernel, Xf, Xf)


def sampled(kernel) -> bool:
    return isinstance(kernel, InvariantKernel)


def exact_orbit(kernel) -> bool:
    return sampled(kernel) and kernel.orbit_size is not None and kernel.num_samples >= kernel.orbit_size


# -- values ------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", COMPUTED)
def test_covariances_equal_brute_force_orbit_sums(name, device, dtype, tol, assert_close):
    s = setup(name, device, dtype)
    r = setup(name)
    ref = brute(r.inducing, r.kernel, r.X)  # float64 on the CPU
    with torch.no_grad():
        torch.manual_seed(0)
        out = {"Kuu": Kuu(s.inducing, s.kernel), "Kuf": Kuf(s.inducing, s.kernel, s.X),
               "Kff_diag": Kff_diag(s.inducing, s.kernel, s.X), "Kuu_blocks": list(Kuu_blocks(s.inducing, s.kernel))}
    scale = float(ref["Kuu"].abs().max())
    assert_close(out["Kuu"], ref["Kuu"], tol, scale=scale)
    assert_close(out["Kuu"], out["Kuu"].T, tol, scale=scale)
    assert len(out["Kuu_blocks"]) == len(ref["Kuu_blocks"])
    assert tuple(b.shape[0] for b in out["Kuu_blocks"]) == block_sizes(s.inducing)
    for a, b in zip(out["Kuu_blocks"], ref["Kuu_blocks"]):
        assert_close(a, b, tol, scale=scale)
    assert out["Kuu"].shape == (s.inducing.num_inducing,) * 2 and out["Kuf"].shape[0] == s.inducing.num_inducing
    if not sampled(s.kernel):
        assert_close(out["Kuf"], ref["Kuf"], tol, scale=scale)
        assert_close(out["Kff_diag"], ref["Kff_diag"], tol, scale=float(ref["Kff_diag"].abs().max()))
    else:
        assert out["Kuf"].shape == (s.inducing.num_inducing, s.X.shape[0], s.kernel.num_samples)
        if exact_orbit(s.kernel):  # every element drawn: the sample mean is the orbit average, k̂_f exact
            assert_close(out["Kuf"].mean(2), ref["Kuf"], tol, scale=scale)
            assert_close(out["Kff_diag"], ref["Kff_diag"], tol, scale=float(ref["Kff_diag"].abs().max()))
    for key in ("Kuu", "Kuf", "Kff_diag"):
        assert out[key].dtype == dtype and out[key].device.type == device.type
    if ref["Kuf"] is not None:  # the engine's (u, f(X)) are jointly Gaussian: [[K_uu, K_uf], [K_fu, K_ff]] is PSD
        K = out["Kuu"].detach().to("cpu", DT)
        Kx = (out["Kuf"].mean(2) if sampled(s.kernel) else out["Kuf"]).detach().to("cpu", DT)
        joint = torch.cat([torch.cat([K, Kx], 1), torch.cat([Kx.T, brute_Kff(r.kernel, r.X)], 1)])
        eig = torch.linalg.eigvalsh(0.5 * (joint + joint.T))
        assert float(eig.min()) >= -10 * tol.rtol * float(eig.max()), float(eig.min())


@pytest.mark.parametrize("name", sorted(k for k in COMPUTED if k.startswith("invariant")))
def test_invariant_covariances_of_given_samples_entry_by_entry(name, device, dtype, tol, assert_close):
    """For samples drawn once (an `OrbitSample`), K_uf[m, n, s] = k_g(z_m, x_n^(s)) and k̂_f is the pair estimator
    Î = c_off Σ_{s≠s'} k_g(x^(s), x^(s')) + c_diag Σ_s k_g(x^(s), x^(s)) (van der Wilk et al. 2018 eq. 21, appendix B
    eq. 8)."""
    s = setup(name)
    torch.manual_seed(3)
    points = s.kernel.sample_orbit(s.X, 3 if s.kernel.orbit_size is None else min(3, s.kernel.orbit_size))
    N, S, _ = points.shape
    P = s.kernel.orbit_size
    c_off, c_diag = (1.0 / (S * (S - 1)), 0.0) if P is None else ((P - 1) / (P * S * (S - 1)), 1.0 / (P * S))
    ref_kuf = torch.stack([pairwise(s.kernel.base, s.inducing.Z, points[n]) for n in range(N)], 1)  # [M, N, S]
    ref_kff = []
    for n in range(N):
        Kss = pairwise(s.kernel.base, points[n], points[n])
        off = sum(Kss[a, b] for a in range(S) for b in range(S) if a != b)
        ref_kff.append(c_off * off + c_diag * sum(Kss[a, a] for a in range(S)))
    ref_kff = torch.stack(ref_kff)
    inducing, kernel = s.inducing.to(device=device, dtype=dtype), s.kernel.to(device=device, dtype=dtype)
    orbit = OrbitSample(points.to(device=device, dtype=dtype), P)
    with torch.no_grad():
        assert_close(Kuf(inducing, kernel, orbit), ref_kuf, tol, scale=float(ref_kuf.abs().max()))
        assert_close(Kff_diag(inducing, kernel, orbit), ref_kff, tol, scale=float(ref_kff.abs().max()))


def test_interdomain_points_with_the_multi_channel_kernel_are_consistent_or_refused():
    """Either refused, or the covariances of u_c = g_c(Z), c = 1..C (the only inter-domain variables of this kernel)."""
    Z = InterDomainPoints(patches(4, 4))
    kernel = weighted(MultiChannelConvolutional(RBF(None, 0.7), (2, 4, 4), 2)).double()
    X = images(3, 2, 4, 4)
    try:
        with torch.no_grad():
            K, Kx = Kuu(Z, kernel), Kuf(Z, kernel, X)
    except NotImplementedError:
        return
    ref = brute(Z, kernel, X)
    assert K.shape == ref["Kuu"].shape and Kx.shape == ref["Kuf"].shape, (K.shape, Kx.shape)
    assert torch.allclose(K, ref["Kuu"], atol=1e-10) and torch.allclose(Kx, ref["Kuf"], atol=1e-10)


@pytest.mark.parametrize("name", REFUSED)
def test_refused_pairs_say_what_to_use_instead(name):
    s = setup(name)
    for fn, args in ((Kuu, ()), (Kuf, (s.X,)), (Kff_diag, (s.X,))):
        with pytest.raises(NotImplementedError, match=r"\w+ \w+"):
            fn(s.inducing, s.kernel, *args)


# -- gradients (the fast paths have hand-written backward passes) ------------------------------------------------------
@pytest.mark.parametrize("name", sorted(k for k in COMPUTED if not k.startswith("invariant_rotation")))
def test_gradients_equal_autograd_through_the_brute_force_sums(name):
    """d/dθ of a fixed random functional of K_uu, K_uf and k_ff, for every learnable value θ (hyper-parameters,
    patch weights, inducing locations), through the registered path and through the loops above."""
    s = setup(name)
    params = [p for p in list(s.kernel.parameters()) + list(s.inducing.parameters()) if p.requires_grad]

    def objective(values):
        g = gen(9)
        total = 0.0
        for v in values:
            total = total + (torch.randn(v.shape, generator=g, dtype=DT) * v).sum()
        return total

    torch.manual_seed(0)
    fast = [Kuu(s.inducing, s.kernel), Kuf(s.inducing, s.kernel, s.X), Kff_diag(s.inducing, s.kernel, s.X)]
    if sampled(s.kernel):
        fast[1] = fast[1].mean(2)  # exact orbits only here: the per-sample mean is the orbit average
    ref = brute(s.inducing, s.kernel, s.X)
    g_fast = torch.autograd.grad(objective(fast), params, allow_unused=True)
    g_ref = torch.autograd.grad(objective([ref["Kuu"], ref["Kuf"], ref["Kff_diag"]]), params, allow_unused=True)
    for p, a, b in zip(params, g_fast, g_ref):
        a = torch.zeros_like(p) if a is None else a
        b = torch.zeros_like(p) if b is None else b
        assert torch.allclose(a, b, rtol=1e-9, atol=1e-9 * max(1.0, float(b.abs().max()))), (p.shape, a, b)


# -- every registration has a case -----------------------------------------------------------------------------------
def registrations(dispatcher) -> dict:
    table = getattr(dispatcher, "registrations", None)
    table = table() if callable(table) else getattr(dispatcher, "_table")
    return dict(table)


def resolved_pair(dispatcher, inducing_type, kernel_type):
    """The registered (inducing type, kernel type) that a call with these types runs (the dispatcher's own rule)."""
    fn = dispatcher.resolve(inducing_type, kernel_type)
    for a in inducing_type.__mro__:
        for b in kernel_type.__mro__:
            if registrations(dispatcher).get((a, b)) is fn:
                return a, b
    raise AssertionError(f"{dispatcher.name} resolved {inducing_type.__name__} × {kernel_type.__name__} to an "
                         "unregistered function")


def covered_pairs() -> set:
    covered = set()
    for name in SETUPS:
        s = SETUPS[name]()
        stack = [(s.inducing, s.kernel)]
        while stack:
            inducing, kernel = stack.pop()
            for dname, d in DISPATCHERS.items():
                try:
                    covered.add((dname,) + resolved_pair(d, type(inducing), type(kernel)))
                except NotImplementedError:
                    pass
            if isinstance(inducing, InducingBlocks) and isinstance(kernel, Sum):  # the blocks' pairs are checked too
                stack.extend(zip(inducing.blocks, kernel.parts))
    return covered


def test_every_registered_pair_has_a_contract_case():
    covered = covered_pairs()
    missing = [f"pair ({a.__name__}, {b.__name__}) of {dname}" for dname, d in DISPATCHERS.items()
               for (a, b) in registrations(d) if (dname, a, b) not in covered]
    assert not missing, "; ".join(m + " has no contract case" for m in missing)


def test_the_dispatchers_checked_are_all_there_are():
    """A new dispatcher anywhere in invlab.covariances must be added to DISPATCHERS (and so to the contract)."""
    import importlib
    import pkgutil

    from invlab.covariances.dispatch import PairDispatcher

    modules = [cov] + [importlib.import_module(f"{cov.__name__}.{m.name}") for m in pkgutil.iter_modules(cov.__path__)]
    found = {v.name for m in modules for v in vars(m).values() if isinstance(v, PairDispatcher)}
    assert found <= set(DISPATCHERS), sorted(found - set(DISPATCHERS))
