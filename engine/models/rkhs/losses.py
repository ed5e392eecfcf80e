"""Convex losses ℓ₁ (on labelled values) and ℓ₂ (on invariance functionals) for eq. 2/4 of Zhang, Lee & Teh 2013.

The paper smooths the non-smooth ones so the batch solver can use L-BFGS (sec. 5, after Chapelle 2007, ref. [33]).
Both smoothings here replace the kink by a quadratic over a width h, which keeps the loss convex, C¹, and
within h/2 of the original:

    smoothed hinge(z = y f)      = q²/(2h) + (a − q),  a = max(1 − z, 0),       q = min(a, h)
    smoothed ε-insensitive(t)    = q²/(2h) + (a − q),  a = max(|t| − ε, 0),     q = min(a, h)

(so a²/(2h) for a ≤ h and a − h/2 beyond; with ε = 0 the second is the Huber loss). Classification targets
are y ∈ {−1, +1} (one column) or one-hot ±1 columns (one-vs-rest) for K > 2 classes; the logistic loss with
K > 2 is the multinomial (softmax) cross-entropy.
"""
from __future__ import annotations

import torch
from torch.nn import functional as F

from ...errors import ConfigError

DATA_LOSSES = {"classification": ("logistic", "squared", "smoothed_hinge"), "regression": ("squared", "smoothed_eps")}
INVARIANCE_LOSSES = ("squared", "smoothed_eps")


def _smoothed_ramp(a: torch.Tensor, h: float) -> torch.Tensor:
    q = a.clamp_max(h)
    return q * q / (2.0 * h) + (a - q)


def smoothed_hinge(z: torch.Tensor, h: float) -> torch.Tensor:
    """The hinge max(0, 1 − z) smoothed over a width h near its kink (elementwise), so L-BFGS sees a differentiable
    loss."""
    return _smoothed_ramp((1.0 - z).clamp_min(0.0), h)


def smoothed_eps_insensitive(t: torch.Tensor, eps: float, h: float) -> torch.Tensor:
    """The ε-insensitive loss max(0, |t| − ε) smoothed over a width h near its kink (elementwise)."""
    return _smoothed_ramp((t.abs() - eps).clamp_min(0.0), h)


def data_loss(name: str, F_: torch.Tensor, targets: torch.Tensor, labels: torch.Tensor | None, *, eps: float,
              h: float) -> torch.Tensor:
    """ℓ₁ per labelled point [L] for values F_ [L, C]: `targets` ±1 (classification) or y (regression) [L, C];
    `labels` the class indices (for the multinomial logistic loss)."""
    if name == "logistic":
        if F_.shape[1] == 1:
            return F.softplus(-targets[:, 0] * F_[:, 0])  # log(1 + e^{−y f})
        return torch.logsumexp(F_, 1) - F_.gather(1, labels[:, None])[:, 0]
    if name == "squared":
        return 0.5 * ((F_ - targets) ** 2).sum(1)
    if name == "smoothed_hinge":
        return smoothed_hinge(targets * F_, h).sum(1)
    if name == "smoothed_eps":
        return smoothed_eps_insensitive(F_ - targets, eps, h).sum(1)
    raise ConfigError(f"unknown data loss {name!r}; choose from {sorted(set(sum(DATA_LOSSES.values(), ())))}")


def invariance_loss(name: str, values: torch.Tensor, *, eps: float, h: float) -> torch.Tensor:
    """ℓ₂ summed over outputs, per functional [M], for functional values [M, C]."""
    if name == "squared":
        return 0.5 * (values**2).sum(1)
    if name == "smoothed_eps":
        return smoothed_eps_insensitive(values, eps, h).sum(1)
    raise ConfigError(f"unknown invariance loss {name!r}; choose from {', '.join(INVARIANCE_LOSSES)}")
