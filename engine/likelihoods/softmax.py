"""Softmax multi-class likelihood; expectations by reparameterised Monte Carlo (unbiased, differentiable)."""
from __future__ import annotations

import torch

from .base import Likelihood


class Softmax(Likelihood):
    """Softmax multi-class likelihood p(y = k | f) = exp(f_k) / Σ_j exp(f_j); expectations by Monte Carlo over the
    Gaussian marginals."""
    is_classification = True

    def __init__(self, num_classes: int, num_samples: int = 16, num_predict_samples: int = 256):
        super().__init__()
        self.num_classes = num_classes
        self.num_samples = num_samples
        self.num_predict_samples = num_predict_samples

    def num_latent(self, num_classes):
        """L = K, one latent function per class."""
        return self.num_classes

    def _samples(self, mean, var, S):
        eps = torch.randn((S,) + tuple(mean.shape), dtype=mean.dtype, device=mean.device)
        return mean + var.clamp_min(0.0).sqrt() * eps  # [S, N, K]

    def expected_log_prob(self, y, mean, var):
        """E_{q(f)}[log softmax(f)_y] [N], estimated from `num_samples` reparameterised samples of f."""
        f = self._samples(mean, var, self.num_samples)
        logp = torch.log_softmax(f, dim=-1)  # [S, N, K]
        idx = y.long().reshape(1, -1, 1).expand(f.shape[0], -1, 1)
        return logp.gather(-1, idx).squeeze(-1).mean(0)  # [N]

    def predict_probs(self, mean, var):
        """E_{q(f)}[softmax(f)] [N, K], from `num_predict_samples` samples."""
        f = self._samples(mean, var, self.num_predict_samples)
        return torch.softmax(f, dim=-1).mean(0)  # [N, K]
