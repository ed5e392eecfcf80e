"""Gaussian likelihood p(y | f) = N(y; f, σ²), with closed-form expectations.

Also used for classification on one-hot targets (van der Wilk et al. 2018 does this for its invariant models): then
class probabilities are P(y*_k is the largest) for the predicted targets y* = f + ε ~ N(μ, σ_f² + σ²), by
one-dimensional quadrature. The noise belongs in it: where labels are uncertain the latent mean settles at the class
frequencies and its variance shrinks with more data, so P(f_k largest) tends to 0 or 1 however mixed the labels are (on
a 3-class set with 29 % Bayes error: NLPD 56 from the latent variance, 0.68 from the predictive one against the Bayes
rate 0.66; tests/likelihoods/test_calibration.py).
"""
from __future__ import annotations

import math

import torch
from torch.nn import functional as F

from ..parameters import Positive, positive_init
from .base import Likelihood
from .quadrature import prob_is_largest

LOG_2PI = math.log(2.0 * math.pi)


class Gaussian(Likelihood):
    """y = f + ε, ε ~ N(0, σ²) with a learned noise variance; with `num_classes`, the regression-on-one-hot-targets
    classifier van der Wilk et al. 2018 uses."""
    def __init__(self, variance: float = 0.1, num_classes: int | None = None, floor: float = 1e-6):
        super().__init__()
        self.variance = Positive(positive_init(variance, "noise_variance"), floor=floor, name="noise_variance")
        self.num_classes = num_classes  # set: classification on one-hot targets
        self.is_classification = num_classes is not None

    def num_latent(self, num_classes):
        """L: one output for regression, one per class for one-hot classification."""
        return num_classes if self.is_classification else 1

    def encode(self, y):
        """Targets as a matrix [N, L]: one-hot for classification, the values as a column for regression."""
        if self.is_classification:
            return F.one_hot(y.long(), self.num_classes).to(torch.float32)  # cast to q(f)'s dtype where used
        return y.reshape(y.shape[0], -1)

    def expected_log_prob(self, y, mean, var):
        """E_{q(f)}[log N(y | f, σ²)] = −½ log 2πσ² − ((y − μ)² + v) / 2σ², summed over outputs [N] (closed form)."""
        s2 = self.variance()
        y = y.to(mean.dtype)
        return (-0.5 * (LOG_2PI + torch.log(s2)) - 0.5 * ((y - mean) ** 2 + var) / s2).sum(-1)

    def log_predictive_density(self, y, mean, var):
        """log N(y | μ, v + σ²) summed over outputs [N] for regression; for one-hot classification, the log of the
        predicted probability of the class."""
        if self.is_classification:
            return super().log_predictive_density(y, mean, var)
        v = var + self.variance()
        y = y.reshape(mean.shape).to(mean.dtype)
        return (-0.5 * (LOG_2PI + torch.log(v)) - 0.5 * (y - mean) ** 2 / v).sum(-1)

    def predict_mean_and_var(self, mean, var):
        """The predictive of y: mean μ and variance v + σ² (the noise added) [N, L]."""
        return mean, var + self.variance()

    def predict_probs(self, mean, var):
        """Class probabilities [N, K] for one-hot classification: the probability that each output of the noisy
        predictive is the largest, normalised."""
        S = prob_is_largest(mean, var + self.variance())  # of the predicted targets, noise included
        return S / S.sum(-1, keepdim=True)
