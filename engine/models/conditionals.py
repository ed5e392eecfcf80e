"""q(u) → q(f): the marginals of f at new inputs given K_uf, the Cholesky factor of K_uu and q(u).

With A = L_uu⁻¹ K_uf (whitened) or A = K_uu⁻¹ K_uf (unwhitened),
    mean = Aᵀ m,   var_l = k_ff − ‖L_uu⁻¹ K_uf‖²_col + ‖L_lᵀ A‖²_col.
Only the marginal variances are formed; nothing of size [N, N] is built.
"""
from __future__ import annotations

import torch


def project(Kuf: torch.Tensor, Luu: torch.Tensor, Kff_diag: torch.Tensor, q_mu: torch.Tensor, q_sqrt: torch.Tensor,
            whiten: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Kuf [M, N], Luu [M, M], Kff_diag [N], q_mu [M, L], q_sqrt [L, M, M] (or its diagonals [L, M]) → mean [N, L], var [N, L]."""
    W = torch.linalg.solve_triangular(Luu, Kuf, upper=False)  # [M, N] = L⁻¹ K_uf
    A = W if whiten else torch.linalg.solve_triangular(Luu.T, W, upper=True)  # [M, N]
    return _moments(W, A, Kff_diag, q_mu, q_sqrt)


def project_whitened(W: torch.Tensor, Kff_diag: torch.Tensor, q_mu: torch.Tensor, q_sqrt: torch.Tensor):
    """The whitened case given W = L⁻¹ K_uf directly [M, N] → mean [N, L], var [N, L]."""
    return _moments(W, W, Kff_diag, q_mu, q_sqrt)


def _moments(W, A, Kff_diag, q_mu, q_sqrt):
    mean = A.T @ q_mu  # [N, L]
    if q_sqrt.dim() == 2:  # mean-field: q_sqrt holds the diagonals [L, M]
        LtA = q_sqrt[:, :, None] * A  # [L, M, N]
    else:
        LtA = q_sqrt.transpose(-1, -2) @ A  # [L, M, N]
    var = Kff_diag[:, None] - (W ** 2).sum(0)[:, None] + (LtA ** 2).sum(1).T  # [N, L]
    return mean, var
