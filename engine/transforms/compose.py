"""Two augmentations applied one after the other: x → a₁(x) → a₂(a₁(x)) (van der Wilk et al. 2018's augmentation
distributions composed, so an invariant GP can be invariant to, say, rotations *and* flips, with the ranges of both
learned).

- Both finite orbits (P₁ and P₂ elements): a finite orbit of the P₁·P₂ compositions, element k = (k // P₂, k % P₂),
  element 0 the identity; summed exactly or sampled without replacement like any `FiniteOrbit`.
- Otherwise a density: each of the S samples draws a₁ and then a₂ independently (a finite part uniformly, with
  replacement), so the samples are i.i.d. draws of the composed distribution, as the unbiased estimators of the
  invariant kernel (eq. 16–21) need.

The learnable ranges of both parts are the composition's `ranges` (a range of the second part whose name the first
part also uses is renamed `<part>_<name>`, e.g. `deformation_rotation`), trained and plotted like any augmentation's.
"""
from __future__ import annotations

import torch
from torch import nn

from .base import Augmentation, FiniteOrbit, uniform


def _renamed(first: Augmentation, second: Augmentation, names: tuple[str, str]) -> tuple[dict, dict]:
    """Each part's ranges by the name the composition gives them (the second part's names that the first part also
    uses prefixed with its name)."""
    one, two = dict(getattr(first, "ranges", {}) or {}), dict(getattr(second, "ranges", {}) or {})
    clash = set(one) & set(two)
    return one, {(f"{names[1]}_{k}" if k in clash else k): r for k, r in two.items()}


def _hold(composed: Augmentation, first: Augmentation, second: Augmentation, names: tuple[str, str]) -> None:
    """What both kinds of composition hold: the parts, and their ranges under one roof (`ranges`, by the
    composition's names)."""
    one, two = _renamed(first, second, names)
    composed.ranges = nn.ModuleDict({**one, **two})  # registered first, so the ranges' paths are `ranges.<name>`
    composed.first, composed.second, composed.names = first, second, tuple(names)
    composed._renames = ({old: new for new, old in zip(one, getattr(first, "ranges", {}) or {})},
                         {old: new for new, old in zip(two, getattr(second, "ranges", {}) or {})})
    composed.image_only = bool(first.image_only or second.image_only)


def _range_values(composed: Augmentation) -> dict[str, torch.Tensor]:
    """Both parts' current ranges (degrees for rotations) by the composition's names."""
    out = {}
    for part, renames in ((composed.first, composed._renames[0]), (composed.second, composed._renames[1])):
        for key, value in part.range_values().items():
            base, dot, end = key.partition(".")
            out[renames.get(base, base) + dot + end] = value
    return out


def _iid(part: Augmentation, X: torch.Tensor, S: int, generator) -> torch.Tensor:
    """S independent draws of `part` per input [N, S, ...] (a finite orbit's elements uniformly, with replacement)."""
    if part.orbit_size is None:
        return part.sample(X, S, generator)
    P = part.orbit_size
    index = (uniform((X.shape[0], S), X, generator) * P).long().clamp_max(P - 1)  # [N, S]
    return part.apply(X, index)


class ComposedAugmentation(Augmentation):
    """a₂ ∘ a₁ where one part at least is a density: S i.i.d. draws of the composition per input."""

    orbit_size = None

    def __init__(self, first: Augmentation, second: Augmentation, names: tuple[str, str] = ("first", "second")):
        super().__init__()
        _hold(self, first, second, names)

    def range_values(self) -> dict[str, torch.Tensor]:
        """Both parts' current ranges (degrees for rotations) by the composition's names."""
        return _range_values(self)

    def check_input(self, X: torch.Tensor) -> None:
        """Inputs both parts accept."""
        self.first.check_input(X)
        self.second.check_input(X)

    def sample(self, X: torch.Tensor, S: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """S draws of a₂(a₁(x)) per input: [N, ...] → [N, S, ...]."""
        self.check_input(X)
        N = X.shape[0]
        A = _iid(self.first, X, S, generator)  # [N, S, ...]
        B = _iid(self.second, A.reshape(N * S, *X.shape[1:]), 1, generator)  # [N·S, 1, ...]
        return B.reshape(N, S, *X.shape[1:])


class ComposedOrbit(FiniteOrbit):
    """a₂ ∘ a₁ of two finite orbits: the P₁·P₂ compositions, element k = (a₁ element k // P₂, then a₂ element
    k % P₂)."""

    def __init__(self, first: FiniteOrbit, second: FiniteOrbit, names: tuple[str, str] = ("first", "second")):
        super().__init__()
        _hold(self, first, second, names)

    def range_values(self) -> dict[str, torch.Tensor]:
        """Both parts' current ranges (by the composition's names)."""
        return _range_values(self)

    def check_input(self, X: torch.Tensor) -> None:
        """Inputs both parts accept."""
        self.first.check_input(X)
        self.second.check_input(X)

    @property
    def orbit_size(self) -> int:
        """P = P₁·P₂."""
        return self.first.orbit_size * self.second.orbit_size

    def apply(self, X: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """The compositions `index` [N, S] of each input: [N, S, ...]."""
        N, S = index.shape
        P2 = self.second.orbit_size
        A = self.first.apply(X, index // P2)  # [N, S, ...]
        B = self.second.apply(A.reshape(N * S, *X.shape[1:]), (index % P2).reshape(N * S, 1))  # [N·S, 1, ...]
        return B.reshape(N, S, *X.shape[1:])


def compose(first: Augmentation, second: Augmentation, names: tuple[str, str] = ("first", "second")) -> Augmentation:
    """a₂ ∘ a₁: a `ComposedOrbit` when both are finite orbits, else a `ComposedAugmentation`."""
    if first.orbit_size is not None and second.orbit_size is not None:
        return ComposedOrbit(first, second, names)
    return ComposedAugmentation(first, second, names)


__all__ = ["ComposedAugmentation", "ComposedOrbit", "compose"]
