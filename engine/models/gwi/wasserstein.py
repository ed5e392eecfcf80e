"""The 2-Wasserstein estimate between the reference P and the approximation Q (Wild, Hu & Sejdinovic 2022, sec. 2.1.2).

For Gaussian measures on L²(X, ρ),
    W₂²(P, Q) = ‖m_P − m_Q‖² + tr C_P + tr C_Q − 2 tr[(C_P^½ C_Q C_P^½)^½],
and with ρ replaced by the empirical measure of the N points X (a minibatch in training),
    Ŵ² = (1/N) Σ_n (m_P − m_Q)²(x_n) + (1/N) Σ_n k(x_n, x_n) + (1/N) Σ_n r(x_n, x_n) − 2 Σ_s √λ_s,
where λ_s estimate the spectrum of C_Q C_P on a sub-sample X_S ⊂ X of N_S points. These four numbers are
the `mean`, `trace_p`, `trace_q` and `eigen` (= Σ √λ_s) parts reported while training.

**The spectrum, and why it is real.** The paper's estimate (sec. 2.1.2) is λ_s = λ_s(r(X_S, X) k(X, X_S)) /
(N·N_S). With X_S = X that matrix is R K, a product of two PSD matrices, and its eigenvalues equal those of
the symmetric PSD matrix K^½ R K^½ (eig(AB) = eig(B^½ A B^½) for PSD B): we compute them with `eigvalsh`,
real and non-negative by construction (negatives from rounding are clipped). With X_S ⊊ X, however,
r(X_S, X) k(X, X_S) is the N_S×N_S principal block of the non-symmetric R K — a product of three PSD factors
(R, K and the sampling projection) — and no similarity transform makes it symmetric: it can and does have
complex eigenvalues (relative imaginary parts up to 1e-3 on `diabetes`, see tests/models/test_gwi.py and
benchmarks/gwi/README.md). Two estimators are therefore offered (`method`):

- `subsample` (default): take the principal block of *both* covariances, λ_s = λ_s(r(X_S, X_S) k(X_S, X_S)) / N_S²,
  i.e. the spectrum of C_Q C_P under the empirical measure of X_S. Computed as eig(K_SS^½ R_SS K_SS^½): real,
  ≥ 0, with a stable gradient (P is frozen, so K_SS^½ is a constant and only `eigvalsh` is differentiated).
  It equals the paper's estimate when X_S = X, and at Q = P it gives Σ√λ_s = mean k(x_s, x_s), so for a
  stationary kernel Ŵ² vanishes at Q = P on every sub-sample.
- `paper`: the paper's matrix as written, eigenvalues by the general (non-symmetric) solver; the real parts,
  clipped at zero, are used and the largest relative imaginary part is reported (`imag`). Identical to
  `subsample` when N_S ≥ N. At Q = P it does not vanish on a sub-sample (Ŵ² > 0).

On a sub-sample both are biased estimates of the full-data term, in opposite directions: for a trained Q on
`diabetes` the `subsample` term is high and the `paper` term low, by amounts that shrink with N_S
(benchmarks/gwi/README.md, `python -m benchmarks.gwi.spectrum`).

Square roots of eigenvalues below N_S·eps·λ_max (rounding level) count as zero with zero gradient: the
derivative 1/(2√λ) of such noise would otherwise dominate the gradient.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ...errors import ConfigError

METHODS = ("subsample", "paper")


@dataclass
class W2Estimate:
    """Parts of Ŵ² per latent function [L]; `spectrum` [L, N_S] the λ_s of the operator estimate."""

    mean: torch.Tensor
    trace_p: torch.Tensor
    trace_q: torch.Tensor
    eigen: torch.Tensor  # Σ_s √λ_s, the estimate of tr[(C_P^½ C_Q C_P^½)^½]
    spectrum: torch.Tensor
    imag: torch.Tensor | None = None  # `paper` with X_S ⊊ X: max |Im λ| / max |λ| per latent

    @property
    def total(self) -> torch.Tensor:  # [L]
        """Ŵ²(P, Q) per output [L]: the squared mean distance plus tr(C_P) + tr(C_Q) − 2 tr((C_P^{1/2} C_Q
        C_P^{1/2})^{1/2}) (Wild, Hu & Sejdinovic, 2022, sec. 2.1.2)."""
        return self.mean + self.trace_p + self.trace_q - 2.0 * self.eigen


def psd_sqrt(K: torch.Tensor) -> torch.Tensor:
    """Symmetric PSD square root by an eigendecomposition; eigenvalues below zero (rounding) are clipped."""
    evals, V = torch.linalg.eigh(0.5 * (K + K.transpose(-1, -2)))
    return (V * evals.clamp_min(0.0).sqrt().unsqueeze(-2)) @ V.transpose(-1, -2)


def psd_product_eigenvalues(A: torch.Tensor, B_sqrt: torch.Tensor) -> torch.Tensor:
    """Eigenvalues of A B for symmetric PSD A [..., S, S] and B = B_sqrt², as those of B^½ A B^½: real, ≥ 0."""
    C = B_sqrt @ A @ B_sqrt
    return torch.linalg.eigvalsh(0.5 * (C + C.transpose(-1, -2))).clamp_min(0.0)


def general_eigenvalues(C: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Real parts (clipped at 0) of the eigenvalues of a square non-symmetric C [..., S, S], and max|Im| / max|λ|."""
    ev = torch.linalg.eigvals(C)
    scale = ev.abs().amax(-1).clamp_min(torch.finfo(C.dtype).tiny)
    return ev.real.clamp_min(0.0), (ev.imag.abs().amax(-1) / scale).detach()


def sum_sqrt(lam: torch.Tensor) -> torch.Tensor:
    """Σ_s √λ_s over the last axis, ignoring eigenvalues at rounding level (value and gradient zero there)."""
    tol = (lam.shape[-1] * torch.finfo(lam.dtype).eps * lam.detach().amax(-1, keepdim=True)).clamp_min(
        torch.finfo(lam.dtype).tiny)
    keep = lam > tol
    safe = torch.where(keep, lam, torch.ones_like(lam))
    return torch.where(keep, safe.sqrt(), torch.zeros_like(lam)).sum(-1)


def wasserstein_estimate(kernel, Q, X: torch.Tensor, mean_q: torch.Tensor, var_q: torch.Tensor, Luu: torch.Tensor, *,
                         num_spectrum: int, method: str = "subsample", index: torch.Tensor | None = None,
                         mean_p: torch.Tensor | None = None) -> W2Estimate:
    """Ŵ²(P, Q) on the points X [N, ...] with Q's marginals there (mean_q, var_q [N, L]).

    X_S = X[index]; by default N_S = min(num_spectrum, N) points drawn without replacement (all of X when
    num_spectrum ≥ N). P has mean `mean_p` (default 0) and the frozen kernel `kernel`; its Gram matrices
    are treated as constants.
    """
    if method not in METHODS:
        raise ConfigError(f"unknown W2 spectrum method {method!r}; choose one of {', '.join(METHODS)}")
    N = X.shape[0]
    if index is None:
        S = min(int(num_spectrum), N)
        index = (torch.randperm(N, device=X.device)[:S] if S < N else torch.arange(N, device=X.device))
    S = index.shape[0]
    m_p = torch.zeros_like(mean_q) if mean_p is None else mean_p.reshape(mean_q.shape)
    L = mean_q.shape[1]
    mean_term = ((m_p - mean_q) ** 2).mean(0)  # [L]
    trace_p = kernel.K_diag(X).mean().expand(L)
    trace_q = var_q.mean(0)
    Xs = X.index_select(0, index)
    imag = None
    if method == "subsample" or S == N:
        Kh = psd_sqrt(kernel.K(Xs).detach())  # [S, S], constant: P is frozen
        R = Q.covariance(Xs, None, Luu)  # [L, S, S]
        spectrum = psd_product_eigenvalues(R, Kh) / (S * S)
    else:
        C = Q.covariance(Xs, X, Luu) @ kernel.K(X, Xs).detach()  # [L, S, S] = r(X_S, X) k(X, X_S)
        lam, imag = general_eigenvalues(C)
        spectrum = lam / (N * S)
    return W2Estimate(mean_term, trace_p, trace_q, sum_sqrt(spectrum), spectrum, imag)
