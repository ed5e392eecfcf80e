"""The invariant GP's learned ranges in words and as live controls (van der Wilk, Bauer, John & Hensman 2018): what
each range of an augmentation is called and in which unit (`RANGES`, the family's `ModelSpec.ranges`), every
learnable range as a `Tunable` the page's sliders set, and the view of the ranges over training.

The ranges themselves belong to the augmentation (`invlab.transforms`: `SymmetricRange` U[−α, α], `UniformRange`
U[lo, hi]); their unit is the range's own (`unit`: "degrees", "pixels", "log factor", ...), written as a symbol
after a number where it has one (`invlab.models.words.unit_symbol`) and in words in the label otherwise.
"""
from __future__ import annotations

from .. import diagnostics as dg
from ..transforms.base import IdentityRange, SymmetricRange, UniformRange
from ..transforms.judging import RangeKind, judge_ranges
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
    |α| and setting v makes α = v); a two-sided range gives its two ends, each on (−limit, limit); a range around
    the identity U[−a, b] its two widths a ("below the identity") and b ("above"), each on (0, limit)."""
    out = []
    for key, r in getattr(augmentation, "ranges", {}).items():
        unit = unit_symbol(r.unit)
        what = RANGES[key].label if key in RANGES else key.replace("_", " ")
        note = f" ({r.unit})" if r.unit and not unit else ""
        if isinstance(r, SymmetricRange):
            p = r.half_width
            out.append(tunable(f"{prefix}ranges.{key}.half_width", p, f"{what} half-width{note}", group="invariance",
                               interval=(0.0, r.limit), scale="linear", unit=unit, value=abs(float(p().detach()))))
        elif isinstance(r, IdentityRange):  # U[−a, b]: two widths on (0, limit), either side of the identity
            for end, word in (("below", "below"), ("above", "above")):
                out.append(tunable(f"{prefix}ranges.{key}.{end}", getattr(r, end),
                                   f"{what} range {word} the identity{note}", group="invariance",
                                   interval=(0.0, r.limit), scale="linear", unit=unit))
        elif isinstance(r, UniformRange):
            for end, word in (("lo", "lower"), ("hi", "upper")):
                out.append(tunable(f"{prefix}ranges.{key}.{end}", getattr(r, end), f"{what} range, {word} end{note}",
                                   group="invariance", interval=(-r.limit, r.limit), scale="linear", unit=unit))
    return out


def range_history_view(series: dict, augmentation, input_shape: tuple[int, ...] | None = None) -> dg.Curves:
    """The learned ranges over training (`series`: range key, e.g. "rotation" or "shear.lo" → values by step) as one
    `Curves` view, each labelled with its unit; the y axis names the unit they share, or points to the legend. Its
    description says, in the judge's words (`invlab.transforms.judging`), which ranges at the latest step leave out
    the identity (a fixed warp, not an invariance) and, for images of `input_shape` (one input's), which move no
    pixel by half a pixel (no invariance)."""
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
                                 "the Invariance tab set them." + latest_judgement(series, augmentation, input_shape))


def augmentation_name(augmentation) -> str:
    """The registered name the judge reads an augmentation's range names by: a combination's "rotation+affine", the
    affine and deformation families' own, or its class's (a plugin's, whose ranges have no known reach)."""
    names = getattr(augmentation, "names", None)
    if names:
        return "+".join(names)
    return {"AffineAugmentation": "affine", "LocalDeformation": "deformation"}.get(type(augmentation).__name__,
                                                                                   type(augmentation).__name__)


def latest_judgement(series: dict, augmentation, input_shape: tuple[int, ...] | None) -> str:
    """The ranges at the latest step judged, as sentences to follow a view's description ("" when all are
    invariances): those that leave out the identity, then those under half a pixel."""
    latest = {key: values[-1] for key, (steps, values) in series.items() if len(values)}
    if not latest:
        return ""
    step = max(int(steps[-1]) for steps, values in series.values() if len(steps))
    judged = judge_ranges(latest, input_shape, augmentation_name(augmentation))
    warps = [j.words() for j in judged if j.kind is RangeKind.WARP]
    small = [j.name for j in judged if j.kind is RangeKind.NEGLIGIBLE]
    sentences = ["; ".join(warps)] if warps else []
    if small:
        sentences.append(f"no invariance in {', '.join(small)} (they move no pixel by half a pixel)")
    if not sentences:
        return ""
    text = ". ".join(sentence[0].upper() + sentence[1:] if i else sentence for i, sentence in enumerate(sentences))
    return f" At step {step}: {text}."


__all__ = ["RANGES", "augmentation_tunables", "range_history_view", "latest_judgement", "augmentation_name"]
