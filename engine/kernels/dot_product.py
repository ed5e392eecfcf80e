"""Dot-product kernels: linear, polynomial, and the arc-cosine kernels (Cho & Saul 2009).

The arc-cosine kernel of order 1 is the NNGP kernel of an infinitely wide ReLU layer; order 0 that of
a step-function layer. Both act on σ_w² x·x' + σ_b² so weight and bias variances are learnable.
"""
from __future__ import annotations

import math

import torch

from ..errors import ConfigError
from ..parameters import Positive, positive_init
from .base import Kernel


class Linear(Kernel):
    """σ² x·x' (+ optional offset c)."""

    def __init__(self, variance: float = 1.0, offset: float = 0.0):
        super().__init__()
        self.variance = Positive(positive_init(variance, "variance"), name="variance")
        self.offset = Positive(offset, floor=0.0, name="offset") if offset > 0 else None

    def _inner(self, X, X2):
        out = self.variance() * (X @ X2.T)
        return out + self.offset() if self.offset is not None else out

    def _K(self, X, X2):
        return self._inner(X, X2)

    def _K_diag(self, X):
        out = self.variance() * (X * X).sum(-1)
        return out + self.offset() if self.offset is not None else out


class Polynomial(Kernel):
    """(σ² x·x' + c)^p with integer degree p ≥ 1 and offset c ≥ 0."""

    def __init__(self, degree: int = 2, variance: float = 1.0, offset: float = 1.0):
        super().__init__()
        if int(degree) != degree or degree < 1:
            raise ConfigError(f"polynomial degree must be a positive integer, got {degree}")
        self.degree = int(degree)
        self.variance = Positive(positive_init(variance, "variance"), name="variance")
        self.offset = Positive(positive_init(offset, "offset"), floor=1e-9, name="offset")

    def _K(self, X, X2):
        return (self.variance() * (X @ X2.T) + self.offset()) ** self.degree

    def _K_diag(self, X):
        return (self.variance() * (X * X).sum(-1) + self.offset()) ** self.degree


class ArcCosine(Kernel):
    """Arc-cosine kernel of order 0 or 1 on the affine features σ_w² x·x' + σ_b², scaled by σ².

    k_n(x, x') = σ²/π · (‖x‖‖x'‖)^n · J_n(θ), J_0 = π − θ, J_1 = sin θ + (π − θ) cos θ,
    where norms and θ use the inner product σ_w² x·x' + σ_b². Order 1 with σ² = 1 equals
    2·E[relu(w·x+b) relu(w·x'+b)], so σ² = 1/2 gives the NNGP kernel of one ReLU layer.
    """

    def __init__(self, order: int = 1, variance: float = 1.0, weight_variance: float = 1.0, bias_variance: float = 1.0):
        super().__init__()
        if order not in (0, 1):
            raise ConfigError(f"arc-cosine order must be 0 or 1, got {order}")
        self.order = order
        self.variance = Positive(positive_init(variance, "variance"), name="variance")
        self.weight_variance = Positive(positive_init(weight_variance, "weight_variance"), name="weight_variance")
        self.bias_variance = Positive(positive_init(bias_variance, "bias_variance"), name="bias_variance")

    def _dot(self, X, X2):
        return self.weight_variance() * (X @ X2.T) + self.bias_variance()

    def _sqnorm(self, X):
        return self.weight_variance() * (X * X).sum(-1) + self.bias_variance()

    def _K(self, X, X2):
        dot = self._dot(X, X2)
        n1 = torch.sqrt(self._sqnorm(X))[:, None]
        n2 = torch.sqrt(self._sqnorm(X2))[None, :]
        # keep cos θ strictly inside (-1, 1): acos has an infinite derivative at ±1
        eps = 1e-12 if dot.dtype == torch.float64 else 1e-6
        cos_raw = dot / (n1 * n2)
        cos = cos_raw.clamp(-1.0 + eps, 1.0 - eps)
        theta = torch.acos(cos)
        # (anti)parallel inputs: exact angles, so the diagonal equals K_diag (zero gradient there instead of ∞)
        theta = torch.where(cos_raw >= 1.0 - eps, torch.zeros_like(theta), theta)
        theta = torch.where(cos_raw <= -1.0 + eps, torch.full_like(theta, math.pi), theta)
        cos = torch.cos(theta)
        if self.order == 0:
            J = math.pi - theta
            return self.variance() / math.pi * J
        J = torch.sin(theta) + (math.pi - theta) * cos
        return self.variance() / math.pi * n1 * n2 * J

    def _K_diag(self, X):
        if self.order == 0:
            return self.variance().expand(X.shape[0]).clone()
        return self.variance() * self._sqnorm(X)
