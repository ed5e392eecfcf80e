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
from ...registry import Registry

# One registry door per kind of loss: the built-ins below register through the same `register_data_loss` /
# `register_invariance_loss` a plugin uses. A data loss is `loss(values [L, C], targets [L, C], labels [L] or None,
# eps, h, **own) -> [L]` with the tasks it suits; an invariance loss `loss(values [M, C], eps, h, **own) -> [M]`.
# Their own arguments become RKHSConfig settings.
DATA_LOSS_REGISTRY = Registry("RKHS data loss", contract=("values", "targets", "labels", "eps", "h"), extra=("auto",))
INVARIANCE_LOSS_REGISTRY = Registry("RKHS invariance loss", contract=("values", "eps", "h"))
TASKS = ("classification", "regression")


def register_data_loss(name: str, *, tasks: tuple[str, ...] = TASKS, **how):
    """A decorator registering ℓ₁ of eq. 2 (Zhang, Lee & Teh 2013): `loss(values, targets, labels, eps, h, **own)`
    returning the loss per labelled point [L], for the `tasks` it suits; see `invlab.registry.Registry.register`."""
    unknown = [task for task in tasks if task not in TASKS]
    if unknown or not tasks:
        raise ConfigError(f"a data loss suits classification and/or regression, got tasks={tasks!r}")
    return DATA_LOSS_REGISTRY.register(name, info={"tasks": tuple(tasks)}, **how)


def register_invariance_loss(name: str, **how):
    """A decorator registering ℓ₂ of eq. 2: `loss(values, eps, h, **own)` returning the loss per functional [M]
    for functional values [M, C]; see `invlab.registry.Registry.register`."""
    return INVARIANCE_LOSS_REGISTRY.register(name, **how)


def data_loss_names(task: str | None = None) -> list[str]:
    """The registered data losses (that suit `task`, if given): built-ins first, then a user's or a plugin's."""
    return [name for name, part in DATA_LOSS_REGISTRY.parts.items() if task is None or task in part.info["tasks"]]


def invariance_loss_names() -> list[str]:
    """The registered invariance losses: built-ins first, then a user's or a plugin's."""
    return list(INVARIANCE_LOSS_REGISTRY.parts)


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
              h: float, **options) -> torch.Tensor:
    """ℓ₁ per labelled point [L] for values F_ [L, C]: `targets` ±1 (classification) or y (regression) [L, C];
    `labels` the class indices (for the multinomial logistic loss); `options` the loss's own arguments."""
    return DATA_LOSS_REGISTRY.build(name, F_, targets, labels, eps, h, **options)


def invariance_loss(name: str, values: torch.Tensor, *, eps: float, h: float, **options) -> torch.Tensor:
    """ℓ₂ summed over outputs, per functional [M], for functional values [M, C]."""
    return INVARIANCE_LOSS_REGISTRY.build(name, values, eps, h, **options)


@register_data_loss("logistic", tasks=("classification",), builtin=True)
def _logistic(values, targets, labels, eps, h):
    """log(1 + e^{−y f}) for one ±1 column; the multinomial (softmax) cross-entropy for K > 2 classes."""
    if values.shape[1] == 1:
        return F.softplus(-targets[:, 0] * values[:, 0])
    return torch.logsumexp(values, 1) - values.gather(1, labels[:, None])[:, 0]


@register_data_loss("squared", builtin=True)
def _squared(values, targets, labels, eps, h):
    """½ ‖f − y‖² per point."""
    return 0.5 * ((values - targets) ** 2).sum(1)


@register_data_loss("smoothed_hinge", tasks=("classification",), builtin=True)
def _smoothed_hinge(values, targets, labels, eps, h):
    """The hinge max(0, 1 − y f), smoothed over h, summed over the one-vs-rest columns."""
    return smoothed_hinge(targets * values, h).sum(1)


@register_data_loss("smoothed_eps", tasks=("regression",), builtin=True)
def _smoothed_eps(values, targets, labels, eps, h):
    """The ε-insensitive loss of f − y, smoothed over h."""
    return smoothed_eps_insensitive(values - targets, eps, h).sum(1)


@register_invariance_loss("squared", builtin=True)
def _squared_invariance(values, eps, h):
    """½ Σ_c v_c² per functional."""
    return 0.5 * (values**2).sum(1)


@register_invariance_loss("smoothed_eps", builtin=True)
def _smoothed_eps_invariance(values, eps, h):
    """The ε-insensitive loss of each functional value, smoothed over h."""
    return smoothed_eps_insensitive(values, eps, h).sum(1)


DATA_LOSSES = {task: tuple(data_loss_names(task)) for task in TASKS}  # the built-ins by task
INVARIANCE_LOSSES = tuple(invariance_loss_names())  # the built-in invariance losses
