"""What a discover candidate's learned ranges claim, in words (the judge is `invlab.transforms.judging.judge_ranges`).

An invariance is a distribution around the identity: a learned range that leaves out 0 (every built-in parameter's
"no change") is a fixed warp of the input, never an invariance; a range whose ends move no pixel by more than half a
pixel is no invariance in that parameter. A candidate with learned ranges none of which is an invariance is no
invariance at all, whatever its ELBO: the verdict cannot name it (`discover_verdict.helps`). The table's cell, the
verdict's clause, the notes and the JSON's `kind` of each learned range all read the same judgements.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..transforms.judging import RangeKind

if TYPE_CHECKING:
    from .discover_report import CandidateResult

INVARIANCE, NEGLIGIBLE, WARP = RangeKind.INVARIANCE, RangeKind.NEGLIGIBLE, RangeKind.WARP


def judge(c: CandidateResult) -> list:
    """The judgements (`RangeJudgement`) of `c`'s final mean learned ranges on inputs of `c.input_shape` (None: an
    old sweep that stored no shape, so no range is judged negligible); [] for a candidate without learned ranges."""
    from ..transforms.judging import judge_ranges

    values = {k: v["mean"] for k, v in c.learned.items() if v.get("mean") is not None}
    if not values:
        return []
    shape = tuple(c.input_shape) if c.input_shape else None
    return list(judge_ranges(values, shape, c.candidate))


def of_kind(c: CandidateResult, kind: RangeKind) -> list:
    """`c`'s judgements of `kind` (a `RangeKind`: invariance, negligible or warp)."""
    return [j for j in c.judgements if j.kind == kind]


def no_invariance(c: CandidateResult) -> bool:
    """Whether `c` learned ranges and none of them is an invariance (each a warp or under half a pixel)."""
    return bool(c.judgements) and not of_kind(c, INVARIANCE)


def kind_of(c: CandidateResult, key: str) -> str | None:
    """The kind of the judged range a stored key belongs to ('shear.lo' → the judgement of 'shear'); None: unjudged."""
    name, _, side = key.rpartition(".")
    name = name if side in ("lo", "hi") and name else key
    return next((RangeKind(j.kind).value for j in c.judgements if j.name == name), None)


def _degrees(j) -> bool:
    return j.unit.startswith("deg") or j.unit == "°"


def _bounds(j, places: int | None = None) -> str:
    """`[lo, hi]` of a judgement in its unit: whole degrees for an angle, else three significant figures."""
    if _degrees(j):
        return f"[{j.lo:.0f}°, {j.hi:.0f}°]".replace("-", "−")
    return f"[{j.lo:.3g}, {j.hi:.3g}]".replace("-", "−")


def describe(c: CandidateResult) -> str:
    """The verdict's claim about `c`: 'rotation-invariant up to ±45°' for rotation, else 'invariant under affine:
    rotation [−44°, 45°]; no invariance in shear, …; scale_x is a fixed warp, not an invariance' (only the ranges
    judged invariances are named as such); a finite orbit: 'invariant under flips'."""
    invariances = of_kind(c, INVARIANCE)
    if c.candidate == "rotation" and [j.name for j in invariances] == ["rotation"] and len(c.judgements) == 1:
        return f"rotation-invariant up to ±{invariances[0].hi:.0f}°"
    text = f"invariant under {c.candidate}"
    if invariances:
        text += ": " + ", ".join(f"{j.name} {_bounds(j)}" for j in invariances)
    negligible = [j.name for j in of_kind(c, NEGLIGIBLE)]
    if negligible:
        text += f"; no invariance in {', '.join(negligible)}"
    warps = [j.name for j in of_kind(c, WARP)]
    if warps:
        text += f"; {', '.join(warps)} {'is a fixed warp' if len(warps) == 1 else 'are fixed warps'}, not an invariance"
    return text


def no_invariance_note(c: CandidateResult) -> str:
    """Why `c` (no invariance: `no_invariance(c)`) cannot be the verdict's, in the judge's words."""
    warps = of_kind(c, WARP)
    if not warps:
        return f"{c.candidate}'s learned ranges moved no pixel by more than half a pixel: no invariance"
    return (f"{c.candidate}'s learned ranges are no invariance: "
            + "; ".join(j.words() for j in c.judgements) + f"; so {c.candidate} cannot be the verdict's candidate")


def range_cell(c: CandidateResult, shown) -> list[str]:
    """A candidate's learned ranges as the ranking's cell lists them: the invariances first (`shown(name)` formats a
    range's final value), then each warp as 'scale_x [0.125, 0.161] (a warp)', then 'no invariance in shear, …'."""
    parts = [shown(j.name) for j in of_kind(c, INVARIANCE)]
    parts += [f"{shown(j.name)} (a warp)" for j in of_kind(c, WARP)]
    negligible = [j.name for j in of_kind(c, NEGLIGIBLE)]
    if negligible:
        parts.append(f"no invariance in {', '.join(negligible)}")
    return parts


__all__ = ["INVARIANCE", "NEGLIGIBLE", "WARP", "describe", "judge", "kind_of", "no_invariance",
           "no_invariance_note", "of_kind", "range_cell"]
