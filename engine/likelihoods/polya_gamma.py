"""Pólya-Gamma lower bound on the logistic likelihood (van der Wilk et al. 2018 sec. 4.5; Polson et al. 2013;
Gibbs & MacKay 2000; Wenzel et al. 2018), with q(ω) from a recognition network.

With s = 2y − 1 ∈ {−1, +1} and p(ω) = PG(1, 0), the logistic likelihood is an expectation of an
unnormalised Gaussian in f (eq. 22):  σ(s f) = ½ e^{s f / 2} E_{p(ω)}[e^{−ω f² / 2}].
Jensen's inequality with any q(ω) = PG(1, c) gives the bound (eq. 23)

    log σ(s f) ≥ −log 2 + s f / 2 − E_q[ω] f² / 2 − KL(PG(1, c) ‖ PG(1, 0)),

which is tight at c = |f|. In closed form (PG(1, c) has density cosh(c/2) e^{−c²ω/2} PG(1, 0)(ω)):

    E_q[ω] = tanh(c/2) / (2c),        KL = log cosh(c/2) − c² E_q[ω] / 2.

The bound is linear in f and f², so its expectation under q(f) needs only μ, μ² and σ²: the unbiased
invariant estimators plug in directly (`expected_log_prob_moments`). The optimal c = √(μ² + σ²)
depends non-linearly on them, so the invariant model amortises c with a recognition network
(x, y) → c (Kingma & Welling 2014), as the paper does. Without inputs (`expected_log_prob`), the
optimal c is used in closed form.
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from .base import Likelihood
from .quadrature import gauss_hermite_expectation

LOG2 = math.log(2.0)


def pg_mean(c: torch.Tensor) -> torch.Tensor:
    """E[ω] for ω ~ PG(1, c): tanh(c/2) / (2c), → 1/4 as c → 0 (series used near 0, NaN-free gradients)."""
    c = c.abs()
    small = c < 1e-4
    safe = torch.where(small, torch.ones_like(c), c)
    return torch.where(small, 0.25 - c ** 2 / 48.0, torch.tanh(safe / 2.0) / (2.0 * safe))


def log_cosh(z: torch.Tensor) -> torch.Tensor:
    """log cosh(z), computed stably for large |z| (elementwise)."""
    z = z.abs()
    return z + torch.log1p(torch.exp(-2.0 * z)) - LOG2


def pg_kl(c: torch.Tensor) -> torch.Tensor:
    """KL(PG(1, c) ‖ PG(1, 0)) = log cosh(c/2) − c² E[ω] / 2 (≥ 0, zero at c = 0)."""
    return log_cosh(c / 2.0) - c ** 2 * pg_mean(c) / 2.0


def pg_bound(sign: torch.Tensor, f: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """The lower bound on log σ(sign · f) for q(ω) = PG(1, c), elementwise."""
    return -LOG2 + sign * f / 2.0 - pg_mean(c) * f ** 2 / 2.0 - pg_kl(c)


class RecognitionNetwork(nn.Module):
    """(x, s) → c > 0, the parameter of q(ω_n) = PG(1, c_n). A one-hidden-layer MLP on the flattened input."""

    def __init__(self, input_dim: int, hidden: int = 32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(input_dim + 1, hidden), nn.Tanh(), nn.Linear(hidden, 1)).double()
        with torch.no_grad():
            self.net[2].weight.mul_(0.1)
            self.net[2].bias.fill_(math.log(math.expm1(1.0)))  # c ≈ 1 at the start: √(μ² + σ²) under a unit prior

    def forward(self, X: torch.Tensor, sign: torch.Tensor) -> torch.Tensor:
        """The Pólya-Gamma parameter c > 0 [N, 1] of q(ω) = PG(1, c) for inputs X [N, ...] and label signs s = 2y − 1
        (van der Wilk, Bauer, John & Hensman, "Learning invariances using the marginal likelihood", 2018,
        sec. 4.5)."""
        inputs = torch.cat([X.reshape(X.shape[0], -1), sign.reshape(-1, 1).to(X.dtype)], dim=1)
        return F.softplus(self.net(inputs)) + 1e-6  # [N, 1]


class PolyaGammaLogistic(Likelihood):
    """Logistic likelihood for y ∈ {0, 1} through the Pólya-Gamma bound; one latent function."""

    is_classification = True

    def __init__(self, input_dim: int | None = None, hidden: int = 32, num_points: int = 20):
        super().__init__()
        self.recognition = RecognitionNetwork(input_dim, hidden) if input_dim else None
        self.num_points = num_points

    @staticmethod
    def sign(y: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        """s = 2y − 1 ∈ {−1, +1} as a column [N, 1] in the dtype of `like`."""
        return (2.0 * y.to(like.dtype) - 1.0).reshape(-1, 1)  # [N, 1]

    def expected_log_prob(self, y, mean, var):
        """Σ over outputs of E_{q(f)}[bound] with the optimal c = √(μ² + σ²) (tight in q(ω)). [N]"""
        c = torch.sqrt(mean ** 2 + var.clamp_min(0.0) + 1e-12)
        return self.expected_log_prob_moments(y, mean, mean ** 2, var, c=c)

    def expected_log_prob_moments(self, y, mu, mu2, var, X: torch.Tensor | None = None, c: torch.Tensor | None = None):
        """E_{q(f)}[bound] from (estimates of) μ, μ², σ² [N, 1]; c from the recognition network when X is given. [N]"""
        sign = self.sign(y, mu)
        if c is None:
            if X is None or self.recognition is None:
                c = torch.sqrt((mu2 + var).clamp_min(0.0) + 1e-12)
            else:
                c = self.recognition(X, sign)
        return (-LOG2 + sign * mu / 2.0 - pg_mean(c) * (mu2 + var) / 2.0 - pg_kl(c)).sum(-1)

    def predict_probs(self, mean, var):
        """[p(y = 0), p(y = 1)] [N, 2]: E_{q(f)}[σ(f)] by Gauss–Hermite quadrature (the logistic likelihood itself, not
        its bound)."""
        p1 = gauss_hermite_expectation(torch.sigmoid, mean, var, self.num_points).reshape(-1)
        return torch.stack([1.0 - p1, p1], dim=-1)  # [N, 2]
