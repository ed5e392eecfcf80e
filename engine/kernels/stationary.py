"""Stationary leaf kernels: each defines only κ(r²) (GPflow style)."""
from __future__ import annotations

import math

import torch

from .base import Stationary


class RBF(Stationary):
    """Squared exponential: σ² exp(−r²/2)."""

    def K_r2(self, r2):
        return torch.exp(-0.5 * r2)


class Matern52(Stationary):
    """Matérn 5/2: σ² (1 + √5 r + 5r²/3) exp(−√5 r)."""

    def K_r2(self, r2):
        # sqrt at r2 = 0 has an infinite derivative; the clamp keeps gradients finite on the diagonal
        r = torch.sqrt(r2.clamp_min(1e-36))
        s5r = math.sqrt(5.0) * r
        return (1.0 + s5r + 5.0 / 3.0 * r2) * torch.exp(-s5r)
