"""The kernel contract, callable on anyone's kernel: `check_kernel(kernel_or_name)`.

The same properties the engine's own kernels are tested for (GPyTorch's base test cases):

- symmetry: K(X) = K(X)ᵀ;
- PSD: the smallest eigenvalue of K(X) ≥ −tol × the largest;
- diagonal: K_diag(X) = diag K(X);
- shapes: K(X, X2) is [N, N2] and equals the off-diagonal block of K([X; X2]); K_diag(X) is [N]; image inputs
  [N, C, H, W] give the same as their flattened [N, D];
- dtypes: float32 inputs give float32, float64 give float64;
- gradients: K's sum has finite gradients in every hyper-parameter, including at repeated inputs.

A failure raises `KernelContractError` whose message names the property, what was seen and what it should be, so
it reads well both as a pytest failure and at a prompt:

    from invlab.testing import check_kernel
    check_kernel("rq")                  # a registered kernel, built with input_dim=5
    check_kernel(MyKernel(5))           # or an instance
"""
from __future__ import annotations

import copy

import torch

from .errors import InvlabError
from .kernels import REGISTRY, Kernel

PROPERTIES = ("symmetry", "PSD", "diagonal", "shapes", "dtypes", "gradients")


class KernelContractError(InvlabError, AssertionError):
    """A kernel breaks the contract; the message names the property that failed."""


def _fail(what: str, prop: str, detail: str) -> None:
    raise KernelContractError(f"{what} fails the kernel contract: {prop}: {detail}")


def check_kernel(kernel_or_name: Kernel | str, *, input_dim: int = 5, num_points: int = 30, seed: int = 0,
                 **options) -> tuple[str, ...]:
    """Check a kernel (an instance, or a registered name built with `input_dim` and `options`) against the kernel
    contract; returns the names of the properties checked, or raises `KernelContractError` naming the first that
    failed. Inputs are `num_points` standard-normal points in `input_dim` dimensions (seeded by `seed`)."""
    kernel, what = _kernel_to_check(kernel_or_name, input_dim, options)
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(num_points, input_dim, generator=g, dtype=torch.float64)
    X2 = torch.randn(max(num_points // 3, 2), input_dim, generator=g, dtype=torch.float64)
    with torch.no_grad():
        K, scale = _check_gram(kernel, what, X)
        _check_diagonal(kernel, what, X, K, scale)
        _check_cross_and_shapes(kernel, what, X, X2, K, scale)
        _check_dtypes(kernel, what, X)
    _check_gradients(kernel, what, X)
    return PROPERTIES


def _kernel_to_check(kernel_or_name: Kernel | str, input_dim: int, options: dict) -> tuple[Kernel, str]:
    """(a float64 copy of the kernel, how messages name it); a name is built from the registry (plugins loaded)."""
    if isinstance(kernel_or_name, str):
        what = f"kernel {kernel_or_name!r}"
        if kernel_or_name not in REGISTRY.parts:
            from .plugins import load_plugins

            load_plugins()  # an installed plugin's kernel
        kernel = REGISTRY.build(kernel_or_name, input_dim, lengthscale=1.3, variance=0.7, ard=False, **options)
    else:
        kernel, what = kernel_or_name, f"kernel {type(kernel_or_name).__name__}"
    if not isinstance(kernel, Kernel):
        _fail(what, "type", f"got a {type(kernel).__name__}; a kernel is an invlab.kernels.Kernel subclass")
    return copy.deepcopy(kernel).to(torch.float64), what


def _check_gram(kernel: Kernel, what: str, X: torch.Tensor) -> tuple[torch.Tensor, float]:
    """K(X) is [N, N], symmetric and positive semi-definite; (K, the scale tolerances are relative to)."""
    N = X.shape[0]
    K = kernel.K(X)
    if tuple(K.shape) != (N, N):
        _fail(what, "shapes", f"K(X) for X of shape {tuple(X.shape)} has shape {tuple(K.shape)}; expected ({N}, {N})")
    scale = max(1.0, float(K.abs().max()))
    asym = float((K - K.T).abs().max())
    if asym > 1e-10 * scale:
        _fail(what, "symmetry", f"K(X) differs from its transpose by up to {asym:.3g}; k(x, x') must equal k(x', x)")
    eig = torch.linalg.eigvalsh(0.5 * (K + K.T))
    if float(eig.min()) < -1e-8 * max(1.0, float(eig.max())):
        _fail(what, "PSD", f"the Gram matrix of {N} random inputs has eigenvalue {float(eig.min()):.3g} (largest "
                           f"{float(eig.max()):.3g}); a kernel's Gram matrices must be positive semi-definite")
    return K, scale


def _check_diagonal(kernel: Kernel, what: str, X: torch.Tensor, K: torch.Tensor, scale: float) -> None:
    """K_diag(X) is [N] and equals the diagonal of K(X)."""
    N = X.shape[0]
    diag = kernel.K_diag(X)
    if tuple(diag.shape) != (N,):
        _fail(what, "diagonal", f"K_diag(X) has shape {tuple(diag.shape)}; expected ({N},)")
    gap = float((diag - K.diagonal()).abs().max())
    if gap > 1e-8 * scale:
        _fail(what, "diagonal", f"K_diag(X) differs from the diagonal of K(X) by up to {gap:.3g}")


def _check_cross_and_shapes(kernel: Kernel, what: str, X, X2, K, scale: float) -> None:
    """K(X, X2) is [N, N2] and the off-diagonal block of K([X; X2]); image inputs [N, C, H, W] give K(X)."""
    N, N2, input_dim = X.shape[0], X2.shape[0], X.shape[1]
    cross = kernel.K(X, X2)
    if tuple(cross.shape) != (N, N2):
        _fail(what, "shapes", f"K(X, X2) for {N} and {N2} inputs has shape {tuple(cross.shape)}; expected "
                              f"({N}, {N2})")
    block = kernel.K(torch.cat([X, X2]))[:N, N:]
    if float((cross - block).abs().max()) > 1e-8 * scale:
        _fail(what, "shapes", "K(X, X2) differs from the off-diagonal block of K([X; X2])")
    images = kernel.K(X.reshape(N, 1, 1, input_dim))
    if float((images - K).abs().max()) > 1e-8 * scale:
        _fail(what, "shapes", "image inputs [N, C, H, W] give a different K than the same inputs flattened")


def _check_dtypes(kernel: Kernel, what: str, X: torch.Tensor) -> None:
    """K and K_diag follow their inputs' dtype, float32 and float64."""
    for dtype in (torch.float32, torch.float64):
        k = copy.deepcopy(kernel).to(dtype)
        out, out_diag = k.K(X.to(dtype)), k.K_diag(X.to(dtype))
        if out.dtype != dtype or out_diag.dtype != dtype:
            _fail(what, "dtypes", f"{dtype} inputs gave K in {out.dtype} and K_diag in {out_diag.dtype}; both "
                                  "should follow the inputs")


def _check_gradients(kernel: Kernel, what: str, X: torch.Tensor) -> None:
    """Every trainable hyper-parameter gets a finite gradient from K, at repeated inputs (r = 0) too."""
    k = copy.deepcopy(kernel)
    Xr = torch.cat([X[:10], X[:2]])  # repeated inputs: r = 0 off the diagonal too
    total = k.K(Xr).sum()
    trainable = [name for name, p in k.named_parameters() if p.requires_grad]
    if trainable and not total.requires_grad:
        _fail(what, "gradients", f"K does not depend on its hyper-parameters ({', '.join(trainable)}) in autograd; "
                                 "K must be differentiable in its parameters (is a result detached?)")
    if total.requires_grad:
        total.backward()
    for name, p in k.named_parameters():
        if p.requires_grad and (p.grad is None or not torch.isfinite(p.grad).all()):
            state = "no gradient" if p.grad is None else "a non-finite gradient"
            _fail(what, "gradients", f"hyper-parameter {name!r} gets {state} from K (at repeated inputs too); "
                                     "K must be differentiable in its parameters")


__all__ = ["check_kernel", "KernelContractError", "PROPERTIES"]
