"""Robust-max multi-class likelihood (Hernández-Lobato et al. 2011; paper 003 sec. 3–4).

p(y = j | f) = 1 − ε if j = argmax_k f_k, else ε / (K − 1). Under independent Gaussian marginals the
ELBO term needs only S(x, y) = P(f_y is the largest), a one-dimensional Gauss–Hermite integral whose
nodes are scaled by the standard deviation of f_y.
"""
from __future__ import annotations

import math

from ..errors import ConfigError
from .base import Likelihood
from .quadrature import prob_is_largest, prob_is_largest_at


class RobustMax(Likelihood):
    is_classification = True

    def __init__(self, num_classes: int, epsilon: float = 1e-3, num_points: int = 64):
        super().__init__()
        if num_classes < 2:
            raise ConfigError(f"robust-max needs at least 2 classes, got {num_classes}")
        if not 0.0 < epsilon < 1.0:
            raise ConfigError(f"robust-max epsilon must lie in (0, 1), got {epsilon}")
        self.num_classes = num_classes
        self.epsilon = float(epsilon)
        self.num_points = num_points

    def num_latent(self, num_classes):
        return self.num_classes

    def _log_weights(self):
        return math.log1p(-self.epsilon), math.log(self.epsilon / (self.num_classes - 1))

    def expected_log_prob(self, y, mean, var):
        S = prob_is_largest_at(mean, var, y, self.num_points)  # [N]
        hit, miss = self._log_weights()
        return S * hit + (1.0 - S) * miss

    def predict_probs(self, mean, var):
        S = prob_is_largest(mean, var, self.num_points)  # [N, K]
        S = S / S.sum(-1, keepdim=True)  # exact values sum to one; removes the shared quadrature error
        return (1.0 - self.epsilon) * S + self.epsilon / (self.num_classes - 1) * (1.0 - S)
