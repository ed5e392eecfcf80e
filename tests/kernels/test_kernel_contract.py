"""The kernel contract (GPyTorch's base test cases): every kernel of the engine gets the same checks.

- K(X) is symmetric and positive semi-definite (smallest eigenvalue ≥ −tol × the largest);
- K_diag(X) = diag K(X);
- K(X, X2) has shape [N, N2], equals K(X2, X)ᵀ and the off-diagonal block of K([X; X2]);
- dtype follows the inputs (float64 and float32) and so does the device;
- gradients: `torch.autograd.gradcheck` in float64 on every hyper-parameter and on the inputs.

Orbit kernels over a density (and finite orbits subsampled with S < P) have a Monte-Carlo K_diag (an unbiased
estimate, van der Wilk et al. 2018 eq. 21) and a K built from a sampled orbit: for those the deterministic checks run on
the exact finite orbit only, and K_diag is checked statistically against a brute-force average over the orbit.

A new kernel is one line in `CASES`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pytest
import torch

from invlab.kernels import RBF, ArcCosine, Linear, Matern52, Polynomial
from invlab.kernels.combinators import ChannelAdditive, Sum
from invlab.kernels.convolutional import Convolutional, MultiChannelConvolutional, WeightedConvolutional
from invlab.kernels.gram import NNGPKernel, ReluGram, SquaredExponentialGram
from invlab.kernels.invariant import InvariantKernel
from invlab.transforms import (
    CyclicShiftOrbit,
    FlipOrbit,
    LocalDeformation,
    PermutationOrbit,
    Rot90Orbit,
    all_affine,
    rotation_only,
)
from tests.helpers.orbit_sums import brute_kff

DT = torch.float64


def vectors(D: int, scale: float = 1.0):
    return lambda N, g: scale * torch.randn(N, D, generator=g, dtype=DT)


def images(C: int, H: int, W: int, blank: int = 0):
    """Images in [0, 1]; with `blank`, a border of that width is zero (rotations then keep the content inside)."""
    def make(N, g):
        X = torch.zeros(N, C, H, W, dtype=DT)
        inner = torch.rand(N, C, H - 2 * blank, W - 2 * blank, generator=g, dtype=DT)
        X[:, :, blank:H - blank, blank:W - blank] = inner
        return X
    return make


def with_weights(kernel, seed: int = 7):
    """Random learnable patch weights (all-ones weights would hide a weight that is applied to the wrong patch)."""
    with torch.no_grad():
        kernel.weights.assign(0.3 + torch.rand(kernel.weights.shape, generator=torch.Generator().manual_seed(seed),
                                               dtype=DT))
    return kernel


@dataclass
class KernelCase:
    make: Callable[[], torch.nn.Module]
    inputs: Callable[[int, torch.Generator], torch.Tensor]  # (N, generator) → float64 inputs
    exact: bool = True  # K and K_diag are deterministic; False: K_diag is a Monte-Carlo estimate (sampled orbit)
    sampled_K: bool = False  # K itself uses a sampled orbit (a density): no deterministic checks of K at all


CASES: dict[str, KernelCase] = {
    # plain kernels
    "rbf": KernelCase(lambda: RBF(3, lengthscale=0.7, variance=1.3), vectors(3)),
    "rbf_ard": KernelCase(lambda: RBF(3, lengthscale=0.9, variance=0.8, ard=True), vectors(3)),
    "matern52": KernelCase(lambda: Matern52(3, lengthscale=1.1, variance=2.0), vectors(3)),
    "matern52_ard": KernelCase(lambda: Matern52(3, lengthscale=1.1, ard=True), vectors(3)),
    "linear": KernelCase(lambda: Linear(variance=0.5, offset=0.2), vectors(3)),
    "polynomial": KernelCase(lambda: Polynomial(degree=3, variance=0.4, offset=1.0), vectors(3)),
    "arccos0": KernelCase(lambda: ArcCosine(0, variance=1.5), vectors(3)),
    "arccos1": KernelCase(lambda: ArcCosine(1, variance=0.7, weight_variance=2.0, bias_variance=0.3), vectors(3)),
    # kernels on Gram matrices, composed into kernels on inputs (the DKP's NNGP limit)
    "gram_relu": KernelCase(lambda: NNGPKernel(3, [ReluGram(1.2)], input_scale_bias=False), vectors(3)),
    "gram_sqexp": KernelCase(lambda: NNGPKernel(3, [SquaredExponentialGram(0.8, 1.1)], input_scale_bias=False),
                             vectors(3)),
    "gram_stack_affine": KernelCase(lambda: NNGPKernel(3, [SquaredExponentialGram(0.9, 1.1), ReluGram(0.8)]),
                                    vectors(3)),
    # combinators
    "sum_vectors": KernelCase(lambda: Sum([RBF(3, 0.8, 0.7), Linear(0.3)]), vectors(3)),
    "channel_additive": KernelCase(lambda: ChannelAdditive([RBF(None, 0.6, 1.2), Matern52(None, 0.9, 0.5)]),
                                   vectors(4)),
    "sum_rbf_weighted_conv": KernelCase(
        lambda: Sum([RBF(16, 1.5, 0.4), with_weights(WeightedConvolutional(RBF(None, 0.6, 1.3), (1, 4, 4), 2))]),
        images(1, 4, 4)),
    # convolutional kernels
    "convolutional": KernelCase(lambda: Convolutional(RBF(None, 0.8), (1, 4, 4), 2, weight=0.3), images(1, 4, 4)),
    "convolutional_strided": KernelCase(lambda: Convolutional(Matern52(None, 0.9, 1.2), (1, 5, 4), (3, 2),
                                                              stride=(2, 1)),
                                        images(1, 5, 4)),
    "weighted_convolutional": KernelCase(lambda: with_weights(WeightedConvolutional(RBF(None, 0.9, 1.3), (1, 4, 4), 2)),
                                         images(1, 4, 4)),
    "colour_patches": KernelCase(lambda: with_weights(WeightedConvolutional(Matern52(None, 1.2), (2, 4, 4), 2)),
                                 images(2, 4, 4)),
    "grey_patches_on_colour": KernelCase(
        lambda: with_weights(WeightedConvolutional(RBF(None, 0.8), (2, 4, 4), 2, colour_patches=False)),
        images(2, 4, 4)),
    "colour_additive": KernelCase(
        lambda: with_weights(WeightedConvolutional(ChannelAdditive([RBF(None, 0.5, 1.0), RBF(None, 0.8, 2.0)]),
                                                   (2, 4, 4), 2)), images(2, 4, 4)),
    "multi_channel": KernelCase(lambda: with_weights(MultiChannelConvolutional(RBF(None, 0.7), (2, 4, 4), 2)),
                                images(2, 4, 4)),
    "convolutional_polynomial": KernelCase(lambda: Convolutional(Polynomial(2, 0.5), (1, 4, 4), 2, weight=0.25),
                                           images(1, 4, 4)),
    # invariant kernels over a finite orbit, every element used: exact
    "invariant_rot90": KernelCase(lambda: InvariantKernel(RBF(16, 1.5, 1.2), Rot90Orbit(), 4), images(1, 4, 4)),
    "invariant_flips_ard": KernelCase(lambda: InvariantKernel(Matern52(16, 1.3, ard=True), FlipOrbit("both"), 4),
                                      images(1, 4, 4)),
    "invariant_permutations": KernelCase(lambda: InvariantKernel(ArcCosine(1, 0.8), PermutationOrbit(3), 6),
                                         vectors(3)),
    "invariant_cyclic_shifts": KernelCase(lambda: InvariantKernel(Polynomial(2, 0.3), CyclicShiftOrbit(3, 3), 9),
                                          images(1, 3, 3)),
    # a finite orbit subsampled (S < P): K exact, K_diag unbiased
    "invariant_rot90_subsampled": KernelCase(lambda: InvariantKernel(RBF(16, 1.5, 1.2), Rot90Orbit(), 2),
                                             images(1, 4, 4), exact=False),
    # densities: K and K_diag from sampled orbits
    "invariant_rotation": KernelCase(lambda: InvariantKernel(RBF(36, 1.2, 1.1), rotation_only(60.0), 3),
                                     images(1, 6, 6, blank=1), exact=False, sampled_K=True),
    "invariant_affine": KernelCase(lambda: InvariantKernel(Matern52(36, 1.5), all_affine(30.0, 0.1), 4),
                                   images(1, 6, 6, blank=1), exact=False, sampled_K=True),
    "invariant_deformation": KernelCase(lambda: InvariantKernel(RBF(36, 1.4), LocalDeformation(0.8, 10.0, 0.05), 2),
                                        images(1, 6, 6, blank=1), exact=False, sampled_K=True),
}

EXACT = sorted(k for k, c in CASES.items() if c.exact)
EXACT_K = sorted(k for k, c in CASES.items() if not c.sampled_K)
ESTIMATED_DIAG = sorted(k for k, c in CASES.items() if not c.exact)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def build(name, device=torch.device("cpu"), dtype=DT):
    case = CASES[name]
    kernel = case.make().to(device=device, dtype=dtype)
    return kernel, case


def inputs(case, N, seed, device, dtype):
    return case.inputs(N, gen(seed)).to(device=device, dtype=dtype)


def scale_of(K):
    return max(float(K.abs().max()), 1e-30)


# -- K(X): symmetric and PSD; K_diag = diag K -------------------------------------------------------------------------
@pytest.mark.parametrize("name", EXACT_K)
def test_gram_matrix_is_symmetric_and_positive_semidefinite(name, device, dtype, tol, assert_close):
    kernel, case = build(name, device, dtype)
    X = inputs(case, 7, 0, device, dtype)
    with torch.no_grad():
        K = kernel.K(X)
    assert K.shape == (7, 7)
    s = scale_of(K)
    assert_close(K, K.T, tol, scale=s)
    eig = torch.linalg.eigvalsh(0.5 * (K + K.T).double().cpu())
    assert float(eig.min()) >= -tol.rtol * float(eig.max()) * 10, f"smallest eigenvalue {float(eig.min()):.3g}"


@pytest.mark.parametrize("name", EXACT)
def test_K_diag_is_the_diagonal_of_K(name, device, dtype, tol, assert_close):
    kernel, case = build(name, device, dtype)
    X = inputs(case, 6, 1, device, dtype)
    with torch.no_grad():
        K, d = kernel.K(X), kernel.K_diag(X)
    assert d.shape == (6,)
    assert_close(d, K.diagonal(), tol, scale=scale_of(K))


# -- K(X, X2) ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", EXACT_K)
def test_cross_covariance_shape_transpose_and_block(name, device, dtype, tol, assert_close):
    kernel, case = build(name, device, dtype)
    X, X2 = inputs(case, 5, 2, device, dtype), inputs(case, 3, 3, device, dtype)
    with torch.no_grad():
        K12, K21, full = kernel.K(X, X2), kernel.K(X2, X), kernel.K(torch.cat([X, X2]))
    assert K12.shape == (5, 3) and K21.shape == (3, 5)
    s = scale_of(full)
    assert_close(K12, K21.T, tol, scale=s)
    assert_close(K12, full[:5, 5:], tol, scale=s)


# -- dtype and device ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("precision", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", sorted(CASES))
def test_outputs_follow_the_input_dtype_and_device(name, precision, device):
    kernel, case = build(name, device, precision)
    X, X2 = inputs(case, 4, 4, device, precision), inputs(case, 3, 5, device, precision)
    with torch.no_grad():
        outputs = [kernel.K(X), kernel.K(X, X2), kernel.K_diag(X)]
    for out in outputs:
        assert out.dtype == precision and out.device.type == device.type
        assert torch.isfinite(out).all()


# -- gradients ---------------------------------------------------------------------------------------------------------
class _Method(torch.nn.Module):
    """Wraps a kernel so that `functional_call` reaches K or K_diag."""

    def __init__(self, kernel, method):
        super().__init__()
        self.k, self.method = kernel, method

    def forward(self, *args):
        return getattr(self.k, self.method)(*args)


@pytest.mark.parametrize("name", EXACT)
def test_gradcheck_on_hyperparameters_and_inputs(name, device):
    """Autograd gradients of K(X, X2) and K_diag(X) against finite differences, in float64 (the fast covariance
    paths with hand-written backward passes are checked in the covariance contract)."""
    kernel, case = build(name, device, DT)
    named = [(n, p) for n, p in kernel.named_parameters() if p.requires_grad]
    names, params = [n for n, _ in named], [p.detach().clone().requires_grad_() for _, p in named]
    X = inputs(case, 3, 6, device, DT).requires_grad_()
    X2 = inputs(case, 2, 7, device, DT).requires_grad_()
    assert params, "a kernel with no learnable hyper-parameter"
    wrapped = _Method(kernel, "K")
    cross = lambda *t: torch.func.functional_call(  # noqa: E731
        wrapped, {f"k.{n}": p for n, p in zip(names, t[:len(names)])}, (t[-2], t[-1]))
    assert torch.autograd.gradcheck(cross, (*params, X, X2), eps=1e-6, atol=1e-6, rtol=1e-5)
    wrapped_diag = _Method(kernel, "K_diag")
    diag = lambda *t: torch.func.functional_call(  # noqa: E731
        wrapped_diag, {f"k.{n}": p for n, p in zip(names, t[:len(names)])}, (t[-1],))
    assert torch.autograd.gradcheck(diag, (*params, X), eps=1e-6, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_are_finite_including_duplicated_inputs(name, device, dtype):
    """Every learnable value gets a finite gradient, also where inputs coincide (r = 0, θ = 0)."""
    kernel, case = build(name, device, dtype)
    X = inputs(case, 4, 8, device, dtype)
    X = torch.cat([X, X[:2]])
    torch.manual_seed(0)
    (kernel.K(X).sum() + kernel.K_diag(X).sum()).backward()
    grads = {n: p.grad for n, p in kernel.named_parameters() if p.requires_grad}
    assert grads and all(g is not None and torch.isfinite(g).all() for g in grads.values()), grads


# -- Monte-Carlo K_diag ------------------------------------------------------------------------------------------------
def brute_force_average(kernel, X, T=300, seed=11):
    """E_a E_b k_g(x_a, x_b) per input with its standard error: the exact double average over a finite orbit;
    for a density, the mean of k_g over T × T pairs of two independent sample sets (unbiased)."""
    if kernel.orbit_size is not None:
        return brute_kff(kernel, X), torch.zeros(X.shape[0], dtype=X.dtype)
    torch.manual_seed(seed)
    means, ses = [], []
    for n in range(X.shape[0]):
        A = kernel.augmentation.sample(X[n:n + 1], T)[0].reshape(T, -1)  # [T, E]
        B = kernel.augmentation.sample(X[n:n + 1], T)[0].reshape(T, -1)
        Kab = kernel.base.K(A, B)  # [T, T]
        means.append(Kab.mean())
        # U-statistic standard error, bounded above by the row-mean and column-mean spreads
        ses.append(torch.sqrt((Kab.mean(1).var() + Kab.mean(0).var()) / T))
    return torch.stack(means), torch.stack(ses)


@pytest.mark.parametrize("name", ESTIMATED_DIAG)
def test_monte_carlo_K_diag_is_unbiased_for_the_orbit_average(name):
    kernel, case = build(name)
    X = inputs(case, 2, 9, torch.device("cpu"), DT)
    R = 400
    torch.manual_seed(1)
    with torch.no_grad():
        draws = kernel.K_diag(X.repeat(R, *([1] * (X.dim() - 1)))).reshape(R, X.shape[0])  # R independent estimates
        ref, ref_se = brute_force_average(kernel, X)
    se = torch.sqrt(draws.var(0) / R + ref_se ** 2)
    z = (draws.mean(0) - ref).abs() / se.clamp_min(1e-12)
    assert float(z.max()) < 4.5, (draws.mean(0), ref, se)
    assert float(draws.std(0).max()) > 0, "the estimate does not vary: it is not drawn from the orbit"


def test_every_kernel_class_of_the_engine_has_a_contract_case():
    """A kernel class (or kernel on Gram matrices) added to invlab.kernels without a line in CASES fails here."""
    import importlib
    import pkgutil

    import invlab.kernels as pkg
    from invlab.kernels import Kernel
    from invlab.kernels.gram import GramKernel

    for module in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"{pkg.__name__}.{module.name}")

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    covered = set()
    for n in CASES:  # a kernel counts as covered where it is a case or a part of one (combinators, bases, layers)
        covered |= {type(m) for m in CASES[n].make().modules()}
    abstract = {"Stationary", "OrbitKernel", "PatchKernel"}
    missing = sorted(c.__name__ for base in (Kernel, GramKernel) for c in subclasses(base)
                     if c.__module__.startswith(pkg.__name__) and c.__name__ not in abstract and c not in covered)
    assert not missing, f"kernels without a contract case: {missing}"
