"""q(u) → q(f): the marginals of f at new inputs given K_uf, the Cholesky factor of K_uu and q(u).

With L_uu the Cholesky factor of K_uu (block by block when K_uu is block diagonal, van der Wilk, Rasmussen & Hensman
2017 eq. C.23–C.24), W = L_uu⁻¹ K_uf and A = W (whitened) or A = K_uu⁻¹ K_uf = L_uu⁻ᵀ W (unwhitened),

    mean = Aᵀ m,   var_l = k_ff − ‖W‖²_col + ‖L_lᵀ A‖²_col                      (`marginals`)

Only the marginal variances are formed; nothing of size [N, N] is built. The q(u) form supplies Lᵀ A
(`InducingGaussian.t_matmul`), so the same lines serve the full, diagonal and block forms.

For a function averaged over an orbit (van der Wilk et al. 2018, eq. 16–21; appendix B), K_uf holds one column per
sample, [M, N, S], and the moments of f(x_n) are estimated from the same S samples with the pair estimator Î of
`invlab.kernels.invariant` (h_ns = a_nsᵀ m, a_ns the columns of A, w_ns those of W):

    μ̂_n  = (1/S) Σ_s h_ns,   μ²̂_n = Î[h_ns h_ns'],
    σ²̂_n = k̂_f(x_n, x_n) − Î[w_nsᵀ w_ns'] + Î[(Lᵀ a_ns)ᵀ (Lᵀ a_ns')]              (`orbit_moments`)

With S = 1 sample of a one-element "orbit" these are the plain marginals (and μ²̂ = μ̂²).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..kernels.invariant import pair_estimate
from ..linalg import BlockFactors


def whitened_projections(Kuf: torch.Tensor, prior: torch.Tensor | BlockFactors, whiten: bool = True):
    """(W = L_uu⁻¹ K_uf, A) for Kuf [M, K]: A = W whitened, L_uu⁻ᵀ W otherwise. Both [M, K]."""
    prior = BlockFactors.of(prior)
    W = prior.solve(Kuf)
    return W, (W if whiten else prior.solve_t(W))


def marginals(W: torch.Tensor, A: torch.Tensor, Kff_diag: torch.Tensor, q) -> tuple[torch.Tensor, torch.Tensor]:
    """mean, var [N, L] of q(f) from W, A [M, N], k_ff [N] and q(u) (anything with `q_mu` [M, L] and `t_matmul`)."""
    mean = A.T @ q.q_mu  # [N, L]
    var = Kff_diag[:, None] - (W ** 2).sum(0)[:, None] + (q.t_matmul(A) ** 2).sum(1).T  # [N, L]
    return mean, var


def orbit_moments(W: torch.Tensor, A: torch.Tensor, kff: torch.Tensor, q, P: int | None):
    """Unbiased μ̂, μ²̂, σ²̂ [N, L] of q(f(x_n)) from per-sample W, A [M, N, S], the estimate k̂_f [N], q(u) and the
    orbit size P (None for a density; see `invlab.kernels.invariant.pair_weights`)."""
    M, N, S = W.shape
    L = q.q_mu.shape[1]
    h = (A.reshape(M, N * S).T @ q.q_mu).reshape(N, S, L)  # per-sample means
    mu = h.mean(1)  # [N, L]
    mu2 = pair_estimate(h.sum(1) ** 2, (h ** 2).sum(1), S, P)  # [N, L]
    prior_term = pair_estimate((W.sum(2) ** 2).sum(0), (W ** 2).sum((0, 2)), S, P)  # [N]: k_fu K_uu⁻¹ k_uf
    LtA = q.t_matmul(A.reshape(M, N * S)).reshape(L, M, N, S)  # [L, M, N, S]
    q_term = pair_estimate((LtA.sum(3) ** 2).sum(1), (LtA ** 2).sum((1, 3)), S, P)  # [L, N]: k_fu K⁻¹ S K⁻¹ k_uf
    var = kff[:, None] - prior_term[:, None] + q_term.T  # [N, L]
    return mu, mu2, var


# -- the same from plain tensors (m, L) --------------------------------------------------------------------------------
@dataclass
class GaussianTensors:
    """q(u) given as tensors: q_mu [M, L] and q_sqrt, a factor [L, M, M] or the diagonals of one [L, M]."""

    q_mu: torch.Tensor
    q_sqrt: torch.Tensor

    def t_matmul(self, A: torch.Tensor) -> torch.Tensor:  # Lᵀ A: [M, K] → [L, M, K]
        """Lᵀ A for the Cholesky factor L of q(u)'s covariance: A [M, K] → [L, M, K] (diagonal or full factor)."""
        if self.q_sqrt.dim() == 2:
            return self.q_sqrt[:, :, None] * A
        return self.q_sqrt.transpose(-1, -2) @ A


def project(Kuf: torch.Tensor, Luu: torch.Tensor | BlockFactors, Kff_diag: torch.Tensor, q_mu: torch.Tensor,
            q_sqrt: torch.Tensor, whiten: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Kuf [M, N], Luu [M, M] (or block factors), Kff_diag [N], q_mu [M, L], q_sqrt [L, M, M] (or its diagonals
    [L, M]) → mean [N, L], var [N, L]."""
    W, A = whitened_projections(Kuf, Luu, whiten)
    return marginals(W, A, Kff_diag, GaussianTensors(q_mu, q_sqrt))


def sampled_moments(Kuf: torch.Tensor, Luu: torch.Tensor | BlockFactors, kff: torch.Tensor, q_mu: torch.Tensor,
                    q_sqrt: torch.Tensor, whiten: bool, P: int | None):
    """Unbiased μ̂, μ²̂, σ²̂ of q(f(x_n)) from per-sample K_uf [M, N, S], chol(K_uu) [M, M], k̂_f [N],
    q_mu [M, L], q_sqrt [L, M, M] (or its diagonals [L, M]). Returns three [N, L] tensors."""
    M, N, S = Kuf.shape
    W, A = whitened_projections(Kuf.reshape(M, N * S), Luu, whiten)  # [M, N·S] each
    return orbit_moments(W.reshape(M, N, S), A.reshape(M, N, S), kff, GaussianTensors(q_mu, q_sqrt), P)
