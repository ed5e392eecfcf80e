"""q(u) = N(m, S), S = LLᵀ, one Gaussian per output sharing the inducing inputs, and its KL to the prior.

The distribution may be whitened (u = L_uu v, prior p(v) = N(0, I)) or not (prior p(u) = N(0, K_uu));
this module only holds m and L and computes the KL for either case. q(u)→q(f) lives in `conditionals`.
"""
from __future__ import annotations

import torch
from torch import nn


class InducingGaussian(nn.Module):
    """What every form of q(u) shares: the mean m [M, L] (`q_mu`), hence M and the number of outputs L."""

    q_mu: nn.Parameter

    @property
    def num_inducing(self) -> int:
        return self.q_mu.shape[0]

    @property
    def num_latent(self) -> int:
        return self.q_mu.shape[1]


class VariationalDistribution(InducingGaussian):
    """m: [M, L]; L: [L, M, M] lower-triangular (full) or its diagonal [L, M] (mean-field)."""

    def __init__(self, num_inducing: int, num_latent: int, *, mean_field: bool = False, init_sqrt: torch.Tensor | None = None):
        super().__init__()
        M, L = num_inducing, num_latent
        self.mean_field = mean_field
        self.q_mu = nn.Parameter(torch.zeros(M, L, dtype=torch.float64))
        if mean_field:
            diag = torch.ones(L, M, dtype=torch.float64) if init_sqrt is None else init_sqrt.diagonal().expand(L, M).clone()
            self.q_sqrt_diag = nn.Parameter(diag)
        else:
            init = torch.eye(M, dtype=torch.float64) if init_sqrt is None else torch.as_tensor(init_sqrt, dtype=torch.float64)
            self.q_sqrt_raw = nn.Parameter(init.expand(L, M, M).clone())

    def sqrt(self) -> torch.Tensor:
        """L: [L, M, M] lower-triangular (only the lower triangle of the raw parameter is used)."""
        if self.mean_field:
            return torch.diag_embed(self.q_sqrt_diag)
        return torch.tril(self.q_sqrt_raw)

    def sqrt_diag(self) -> torch.Tensor:  # [L, M]
        return self.q_sqrt_diag if self.mean_field else self.q_sqrt_raw.diagonal(dim1=-2, dim2=-1)

    @torch.no_grad()
    def set(self, q_mu: torch.Tensor, q_sqrt: torch.Tensor) -> None:
        """Set m [M, L] and L [L, M, M] (e.g. to the optimal q(u) in closed form)."""
        self.q_mu.copy_(q_mu.reshape(self.q_mu.shape))
        if self.mean_field:
            self.q_sqrt_diag.copy_(q_sqrt.diagonal(dim1=-2, dim2=-1).reshape(self.q_sqrt_diag.shape))
        else:
            self.q_sqrt_raw.copy_(torch.tril(q_sqrt).expand_as(self.q_sqrt_raw))

    def kl(self, Lp: torch.Tensor | None = None) -> torch.Tensor:
        """KL(q(u) ‖ p(u)) summed over outputs; p = N(0, I) when `Lp` is None (whitened), else N(0, Lp Lpᵀ)."""
        M, L = self.num_inducing, self.num_latent
        logdet_q = torch.log(self.sqrt_diag() ** 2).sum()  # Σ_l log|S_l|
        if Lp is None:
            if self.mean_field:
                trace = (self.q_sqrt_diag ** 2).sum()
            else:
                trace = (self.sqrt() ** 2).sum()
            mahal = (self.q_mu ** 2).sum()
            return 0.5 * (trace + mahal - M * L - logdet_q)
        Lp_inv_m = torch.linalg.solve_triangular(Lp, self.q_mu, upper=False)  # [M, L]
        Lp_inv_S = torch.linalg.solve_triangular(Lp.expand(L, M, M), self.sqrt(), upper=False)  # [L, M, M]
        logdet_p = 2.0 * torch.log(Lp.diagonal()).sum() * L
        return 0.5 * ((Lp_inv_S ** 2).sum() + (Lp_inv_m ** 2).sum() - M * L + logdet_p - logdet_q)
