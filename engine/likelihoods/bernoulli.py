"""Bernoulli likelihood for binary labels y ∈ {0, 1}, with a probit or logistic link.

The ELBO's expectation E[log p(y | f)] is a one-dimensional integral whose integrand bends at f = 0 on a scale of 1:
it is computed by composite Gauss–Legendre with panels ending at the bend and around the Gaussian
(`quadrature.expectation_with_kinks`), accurate to 1e-6 for latent variances up to 1e4, where 20 Gauss–Hermite nodes
were off by 3.5e-2 at σ² = 100. The predictive probability is closed form for the probit link (Φ(μ/√(1+σ²))) and the
same panel rule for the logistic one.
"""
from __future__ import annotations

import torch
from torch.nn import functional as F

from ..errors import ConfigError
from .base import Likelihood
from .quadrature import PANEL_NODES, expectation_with_kinks


class Bernoulli(Likelihood):
    """Binary classification, p(y = 1 | f) = Φ(f) (probit) or σ(f) (logit); expectations by Gauss–Hermite quadrature
    split at the kinks."""
    is_classification = True

    def __init__(self, link: str = "probit", num_points: int = PANEL_NODES):
        super().__init__()
        if link not in ("probit", "logit"):
            raise ConfigError(f"Bernoulli link must be 'probit' or 'logit', got {link!r}")
        self.link = link
        self.num_points = num_points  # Gauss–Legendre nodes per panel

    def _log_link(self, z):
        return torch.special.log_ndtr(z) if self.link == "probit" else F.logsigmoid(z)

    def expected_log_prob(self, y, mean, var):
        """E_{q(f)}[log p(y | f)] [N] for y ∈ {0, 1} and marginals `mean`, `var` [N, 1], by quadrature."""
        sign = (2.0 * y.to(mean.dtype) - 1.0).reshape(-1, 1)  # [N, 1]: log p(y | f) = log link(sign · f)
        return expectation_with_kinks(self._log_link, sign * mean, var, n=self.num_points).sum(-1)

    def predict_probs(self, mean, var):
        """[p(y = 0), p(y = 1)] per point [N, 2]: Φ(μ / √(1 + σ²)) in closed form for the probit link, quadrature for
        the logit."""
        if self.link == "probit":
            p1 = torch.special.ndtr(mean / torch.sqrt(1.0 + var))
        else:
            p1 = expectation_with_kinks(torch.sigmoid, mean, var, n=self.num_points)
        p1 = p1.reshape(-1)
        return torch.stack([1.0 - p1, p1], dim=-1)  # [N, 2]
