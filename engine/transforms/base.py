"""Augmentation distributions p(x_a | x) and finite orbits A(x): what an invariant kernel sums over.

(van der Wilk et al. 2018, "Learning invariances using the marginal likelihood") builds
f(x) = E_{p(x_a|x)}[g(x_a)] (eq. 8) or the orbit average of g (eq. 6–7). The model never needs the
whole orbit: it needs S samples per input (eq. 17, 21), `sample(X, S) -> [N, S, ...]`, drawn so that
the bound's gradient reaches the augmentation's parameters (reparameterisation: every random choice is
a fixed noise ε pushed through a differentiable map of the learnable values).

Two kinds:
- a *density* (`orbit_size is None`): affine maps with uniform parameter ranges, local deformations;
  samples are i.i.d. draws;
- a *finite orbit* (`FiniteOrbit`, `orbit_size = P`): rot90, flips, coordinate permutations, cyclic
  shifts; S of the P elements are drawn *without replacement* (appendix B.1), and S = P gives the
  whole orbit, so the estimators become exact sums.

Ranges: `UniformRange` U[lo, hi] (the paper's, both ends free), `SymmetricRange` U[−α, α] and `IdentityRange`
U[−a, b] (a, b ≥ 0: a range that always holds the identity, so a learned range is an invariance and never a fixed
warp). The learnable values (range ends, strengths) are `invlab.parameters.Bounded` values, so the
dashboard finds them with `learnables(model)`, can set them while training runs and can freeze them.
"""
from __future__ import annotations

import torch
from torch import nn

from ..errors import ConfigError, ShapeError
from ..parameters import Bounded


# -- noise on the input's device and dtype -------------------------------------------------------------------------
def uniform(shape, like: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """U(0, 1) noise of `shape` on `like`'s device and dtype (drawn on the generator's device, then moved)."""
    if generator is None:
        return torch.rand(shape, dtype=like.dtype, device=like.device)
    return torch.rand(shape, generator=generator, dtype=like.dtype, device=generator.device).to(like.device)


def normal(shape, like: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """N(0, 1) noise of `shape` on `like`'s device and dtype."""
    if generator is None:
        return torch.randn(shape, dtype=like.dtype, device=like.device)
    return torch.randn(shape, generator=generator, dtype=like.dtype, device=generator.device).to(like.device)


# -- learnable uniform ranges ---------------------------------------------------------------------------------------
class UniformRange(nn.Module):
    """θ ~ U[lo, hi] with both ends learnable, reparameterised as θ = lo + (hi − lo)·ε, ε ~ U(0, 1).

    `lo` and `hi` are `Bounded` values in (−limit, limit). Nothing forces lo ≤ hi: if they cross, the
    same formula draws uniformly between them, so no value the optimiser or a slider can reach is invalid. Nor
    lo ≤ 0 ≤ hi: a learned range may leave the identity out (a fixed warp, not an invariance; see `IdentityRange`
    and `invlab.transforms.judging`).
    """

    def __init__(self, lo: float, hi: float, limit: float, *, name: str = "", unit: str = ""):
        super().__init__()
        self.limit, self.unit = float(limit), unit
        self.lo = Bounded(lo, -limit, limit, name=f"{name}.lo" if name else "lo")
        self.hi = Bounded(hi, -limit, limit, name=f"{name}.hi" if name else "hi")

    def forward(self, eps: torch.Tensor) -> torch.Tensor:
        """θ = lo + (hi − lo)·ε for uniform noise ε in [0, 1] (reparameterised, same shape as ε)."""
        lo, hi = self.lo(), self.hi()
        return lo + (hi - lo) * eps

    def bounds(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The range as (lower, upper), ordered."""
        lo, hi = self.lo(), self.hi()
        return torch.minimum(lo, hi), torch.maximum(lo, hi)


class SymmetricRange(nn.Module):
    """θ ~ U[−α, α] with one learnable α (e.g. the rotation-only preset), θ = α(2ε − 1).

    α is a `Bounded` value in (−limit, limit): zero lies inside, so "no augmentation" is reachable and
    the sigmoid is steepest there (a range started near zero learns fast). The sign of α does not
    matter (U[−α, α] = U[α, −α]); reports show |α|.
    """

    def __init__(self, half_width: float, limit: float, *, name: str = "", unit: str = ""):
        super().__init__()
        self.limit, self.unit = float(limit), unit
        self.half_width = Bounded(half_width, -limit, limit, name=f"{name}.half_width" if name else "half_width")

    def forward(self, eps: torch.Tensor) -> torch.Tensor:
        """θ = α(2ε − 1) for uniform noise ε in [0, 1] (reparameterised, same shape as ε)."""
        return self.half_width() * (2.0 * eps - 1.0)

    def bounds(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The range as (−|α|, |α|)."""
        a = self.half_width().abs()
        return -a, a


IDENTITY_FLOOR = 1e-3  # the least starting width of an `IdentityRange`'s end, as a fraction of its limit


class IdentityRange(nn.Module):
    """θ ~ U[−a, b] with a, b ≥ 0 learned: a range that always holds the identity θ = 0.

    The paper's `UniformRange` learns both ends freely, so it can settle on a range such as [0.12, 0.16] that
    leaves 0 out: every sample then applies the same kind of fixed warp, which is no invariance. Here the ends are
    widths on either side of the identity, `below` = a and `above` = b, each a `Bounded` value in (0, limit), so no
    value the optimiser or a slider can reach leaves 0 out; a width that shrinks towards 0 says "no invariance on
    that side" (near 0 the sigmoid moves a width by factors, as on a log scale, so it can shrink towards 0 without
    crossing it). Reparameterised as θ = −a + (a + b)·ε, ε ~ U(0, 1). An end asked to start at 0 starts at
    `IDENTITY_FLOOR`·limit instead (an open interval's end cannot be 0 itself).
    """

    def __init__(self, below: float, above: float, limit: float, *, name: str = "", unit: str = ""):
        super().__init__()
        self.limit, self.unit = float(limit), unit
        if not (below >= 0 and above >= 0):
            raise ConfigError(f"{name or 'range'}: the ends of a range around the identity are widths below and above "
                              f"it, so neither can be negative (got {below} below, {above} above)")
        floor = IDENTITY_FLOOR * self.limit
        self.below = Bounded(max(float(below), floor), 0.0, limit, name=f"{name}.below" if name else "below")
        self.above = Bounded(max(float(above), floor), 0.0, limit, name=f"{name}.above" if name else "above")

    def forward(self, eps: torch.Tensor) -> torch.Tensor:
        """θ = −a + (a + b)·ε for uniform noise ε in [0, 1] (reparameterised, same shape as ε)."""
        a, b = self.below(), self.above()
        return -a + (a + b) * eps

    def bounds(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The range as (−a, b): the lower end is never above 0, the upper never below."""
        return -self.below(), self.above()


def range_summary(ranges: dict[str, nn.Module]) -> dict[str, torch.Tensor]:
    """{'rotation': α} for symmetric ranges, {'shear.lo': lo, 'shear.hi': hi} for two-sided ones (tensors; an
    `IdentityRange` U[−a, b] as lo = −a, hi = b)."""
    out = {}
    for name, r in ranges.items():
        lo, hi = r.bounds()
        if isinstance(r, SymmetricRange):
            out[name] = hi
        else:
            out[f"{name}.lo"], out[f"{name}.hi"] = lo, hi
    return out


# -- the interface ----------------------------------------------------------------------------------------------------
class Augmentation(nn.Module):
    """p(x_a | x). Subclasses implement `sample`; `range_values()` reports the current learnable ranges."""

    orbit_size: int | None = None  # P for a finite orbit sampled without replacement; None for a density
    image_only: bool = True  # needs inputs [N, C, H, W]

    def sample(self, X: torch.Tensor, S: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """S augmented copies of every input: [N, ...] → [N, S, ...]."""
        raise NotImplementedError  # pragma: no cover - abstract

    def range_values(self) -> dict[str, torch.Tensor]:
        """Current learnable ranges by name (scalar tensors, differentiable); empty for fixed orbits."""
        return {}

    def check_input(self, X: torch.Tensor) -> None:
        """Refuse inputs of the wrong shape (ShapeError): an image-only augmentation needs [N, C, H, W]."""
        if self.image_only and X.dim() != 4:
            raise ShapeError(f"{type(self).__name__} acts on images [N, C, H, W]; got inputs of shape {tuple(X.shape)}")

    def num_samples(self, S: int) -> int:
        """The number of samples actually drawn for a request of S (a finite orbit caps it at P)."""
        if S < 1:
            raise ConfigError(f"the number of augmentation samples must be at least 1, got {S}")
        return S if self.orbit_size is None else min(S, self.orbit_size)


class FiniteOrbit(Augmentation):
    """A finite orbit of P elements; `apply(X, index)` builds elements by number, index [N, S] → [N, S, ...]."""

    @property
    def orbit_size(self) -> int:  # P
        """P, the number of elements of the orbit (the identity included)."""
        raise NotImplementedError  # pragma: no cover - abstract

    def apply(self, X: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """The orbit elements `index` [N, S] of each input X [N, ...]: [N, S, ...]."""
        raise NotImplementedError  # pragma: no cover - abstract

    def elements(self, X: torch.Tensor) -> torch.Tensor:
        """The whole orbit of every input: [N, P, ...], element 0 the identity."""
        self.check_input(X)
        P = self.orbit_size
        return self.apply(X, torch.arange(P, device=X.device).expand(X.shape[0], P))

    def sample(self, X: torch.Tensor, S: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """S distinct elements per input, uniformly without replacement (each input its own subset);
        S ≥ P gives the whole orbit in order."""
        self.check_input(X)
        S, P = self.num_samples(S), self.orbit_size
        if S == P:
            return self.elements(X)
        index = uniform((X.shape[0], P), X, generator).argsort(dim=1)[:, :S]  # [N, S] a random S-subset
        return self.apply(X, index)
