"""Bernoulli likelihood for binary labels y ∈ {0, 1}, with a probit or logistic link.

The ELBO's expectation uses Gauss–Hermite quadrature for both links; the predictive probability is
closed form for the probit link (Φ(μ/√(1+σ²))) and quadrature for the logistic one.
"""
from __future__ import annotations

import torch
from torch.nn import functional as F

from ..errors import ConfigError
from .base import Likelihood
from .quadrature import gauss_hermite_expectation


class Bernoulli(Likelihood):
    is_classification = True

    def __init__(self, link: str = "probit", num_points: int = 20):
        super().__init__()
        if link not in ("probit", "logit"):
            raise ConfigError(f"Bernoulli link must be 'probit' or 'logit', got {link!r}")
        self.link = link
        self.num_points = num_points

    def _log_p(self, sign, f):
        # log p(y | f) with sign = 2y − 1
        z = sign * f
        return torch.special.log_ndtr(z) if self.link == "probit" else F.logsigmoid(z)

    def expected_log_prob(self, y, mean, var):
        sign = (2.0 * y.to(mean.dtype) - 1.0).reshape(-1, 1, 1)  # [N, 1, 1]
        return gauss_hermite_expectation(lambda f: self._log_p(sign, f), mean, var, self.num_points).sum(-1)

    def predict_probs(self, mean, var):
        if self.link == "probit":
            p1 = torch.special.ndtr(mean / torch.sqrt(1.0 + var))
        else:
            p1 = gauss_hermite_expectation(torch.sigmoid, mean, var, self.num_points)
        p1 = p1.reshape(-1)
        return torch.stack([1.0 - p1, p1], dim=-1)  # [N, 2]
