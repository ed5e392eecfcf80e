"""Likelihood interface: how q(f) meets the data.

Every likelihood gives
- `expected_log_prob(y, mean, var)`: Σ over outputs of E_{q(f)}[log p(y | f)], shape `[N]`, for the ELBO;
- `log_predictive_density(y, mean, var)`: log ∫ p(y | f) q(f) df, shape `[N]`, for test NLPD;
- `predict(mean, var)`: predictive moments (regression) or class probabilities `[N, K]` (classification).
`mean` and `var` are the marginals of q(f), `[N, L]`. `encode(y)` turns dataset labels into the targets
the likelihood expects.
"""
from __future__ import annotations

import torch
from torch import nn


class Likelihood(nn.Module):
    """Base of the likelihoods p(y | f): the expected log density under Gaussian marginals q(f) (the ELBO's data term),
    the log predictive density, and predicted class probabilities."""
    is_classification = False

    def num_latent(self, num_classes: int | None) -> int:
        """L, the number of latent functions this likelihood needs for `num_classes` classes (1 unless overridden)."""
        return 1

    def encode(self, y: torch.Tensor) -> torch.Tensor:
        """Targets as the likelihood reads them (class indices, a one-hot matrix, or a column of values)."""
        return y

    def expected_log_prob(self, y, mean, var) -> torch.Tensor:  # pragma: no cover - abstract
        """E_{q(f)}[log p(y | f)] per point [N], for marginals q(f) with `mean` and `var` [N, L]."""
        raise NotImplementedError

    def log_predictive_density(self, y, mean, var) -> torch.Tensor:
        """log p(y | data) per point [N] for the predictive marginals `mean`, `var` [N, L]; for classes, the log of the
        predicted probability of y."""
        probs = self.predict_probs(mean, var)
        return torch.log(probs.gather(1, y.long().reshape(-1, 1)).squeeze(1).clamp_min(1e-300))

    def predict_probs(self, mean, var) -> torch.Tensor:  # pragma: no cover - abstract
        """Predicted class probabilities [N, K] under the marginals `mean`, `var` [N, L]."""
        raise NotImplementedError
