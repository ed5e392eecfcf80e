"""What every model family shares: the `Terms` of its objective, its `Prediction`, metrics, and the base class.

A model family is a `torch.nn.Module` with `loss(batch) -> Terms`, `predict(X) -> Prediction` and
`diagnostics(data) -> dict[str, View]` (DESIGN.md). `ModelFamily` adds evaluation metrics on top of
`predict`, the same for all families.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from ..diagnostics import View


@dataclass
class Terms:
    """The scalar to minimise and its named parts (e.g. `elbo`, `expected_log_lik`, `kl`)."""

    loss: torch.Tensor
    parts: dict[str, torch.Tensor] = field(default_factory=dict)


@dataclass
class Prediction:
    """Marginals of the latent function and what follows for y.

    mean, var: q(f) marginals [N, L]. Regression: y_mean, y_var [N, L]. Classification: probs [N, K].
    """

    mean: torch.Tensor
    var: torch.Tensor
    y_mean: torch.Tensor | None = None
    y_var: torch.Tensor | None = None
    probs: torch.Tensor | None = None
    log_density: torch.Tensor | None = None  # log p(y* | data) per test point, when y was given


class ModelFamily(nn.Module):
    """Base class: subclasses implement `loss`, `predict`, `diagnostics`; `metrics` is shared."""

    task: str = "regression"
    y_std: float = 1.0  # regression targets are standardised; RMSE is reported in original units

    def loss(self, batch) -> Terms:  # pragma: no cover - abstract
        raise NotImplementedError

    def predict(self, X: torch.Tensor, y: torch.Tensor | None = None) -> Prediction:  # pragma: no cover - abstract
        raise NotImplementedError

    def diagnostics(self, data=None) -> dict[str, View]:
        return {}

    def numerics(self) -> dict[str, float]:
        """Numerical health figures for the status bar (current jitter, condition numbers)."""
        return {}

    @torch.no_grad()
    def metrics(self, X: torch.Tensor, y: torch.Tensor, batch_size: int = 1024) -> dict[str, float]:
        """Test metrics: error rate and NLPD (classification) or RMSE (original units) and NLPD (regression)."""
        n, wrong, sq, nll = 0, 0.0, 0.0, 0.0
        for start in range(0, X.shape[0], batch_size):
            xb, yb = X[start:start + batch_size], y[start:start + batch_size]
            p = self.predict(xb, yb)
            if self.task == "classification":
                wrong += float((p.probs.argmax(-1) != yb.long()).sum())
            else:
                sq += float(((p.y_mean.reshape(yb.shape) - yb) ** 2).sum())
            nll -= float(p.log_density.sum())
            n += xb.shape[0]
        out = {"nlpd": nll / n}
        if self.task == "classification":
            out["error"] = wrong / n
        else:
            out["rmse"] = math.sqrt(sq / n) * self.y_std
            out["nlpd"] += math.log(self.y_std)  # density of the original-unit targets
        return out
