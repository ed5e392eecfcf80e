"""The invariant GP's learned ranges in words and as live controls (van der Wilk, Bauer, John & Hensman 2018): what
each range of an augmentation is called and in which unit (`RANGES`, the family's `ModelSpec.ranges`), every
learnable range as a `Tunable` the page's sliders set, and the view of the ranges over training.

The ranges themselves belong to the augmentation (`invlab.transforms`: `SymmetricRange` U[−α, α], `UniformRange`
U[lo, hi]); their unit is the range's own (`unit`: "degrees", "pixels", "log factor", ...), written as a symbol
after a number where it has one (`invlab.models.words.unit_symbol`) and in words in the label otherwise.
"""
from __future__ import annotations

from .. import diagnostics as dg
from ..transforms.base import SymmetricRange, UniformRange
from .base import Tunable, tunable
from .words import RangeWords, unit_symbol

# range name → what it is and its unit's symbol: the invariant family's `ModelSpec.ranges` (the page labels the
# `range.<name>` metrics with it); a plugin's augmentation's range not listed is called by its own name
RANGES: dict[str, RangeWords] = {
    "rotation": RangeWords("rotation", "°"),
    "scale_x": RangeWords("horizontal log-scale"),
    "scale_y": RangeWords("vertical log-scale"),
    "shear": RangeWords("shear"),
    "translate_x": RangeWords("horizontal shift"),
    "translate_y": RangeWords("vertical shift"),
    "strength": RangeWords("deformation strength", "px"),
    "scale": RangeWords("log-scale jitter"),
}


def augmentation_tunables(augmentation, prefix: str) -> list[Tunable]:
    """Every learnable range of an augmentation as a `Tunable` (finite orbits have none).

    A symmetric range U[−α, α] is one half-width on [0, limit) (the sign of α does not matter, so the value is
    |α| and setting v makes α = v); a two-sided range gives its two ends, each on (−limit, limit)."""
    out = []
    for key, r in getattr(augmentation, "ranges", {}).items():
        unit = unit_symbol(r.unit)
        what = RANGES[key].label if key in RANGES else key.replace("_", " ")
        note = f" ({r.unit})" if r.unit and not unit else ""
        if isinstance(r, SymmetricRange):
            p = r.half_width
            out.append(tunable(f"{prefix}ranges.{key}.half_width", p, f"{what} half-width{note}", group="invariance",
                               interval=(0.0, r.limit), scale="linear", unit=unit, value=abs(float(p().detach()))))
        elif isinstance(r, UniformRange):
            for end, word in (("lo", "lower"), ("hi", "upper")):
                out.append(tunable(f"{prefix}ranges.{key}.{end}", getattr(r, end), f"{what} range, {word} end{note}",
                                   group="invariance", interval=(-r.limit, r.limit), scale="linear", unit=unit))
    return out


def range_history_view(series: dict, augmentation) -> dg.Curves:
    """The learned ranges over training (`series`: range key, e.g. "rotation" or "shear.lo" → values by step) as one
    `Curves` view, each labelled with its unit; the y axis names the unit they share, or points to the legend."""
    units = {name: unit_symbol(getattr(r, "unit", "")) or getattr(r, "unit", "")
             for name, r in getattr(augmentation, "ranges", {}).items()}
    unit_of = lambda key: units.get(key.split(".")[0], "")  # noqa: E731 — "shear.lo" → the unit of "shear"
    labels = {key: key.replace(".", " ") + (f" ({unit_of(key)})" if unit_of(key) else "") for key in series}
    shared = {unit_of(key) for key in series}
    if len(series) == 1:
        key = next(iter(series))
        ylabel = f"{key.replace('.', ' ')} range" + (f" ({unit_of(key)})" if unit_of(key) else "")
    else:
        ylabel = "range" + (f" ({shared.pop()})" if len(shared) == 1 and "" not in shared else " (units in legend)")
    return dg.Curves(title="Augmentation ranges over training", series=series, labels=labels, xlabel="training step",
                     ylabel=ylabel, min_span=1.0 if ylabel.endswith("(°)") else 0.0,
                     covers=tuple(f"range.{k}" for k in series),
                     description="The learned half-widths (or bounds) of the augmentation distribution; the sliders on "
                                 "the Invariance tab set them.")


__all__ = ["RANGES", "augmentation_tunables", "range_history_view"]
