"""Linear algebra with the failure handling GP code needs: Cholesky with escalating jitter."""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch

from . import settings
from .errors import NumericalError


@dataclass
class CholeskyResult:
    L: torch.Tensor
    jitter: float  # the jitter actually added (≥ the requested one)
    escalated: bool


def robust_cholesky(K: torch.Tensor, jitter: float | None = None, *, what: str = "K_uu") -> CholeskyResult:
    """Cholesky of K + jitter·I, multiplying the jitter by 10 on failure up to `settings.MAX_JITTER`.

    The success check reads one flag back from the device: Cholesky needs it anyway (a failed
    factorisation must not flow silently into the loss), and torch's own error check costs the same.
    """
    requested = settings.default_jitter() if jitter is None else float(jitter)
    j = requested
    eye = torch.eye(K.shape[-1], dtype=K.dtype, device=K.device)
    while True:
        L, info = torch.linalg.cholesky_ex(K + j * eye if j > 0 else K)
        if not bool((info != 0).any()) and bool(torch.isfinite(L).all()):
            if j > requested:
                warnings.warn(f"{what} was not positive definite with jitter {requested:g}; used {j:g}", RuntimeWarning,
                              stacklevel=2)
            return CholeskyResult(L, j, j > requested)
        if not bool(torch.isfinite(K).all()):
            raise NumericalError(f"{what} contains NaN or inf (the hyper-parameters have diverged); "
                                 "lower the learning rate or reset the run")
        if j >= settings.MAX_JITTER:
            raise NumericalError(f"Cholesky of {what} failed even with jitter {j:g}; the kernel matrix is far from positive "
                                 "definite: check the kernel hyper-parameters, or use fewer or more distinct inducing points")
        j = max(j * 10.0, 1e-10 * float(K.diagonal(dim1=-2, dim2=-1).abs().mean()) or 1e-10)


class _WhitenedSolve(torch.autograd.Function):
    """W = L⁻¹B with L = chol(K), differentiable in K and B, with a hand-written backward.

    Autograd would differentiate the triangular solve (producing L̄) and then the Cholesky factorisation
    separately; fused, the backward is two triangular solves and one product:
        B̄ = L⁻ᵀ Ḡ,    K̄ = −L⁻ᵀ sym(Φ(Ḡ Wᵀ)) L⁻¹,
    where Φ keeps the lower triangle and halves the diagonal (dW = −Φ(L⁻¹ dK L⁻ᵀ) W for symmetric dK).
    """

    @staticmethod
    def forward(ctx, K, B, L):
        W = torch.linalg.solve_triangular(L, B, upper=False)
        ctx.save_for_backward(L, W)
        return W

    @staticmethod
    def backward(ctx, G):
        L, W = ctx.saved_tensors
        Lt = L.transpose(-1, -2)
        B_bar = torch.linalg.solve_triangular(Lt, G, upper=True) if ctx.needs_input_grad[1] else None
        K_bar = None
        if ctx.needs_input_grad[0]:
            P = torch.tril(G @ W.transpose(-1, -2))
            P.diagonal(dim1=-2, dim2=-1).mul_(0.5)
            P = 0.5 * (P + P.transpose(-1, -2))
            Y = torch.linalg.solve_triangular(Lt, P, upper=True)  # L⁻ᵀ P
            K_bar = -torch.linalg.solve_triangular(Lt, Y.transpose(-1, -2), upper=True).transpose(-1, -2)  # · L⁻¹
        return K_bar, B_bar, None


def whitened_solve(K: torch.Tensor, B: torch.Tensor, jitter: float | None = None, *, what: str = "K_uu"):
    """(W = L⁻¹B, the jitter used) for L = chol(K + jitter·I), escalating the jitter as `robust_cholesky` does."""
    with torch.no_grad():
        result = robust_cholesky(K.detach(), jitter, what=what)
    if result.jitter > 0:
        K = K + result.jitter * torch.eye(K.shape[-1], dtype=K.dtype, device=K.device)
    return _WhitenedSolve.apply(K, B, result.L), result.jitter
