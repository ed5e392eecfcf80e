"""The variational-family contract: for every SVGP-style family with a Gaussian likelihood, the ELBO at the optimal
q(u) (Titsias 2009, in closed form from brute-force K_uu and K_uf) is

- Titsias' collapsed bound computed independently from K_uu, K_uf and k_ff, for any inducing variables;
- the exact log marginal likelihood log N(y; 0, K_ff + σ²I) when the inducing variables determine f: inducing
  points at the data (plain SVGP, the DKP's SVGP baseline), or for inter-domain inducing variables every element
  that f sums — every orbit element of every input (invariant GP, finite orbit with S = P) or every patch of every
  image (each convolutional variant, tiny images);
- strictly above the ELBO of any other q(u) (q* is the maximiser: the KL and expected log-likelihood have the right
  signs and scales).

K_uu, K_uf, k_ff and K_ff are computed here by brute force (`tests.helpers.orbit_sums`), never by the fast paths the
model uses, and the optimal q(u) by the one shared helper `tests.helpers.titsias`. The closed forms are solved in
float64 (they are ill-conditioned in float32), on the `device` of the run.

GWI and RKHS are not variational families (no q(u) with a KL to the prior); the DKP families with global inducing
outputs (diwp, nngp) have no collapsed bound. `test_every_registered_family_is_classified` keeps this list honest.
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from invlab.inducing import InducingBlocks, InducingPatches, InducingPoints, InterDomainPoints, SharedInducingPatches
from invlab.kernels import RBF, ArcCosine, Matern52
from invlab.kernels.combinators import ChannelAdditive, Sum
from invlab.kernels.convolutional import Convolutional, MultiChannelConvolutional, WeightedConvolutional
from invlab.kernels.gram import NNGPKernel, ReluGram, SquaredExponentialGram
from invlab.kernels.invariant import InvariantKernel
from invlab.kernels.orbit import OrbitKernel
from invlab.likelihoods import Gaussian
from invlab.models import SVGP
from invlab.models.convolutional import ConvolutionalGP
from invlab.models.invariant import InvariantSVGP
from invlab.transforms import PermutationOrbit, Rot90Orbit
from tests.helpers.orbit_sums import brute_cross, brute_K, explicit_orbit, explicit_patches, num_groups
from tests.helpers.titsias import collapsed_bound, exact_log_marginal, set_optimal_q

DT = torch.float64
NOISE = 0.3


def gen(seed):
    return torch.Generator().manual_seed(seed)


# -- brute-force covariances of any (inducing, kernel) pair used here ---------------------------------------------
def brute(inducing, kernel, X):
    """(K_uu, K_uf, k_ff) from the definitions (orbit sums by explicit loops)."""
    if isinstance(inducing, InducingBlocks):
        parts = [brute(b, k, X) for b, k in zip(inducing.blocks, kernel.parts)]
        return (torch.block_diag(*[p[0] for p in parts]), torch.cat([p[1] for p in parts]), sum(p[2] for p in parts))
    if isinstance(kernel, OrbitKernel):
        Kg = kernel.base.K(inducing.Z)
        return (torch.block_diag(*[Kg] * num_groups(kernel)), brute_cross(kernel, inducing.Z, X),
                brute_K(kernel, X).diagonal())
    Xf = X.reshape(X.shape[0], -1)
    return kernel.K(inducing.Z), kernel.K(inducing.Z, Xf), kernel.K_diag(Xf)


def brute_Kff(kernel, X):
    if isinstance(kernel, Sum):
        return sum(brute_Kff(k, X) for k in kernel.parts)
    return brute_K(kernel, X) if isinstance(kernel, OrbitKernel) else kernel.K(X.reshape(X.shape[0], -1))


# -- the families --------------------------------------------------------------------------------------------------
def vectors(N, D=2, seed=0):
    return 1.5 * torch.randn(N, D, generator=gen(seed), dtype=DT)


def images(N, C=1, H=4, W=4, seed=0):
    return torch.rand(N, C, H, W, generator=gen(seed), dtype=DT)


def targets(X, seed=1):
    f = torch.sin(3.0 * X.reshape(X.shape[0], -1).mean(1))
    return f + 0.3 * torch.randn(X.shape[0], generator=gen(seed), dtype=DT)


def weighted(kernel, seed=5):
    with torch.no_grad():
        kernel.weights.assign(0.5 + torch.rand(kernel.weights.shape, generator=gen(seed), dtype=DT))
    return kernel


def all_orbit_elements(augmentation, X):
    return torch.stack([e.reshape(-1) for x in X for e in explicit_orbit(augmentation, x)])


def all_patches(kernel, X, per_channel=False):
    """Every patch of every image, as the kernel sees them: [N·P, E] (one row per (image, position[, channel]))."""
    h, w = kernel.patch_size
    P = explicit_patches(X, h, w, *kernel.stride)  # [N, P', C, h, w]
    if per_channel:
        return P.reshape(-1, h * w)
    return P.reshape(P.shape[0] * P.shape[1], -1)


@dataclass
class Family:
    model: type
    kernel: object
    X: torch.Tensor
    exact_inducing: object  # inducing variables that determine f
    sparse_inducing: object  # a few inducing variables: only the collapsed bound


def svgp(kernel, D=2):
    X = vectors(12, D)
    return Family(SVGP, kernel, X, InducingPoints(X), InducingPoints(vectors(5, D, seed=3)))


def invariant(kernel, augmentation, X, Z):
    kernel = InvariantKernel(kernel, augmentation, augmentation.orbit_size)  # S = P: the whole orbit
    return Family(InvariantSVGP, kernel, X, InterDomainPoints(all_orbit_elements(augmentation, X)),
                  InterDomainPoints(Z))


def conv(kernel, X, E, C_inducing=None, per_channel=False):
    Z = all_patches(kernel, X, per_channel)
    exact, sparse = InducingPatches(Z), InducingPatches(torch.rand(5, E, generator=gen(4), dtype=DT))
    if C_inducing:
        exact, sparse = SharedInducingPatches(Z, C_inducing), SharedInducingPatches(sparse.Z.detach(), C_inducing)
    return Family(ConvolutionalGP, kernel, X, exact, sparse)


def conv_sum():
    X = images(4)
    part = weighted(WeightedConvolutional(RBF(None, 0.7, 1.0), (1, 4, 4), 2))
    kernel = Sum([RBF(16, 1.5, 0.4), part])
    exact = InducingBlocks([InducingPoints(X), InducingPatches(all_patches(part, X))])
    sparse = InducingBlocks([InducingPoints(images(2, seed=6)), InducingPatches(torch.rand(4, 4, generator=gen(4),
                                                                                             dtype=DT))])
    return Family(ConvolutionalGP, kernel, X, exact, sparse)


FAMILIES = {
    # registry name → the model of that family on a tiny problem (several kernels where the family takes any)
    "svgp[rbf]": lambda: svgp(RBF(2, 0.8, 1.2)),
    "svgp[matern52_ard]": lambda: svgp(Matern52(2, 1.1, ard=True)),
    "svgp[arccos1]": lambda: svgp(ArcCosine(1, 0.8, 1.5, 0.5)),
    "dkp_svgp[nngp_kernel]": lambda: svgp(NNGPKernel(2, [SquaredExponentialGram(1.0, 1.0), ReluGram(1.0)])),
    "invariant[rot90]": lambda: invariant(RBF(16, 1.5, 1.2), Rot90Orbit(), images(4),
                                          torch.rand(5, 16, generator=gen(3), dtype=DT)),
    "invariant[permutations]": lambda: invariant(Matern52(3, 1.2), PermutationOrbit(3), vectors(4, 3),
                                                 vectors(5, 3, seed=3)),
    "conv-invariant": lambda: conv(Convolutional(RBF(None, 0.7, 1.3), (1, 4, 4), 2, weight=1 / 9), images(4), 4),
    "conv-weighted": lambda: conv(weighted(WeightedConvolutional(RBF(None, 0.7, 1.3), (1, 4, 4), 2)), images(4), 4),
    "conv-weighted-rbf": conv_sum,
    "conv-colour[colour-patch]": lambda: conv(weighted(WeightedConvolutional(RBF(None, 0.9), (2, 4, 4), 2)),
                                              images(3, 2), 8),
    "conv-colour[additive]": lambda: conv(weighted(WeightedConvolutional(
        ChannelAdditive([RBF(None, 0.6, 0.6), RBF(None, 0.8, 0.4)]), (2, 4, 4), 2)), images(3, 2), 8),
    "conv-colour[multi-channel]": lambda: conv(weighted(MultiChannelConvolutional(RBF(None, 0.7), (2, 4, 4), 2)),
                                               images(3, 2), 4, C_inducing=2, per_channel=True),
    "conv-weighted[grey patches on colour]": lambda: conv(
        weighted(WeightedConvolutional(RBF(None, 0.7), (2, 4, 4), 2, colour_patches=False)), images(3, 2), 4,
        per_channel=True),
}

# registered families that are not SVGP-style variational families with a Gaussian collapsed bound
NOT_COLLAPSIBLE = {
    "gwi": "Gaussian Wasserstein inference: no KL to a prior over u (its Q against the SVGP optimum is in test_gwi)",
    "rkhs": "a kernel machine, not a variational family",
    "diwp": ("global inducing outputs through sampled Gram layers (Aitchison, Yang & Ober 2021): no closed-form "
             "optimal q(u)"),
    "nngp": "global inducing outputs of the DKP family (Aitchison, Yang & Ober 2021 app. G), not a q(u) against K_uu",
}


def build_model(family, inducing, whiten, device):
    model = family.model(family.kernel, inducing, Gaussian(NOISE), family.X.shape[0], whiten=whiten, jitter=0.0)
    return model.to(device=device, dtype=DT)


def elbo_at_optimum(family, inducing, whiten, device):
    """(ELBO at q*, the model) with q* from brute-force K_uu, K_uf (computed on the CPU, moved to the device)."""
    X, y = family.X, targets(family.X)
    with torch.no_grad():
        Kuu, Kuf, kff = brute(inducing.double(), family.kernel.double(), X)
    model = build_model(family, inducing, whiten, device)
    Xd, yd = X.to(device), y.to(device)
    set_optimal_q(model, Xd, yd, NOISE, Kuu=Kuu.to(device), Kuf=Kuf.to(device))
    torch.manual_seed(0)
    with torch.no_grad():
        elbo = model.elbo_terms(Xd, yd)["elbo"]
    return float(elbo), model, (Kuu, Kuf, kff, y)


@pytest.mark.parametrize("whiten", [True, False], ids=["whitened", "plain"])
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_elbo_at_the_optimal_q_is_the_exact_marginal_likelihood_when_u_determines_f(name, whiten, device):
    family = FAMILIES[name]()
    elbo, _, (_, _, _, y) = elbo_at_optimum(family, family.exact_inducing, whiten, device)
    with torch.no_grad():
        exact = float(exact_log_marginal(brute_Kff(family.kernel, family.X), y, NOISE))
    assert abs(elbo - exact) <= 1e-8 * abs(exact), (elbo, exact)


@pytest.mark.parametrize("whiten", [True, False], ids=["whitened", "plain"])
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_elbo_at_the_optimal_q_is_the_collapsed_bound_and_the_maximum(name, whiten, device):
    family = FAMILIES[name]()
    elbo, model, (Kuu, Kuf, kff, y) = elbo_at_optimum(family, family.sparse_inducing, whiten, device)
    bound = float(collapsed_bound(Kuu, Kuf, kff, y, NOISE))
    assert abs(elbo - bound) <= 1e-8 * abs(bound), (elbo, bound)
    with torch.no_grad():  # any other q(u) gives less
        g = gen(8)
        q_mu, q_sqrt = model.q.q_mu.clone(), torch.linalg.cholesky(torch.eye(Kuu.shape[0], dtype=DT))[None]
        for step in (1e-3, 1e-1):
            model.q.set(q_mu + step * torch.randn(q_mu.shape, generator=g, dtype=DT).to(q_mu.device),
                        q_sqrt.to(q_mu.device))
            torch.manual_seed(0)
            assert float(model.elbo_terms(family.X.to(device), y.to(device))["elbo"]) < elbo


def test_every_registered_family_is_classified():
    """A new family in the registry must get a case here (or a reason why the collapsed bound does not apply)."""
    from invlab.models import REGISTRY

    cased = {name.split("[")[0] for name in FAMILIES}
    assert cased <= set(REGISTRY), sorted(cased - set(REGISTRY))
    unclassified = sorted(set(REGISTRY) - cased - set(NOT_COLLAPSIBLE))
    assert not unclassified, f"families without a variational contract case: {unclassified}"
