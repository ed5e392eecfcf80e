"""Kernels built from other kernels: sums of independent GPs and sums over the channel slices of an input.

- `Sum`: f = Σ_i f_i of independent GPs f_i ~ GP(0, k_i), so k = Σ_i k_i; e.g. a weighted convolutional kernel
  plus an RBF (van der Wilk, Rasmussen & Hensman 2017, "Convolutional Gaussian Processes", van der Wilk, Rasmussen &
  Hensman 2017, sec. 3.3).
- `ChannelAdditive`: k(z, z') = Σ_c k_c(z_c, z'_c) over the C equal slices of z, one stationary kernel per slice:
  the additive patch kernel k_g̃ = Σ_c σ_c² κ_c of van der Wilk, Rasmussen & Hensman 2017's colour-additive variant (eq.
  24–25).

With `InducingBlocks` (one block per part of a `Sum`) K_uu is block diagonal; the covariances are registered in
`invlab.covariances.patches`.
"""
from __future__ import annotations

from torch import nn

from ..errors import ShapeError
from .base import Kernel, Stationary


class ChannelAdditive(Kernel):
    """k(z, z') = Σ_c σ_c² κ(‖z_c − z'_c‖² / ℓ_c²) over the C channel slices of a colour patch (van der Wilk, Rasmussen
    & Hensman 2017 eq. 25).

    One stationary kernel per channel; its variance σ_c² plays w_c² of eq. 24 (w_pc = w_p w_c).
    """

    def __init__(self, parts: list[Stationary]):
        super().__init__()
        self.parts = nn.ModuleList(parts)

    @property
    def num_channels(self) -> int:
        """C, the number of channels, one part kernel each."""
        return len(self.parts)

    def slices(self, E: int) -> list[slice]:
        """The slices of a patch of length E that belong to each channel (E must be divisible by C)."""
        if E % self.num_channels:
            raise ShapeError(f"ChannelAdditive over {self.num_channels} channels needs E divisible by it, got E={E}")
        e = E // self.num_channels
        return [slice(c * e, (c + 1) * e) for c in range(self.num_channels)]

    def _K(self, X, X2):
        return sum(k.K(X[:, s], X2[:, s]) for k, s in zip(self.parts, self.slices(X.shape[1])))

    def _K_diag(self, X):
        return sum(k.K_diag(X[:, s]) for k, s in zip(self.parts, self.slices(X.shape[1])))


class Sum(Kernel):
    """f = Σ_i f_i with independent f_i ~ GP(0, k_i): k = Σ_i k_i. Parts see the raw inputs (images stay images).

    With `InducingBlocks` (one block per part) K_uu is block diagonal (van der Wilk, Rasmussen & Hensman 2017 sec. 3.3
    and app. C).
    """

    def __init__(self, parts: list[Kernel]):
        super().__init__()
        self.parts = nn.ModuleList(parts)

    def K(self, X, X2=None):
        """Σ_i k_i(X, X2) over the parts [N, N2]."""
        return sum(k.K(X, X2) for k in self.parts)

    def K_diag(self, X):
        """Σ_i k_i(x, x) over the parts [N]."""
        return sum(k.K_diag(X) for k in self.parts)


__all__ = ["Sum", "ChannelAdditive"]
