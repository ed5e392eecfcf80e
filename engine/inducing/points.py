"""Inducing points: u = f(Z) (`InducingPoints`), or u = g(Z) in the space of the function an orbit kernel sums
(`InterDomainPoints`), and the usual initialisation of their locations from the data."""
from __future__ import annotations

import torch
from torch import nn

from ..errors import ShapeError


class InducingVariables(nn.Module):
    """Base class; `num_inducing` is M."""

    @property
    def num_inducing(self) -> int:  # pragma: no cover - abstract
        """M, the number of inducing outputs u."""
        raise NotImplementedError

    def __len__(self) -> int:
        return self.num_inducing


class InducingPoints(InducingVariables):
    """u = f(Z) at learnable locations Z `[M, D]` (images are flattened to D = C·H·W)."""

    def __init__(self, Z, learnable: bool = True):
        super().__init__()
        Z = torch.as_tensor(Z, dtype=torch.float64)
        if Z.dim() < 2 or Z.shape[0] == 0:
            raise ShapeError(f"inducing locations must be [M, D] with M ≥ 1, got shape {tuple(Z.shape)}")
        self.Z = nn.Parameter(Z.reshape(Z.shape[0], -1).clone(), requires_grad=learnable)

    @property
    def num_inducing(self) -> int:
        """M, the number of inducing points (rows of Z)."""
        return self.Z.shape[0]

    @property
    def frozen(self) -> bool:
        """Whether the locations Z are frozen (not learned); setting it turns their gradient off or on."""
        return not self.Z.requires_grad

    @frozen.setter
    def frozen(self, flag: bool) -> None:
        self.Z.requires_grad_(not flag)


class InterDomainPoints(InducingPoints):
    """u = g(Z): inducing points in the space of the function g that an orbit kernel sums (patches, images).

    With an `OrbitKernel` k_f = Σ w w' k_g, K_uu = k_g(Z, Z) and K_uf = Σ_a w_a k_g(Z, x_a) (van der Wilk et al. 2018
    eq. 13, van der Wilk, Rasmussen & Hensman 2017 eq. 15): far cheaper than inducing points in the space of f, which
    would need orbit sums in K_uu.
    """


def initial_locations(X: torch.Tensor, M: int, generator: torch.Generator | None = None, *, kmeans_iters: int = 10
                      ) -> torch.Tensor:
    """M distinct training inputs refined by a few k-means (Lloyd) steps: a standard, cheap initialisation."""
    X = X.reshape(X.shape[0], -1)
    N = X.shape[0]
    if M > N:
        raise ShapeError(f"asked for M={M} inducing points but only N={N} training inputs are available; lower M")
    idx = torch.randperm(N, generator=generator)[:M]
    Z = X[idx].clone()
    for _ in range(kmeans_iters):
        assign = torch.cdist(X, Z).argmin(1)  # [N]
        counts = torch.bincount(assign, minlength=M).to(X.dtype)  # [M]
        sums = torch.zeros_like(Z).index_add_(0, assign, X)
        moved = counts > 0
        Z[moved] = sums[moved] / counts[moved, None]
    return Z


__all__ = ["InducingVariables", "InducingPoints", "InterDomainPoints", "initial_locations"]
