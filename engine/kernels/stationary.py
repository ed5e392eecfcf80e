"""Stationary leaf kernels, k(x, x') = σ² κ(r²): each is defined by its profile κ alone (GPflow style).

Each also gives κ and its first two derivatives in r², `K_r2_derivatives(r2) -> (κ, dκ/dr², d²κ/d(r²)²)`, in
closed form. Neither depends on the kernel's parameters (those scale r² and κ), so both can be called on the class.
They are the one definition of the profile that the rest of the engine uses: the fast patch covariances of
convolutional kernels (`invlab.covariances.patches`, van der Wilk, Rasmussen & Hensman 2017 app. A.2) take κ and κ' from
here, the RKHS derivative functionals (`invlab.models.rkhs.functionals`, Zhang, Lee & Teh 2013 eq. 6–8) κ, κ' and κ'',
and the squared exponential kernel on Gram matrices (`gram.py`, Aitchison, Yang & Ober 2021 eq. 16–17) the RBF's κ.
"""
from __future__ import annotations

import math

import torch

from .base import Stationary


class RBF(Stationary):
    """Squared exponential: σ² exp(−r²/2)."""

    rate = -0.5  # κ(r²) = exp(rate · r²), so κ' = rate·κ and κ'' = rate²·κ

    @classmethod
    def K_r2(cls, r2):
        """The RBF profile κ(r²) = exp(−r²/2) of the scaled squared distance."""
        return torch.exp(cls.rate * r2)

    @classmethod
    def K_r2_derivatives(cls, r2):
        """κ(r²), κ'(r²) and κ''(r²) of the RBF profile, for the patch covariances' own gradients."""
        k = torch.exp(cls.rate * r2)
        return k, cls.rate * k, cls.rate**2 * k


class Matern52(Stationary):
    """Matérn 5/2: σ² (1 + √5 r + 5r²/3) exp(−√5 r)."""

    @staticmethod
    def K_r2(r2):
        """The Matérn-5/2 profile κ(r²) = (1 + √5 r + 5r²/3) exp(−√5 r) of the scaled squared distance."""
        # sqrt at r2 = 0 has an infinite derivative; the clamp keeps gradients finite on the diagonal
        r = torch.sqrt(r2.clamp_min(1e-36))
        s5r = math.sqrt(5.0) * r
        return (1.0 + s5r + 5.0 / 3.0 * r2) * torch.exp(-s5r)

    @staticmethod
    def K_r2_derivatives(r2):
        """κ(r²), κ'(r²) and κ''(r²) of the Matérn-5/2 profile in closed form (smooth at r = 0)."""
        # κ(a) = (1 + a + a²/3) e^{−a} with a = √5 r; in r²: κ' = −(5/6)(1 + a) e^{−a}, κ'' = (25/12) e^{−a},
        # both smooth at r = 0 (unlike autograd through the clamped square root of `K_r2`).
        a = torch.sqrt(5.0 * r2.clamp_min(0.0))
        e = torch.exp(-a)
        return (1.0 + a + a * a / 3.0) * e, -(5.0 / 6.0) * (1.0 + a) * e, (25.0 / 12.0) * e
