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
    is_classification = False

    def num_latent(self, num_classes: int | None) -> int:
        return 1

    def encode(self, y: torch.Tensor) -> torch.Tensor:
        return y

    def expected_log_prob(self, y, mean, var) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def log_predictive_density(self, y, mean, var) -> torch.Tensor:
        probs = self.predict_probs(mean, var)
        return torch.log(probs.gather(1, y.long().reshape(-1, 1)).squeeze(1).clamp_min(1e-300))

    def predict_probs(self, mean, var) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError
