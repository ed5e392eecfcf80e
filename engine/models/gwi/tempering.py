"""Tempering the predictive variance (Wild, Hu & Sejdinovic 2022, sec. 2.3), fitted on a validation split with all else
frozen.

Regression: p_α(y* | x*) = N(y*; m_Q(x*), α_T (r(x*, x*) + σ²)). The validation NLL
    ½ Σ_i [log 2π α v_i + e_i² / (α v_i)]
is convex in log α with its minimum at α* = (1/n) Σ_i e_i² / v_i (closed form); clipping α* to an interval
containing 1 therefore never raises the NLL above that of α = 1.

Classification: Q's latent variances r_j(x, x) are scaled by α_T inside the robust-max probabilities
(sec. 4.2); the NLL is minimised over log α by a bounded scalar search, and α = 1 is kept if the search
finds nothing better, so again the fitted value never does worse than α = 1 on the validation set.
"""
from __future__ import annotations

import math
from typing import Callable

import torch

from ...errors import ConfigError


def check_bounds(lower: float, upper: float) -> None:
    """Refuse tempering bounds unless 0 < lower ≤ 1 ≤ upper (ConfigError with the values)."""
    if not (0.0 < lower <= 1.0 <= upper):
        raise ConfigError(f"tempering bounds must satisfy 0 < lower ≤ 1 ≤ upper, got ({lower}, {upper})")


def gaussian_temperature(y: torch.Tensor, mean: torch.Tensor, var: torch.Tensor, lower: float = 1e-3,
                         upper: float = 1.0) -> float:
    """α* = mean(e²/v) clipped to [lower, upper]: the minimiser of the tempered Gaussian NLL over that interval."""
    check_bounds(lower, upper)
    ratio = ((y.reshape(mean.shape) - mean) ** 2 / var).mean()
    return float(ratio.clamp(lower, upper))


def gaussian_nll(y: torch.Tensor, mean: torch.Tensor, var: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    """Mean of −log N(y; mean, α·var) over points."""
    v = alpha * var
    return (0.5 * (math.log(2 * math.pi) + torch.log(v)) + 0.5 * (y.reshape(mean.shape) - mean) ** 2 / v).sum(-1).mean()


def scalar_temperature(nll: Callable[[float], float], lower: float = 1e-3, upper: float = 1.0) -> float:
    """argmin of nll(α) over [lower, upper] by a bounded search on log α, never worse than α = 1."""
    check_bounds(lower, upper)
    best_alpha, best = 1.0, nll(1.0)
    if upper > lower:
        from scipy.optimize import minimize_scalar  # here, not at import: ~0.8 CPU-s every process loading a model paid

        res = minimize_scalar(lambda t: nll(math.exp(t)), bounds=(math.log(lower), math.log(upper)), method="bounded",
                              options={"xatol": 1e-4})
        for alpha in (math.exp(res.x), lower, upper):
            value = nll(alpha)
            if value < best:
                best_alpha, best = alpha, value
    return best_alpha
