"""Constrained learnable values: stored unconstrained, exposed constrained.

`Positive` maps a raw value through softplus plus a floor, `LogPositive` through exp (for values that range
over orders of magnitude), `Unconstrained` not at all, and `Bounded` through a sigmoid into (lo, hi).
Every learnable quantity a user may tweak is one of these modules, so it can be read (`p()`), set while
training runs (`p.assign(value)`, under the trainer's lock) and frozen (`p.frozen = True`), and the
dashboard can find them all with `learnables(model)`.
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from .errors import ConfigError


def _inverse_softplus(y: torch.Tensor) -> torch.Tensor:
    # log(exp(y) - 1), stable for large y
    return y + torch.log(-torch.expm1(-y))


class Constrained(nn.Module):
    """A learnable tensor kept as `raw` and read through a bijection `forward() = transform(raw)`."""

    def __init__(self, value, *, name: str = ""):
        super().__init__()
        value = torch.as_tensor(value, dtype=torch.float64)  # built in float64; `.to()` casts later
        self.name = name
        self._check(value)
        self.raw = nn.Parameter(self.inverse(value))

    # subclasses implement transform / inverse / _check
    def transform(self, raw: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        """The constrained value from the stored unconstrained `raw` tensor (elementwise)."""
        raise NotImplementedError

    def inverse(self, value: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        """The unconstrained raw tensor that gives the constrained `value` (the transform's inverse)."""
        raise NotImplementedError

    def _check(self, value: torch.Tensor) -> None:
        if not torch.isfinite(value).all():
            raise ConfigError(f"{self.name or 'parameter'} must be finite, got {value.tolist()}")

    def forward(self) -> torch.Tensor:
        """The constrained value, `transform(raw)`: `param()` reads it."""
        return self.transform(self.raw)

    @property
    def shape(self) -> torch.Size:
        """The shape of the value (that of the raw tensor)."""
        return self.raw.shape

    @torch.no_grad()
    def assign(self, value) -> None:
        """Set the constrained value in place (keeps the Parameter object, so optimisers keep tracking it)."""
        value = torch.as_tensor(value, dtype=self.raw.dtype, device=self.raw.device)
        self._check(value)
        self.raw.copy_(self.inverse(value).expand_as(self.raw))

    @property
    def frozen(self) -> bool:
        """Whether the parameter is held fixed (its raw tensor takes no gradient); settable."""
        return not self.raw.requires_grad

    @frozen.setter
    def frozen(self, flag: bool) -> None:
        self.raw.requires_grad_(not flag)
        if flag:
            self.raw.grad = None

    def extra_repr(self) -> str:
        """The value (or its shape when large) and whether it is frozen, for the module's repr."""
        v = self.forward().detach().cpu()
        return f"value={v.tolist() if v.numel() <= 6 else tuple(v.shape)}, frozen={self.frozen}"


class Positive(Constrained):
    """value = softplus(raw) + floor. The floor keeps variances and lengthscales away from zero."""

    def __init__(self, value, *, floor: float = 1e-6, name: str = ""):
        self.floor = float(floor)
        super().__init__(value, name=name)

    def transform(self, raw):
        """softplus(raw) + floor."""
        return F.softplus(raw) + self.floor

    def inverse(self, value):
        """softplus⁻¹(value − floor)."""
        return _inverse_softplus(value - self.floor)

    def _check(self, value):
        super()._check(value)
        if (value <= self.floor).any():
            raise ConfigError(f"{self.name or 'parameter'} must be greater than {self.floor:g}, got {value.tolist()}")


class LogPositive(Constrained):
    """value = exp(raw): for degrees of freedom that range over orders of magnitude (δ, γ), learned on a log scale."""

    def transform(self, raw):
        """exp(raw)."""
        return torch.exp(raw)

    def inverse(self, value):
        """log(value)."""
        return torch.log(value)

    def _check(self, value):
        super()._check(value)
        if (value <= 0).any():
            raise ConfigError(f"{self.name or 'parameter'} must be positive, got {value.tolist()}")


class Unconstrained(Constrained):
    """A learnable real value (any sign), e.g. patch weights; identity transform, so `raw` is the value."""

    def transform(self, raw):
        """The raw value itself."""
        return raw

    def inverse(self, value):
        """A copy of `value` (no constraint to undo)."""
        return value.clone()


class Bounded(Constrained):
    """value = lo + (hi - lo) * sigmoid(raw), for ranges such as augmentation angles."""

    def __init__(self, value, lo: float, hi: float, *, name: str = ""):
        if not hi > lo:
            raise ConfigError(f"{name or 'parameter'}: upper bound {hi} must exceed lower bound {lo}")
        self.lo, self.hi = float(lo), float(hi)
        super().__init__(value, name=name)

    def transform(self, raw):
        """lo + (hi − lo)·sigmoid(raw), strictly inside (lo, hi)."""
        return self.lo + (self.hi - self.lo) * torch.sigmoid(raw)

    def inverse(self, value):
        """logit((value − lo)/(hi − lo)), the unit value clamped away from 0 and 1."""
        unit = ((value - self.lo) / (self.hi - self.lo)).clamp(1e-12, 1 - 1e-12)
        return torch.log(unit) - torch.log1p(-unit)

    def _check(self, value):
        super()._check(value)
        if ((value <= self.lo) | (value >= self.hi)).any():
            raise ConfigError(
                f"{self.name or 'parameter'} must lie strictly inside ({self.lo:g}, {self.hi:g}), got {value.tolist()}"
            )


def learnables(module: nn.Module) -> dict[str, Constrained]:
    """All constrained values in a model by dotted name, e.g. `kernel.lengthscale`, `likelihood.variance`."""
    return {name: m for name, m in module.named_modules() if isinstance(m, Constrained)}


def positive_init(value, name: str) -> float:
    """`value` as a float if it is a finite positive number; ConfigError naming `name` otherwise."""
    value = float(value)
    if not (value > 0 and math.isfinite(value)):
        raise ConfigError(f"{name} must be a positive number, got {value}")
    return value


# -- kinds used by the RKHS solver ------------------------------------------------------------------------------------
class NonNegative(Constrained):
    """value = max(raw, 0): a weight such as ν that may be exactly zero (ν = 0 is plain kernel regression)."""

    def transform(self, raw):
        """max(raw, 0)."""
        return raw.clamp_min(0.0)

    def inverse(self, value):
        """A copy of `value` (already non-negative)."""
        return value.clone()

    def _check(self, value):
        super()._check(value)
        if (value < 0).any():
            raise ConfigError(f"{self.name or 'parameter'} must be ≥ 0, got {value.tolist()}")


def fix(module: nn.Module) -> nn.Module:
    """Turn every constrained value in `module` into a fixed one: its raw tensor becomes a buffer (settable with
    `assign`, listed by `learnables`, never handed to an optimiser)."""
    for c in [m for m in module.modules() if isinstance(m, Constrained)]:
        raw = c.raw.detach().clone()
        del c.raw
        c.register_buffer("raw", raw)
    return module
