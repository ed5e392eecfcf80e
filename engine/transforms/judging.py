"""Judging learned augmentation ranges: is a range an invariance, no invariance at all, or a fixed warp?

van der Wilk et al. (2018) learn each affine parameter's range U[lo, hi] with both ends free. A learned range says
the model is invariant to that transformation only when it holds the identity (0, no change, for every built-in
parameter): a range that leaves 0 out — shear [0.074, 0.088] — moves every input the same way, a fixed warp of the
input, not an invariance. A range that holds the identity but moves no pixel of the image by half a pixel or more
(`NEGLIGIBLE_PIXELS`) changes nothing the data can see, so it is no invariance either.

How far a range moves the image (its *reach*, in pixels) is measured at the image's edge, R = max(H, W)/2 from the
centre, for the end of the range farther from the identity:

    rotation            R·|θ|·π/180                         (θ in degrees)
    scale_x, scale_y    W/2·|e^s − 1|, H/2·|e^s − 1|        (s a log factor)
    shear               H/2·|sh|                            (column offset per row below the centre)
    translate_x, _y     |t|·W, |t|·H                        (t a fraction of the width / height)
    strength            |s|                                 (the deformation's displacement, in pixels)
    deformation's rotation and scale: as above with the window's radius ρ = window·max(H, W) in place of R, times
    e^−½ (the local jitter fades with a Gaussian of width ρ, so a pixel at distance ρ from its centre moves most).

A key this module does not know (a plugin's range) or a range on vector inputs has no reach: it is never called
negligible, but a range that leaves out 0 is still a warp.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from enum import Enum

from .affine import AFFINE_PARAMETERS
from .deformation import DEFORMATION_PARAMETERS, LocalDeformation

NEGLIGIBLE_PIXELS = 0.5  # a range whose ends move no pixel by more than this is no invariance

WINDOW = inspect.signature(LocalDeformation.__init__).parameters["window"].default  # the built-in part's window


class RangeKind(str, Enum):
    """What a learned range is: an invariance, no invariance (it moves nothing by half a pixel), or a fixed warp
    (it leaves the identity out)."""

    INVARIANCE = "invariance"
    NEGLIGIBLE = "negligible"
    WARP = "warp"


@dataclass(frozen=True)
class RangeJudgement:
    """One learned range judged: its stored name ("rotation", "shear", a combination's "affine_rotation"), its ends
    in its unit (a symmetric range's as −α, α), its kind, its reach (pixels the farther end moves a pixel at the
    image's edge; None when the unit is unknown) and its unit ("degrees", "log factor", "" unknown)."""

    name: str
    lo: float
    hi: float
    kind: RangeKind
    reach: float | None
    unit: str

    def words(self) -> str:
        """The judgement in words: "rotation [−44.2°, 45.1°]", "no invariance in shear (under half a pixel)",
        "scale_x [0.125, 0.161] leaves out 0 (no change): a fixed warp, not an invariance"."""
        if self.kind is RangeKind.NEGLIGIBLE:
            return f"no invariance in {self.name} (under half a pixel)"
        span = f"{self.name} [{_number(self.lo, self.unit)}, {_number(self.hi, self.unit)}]"
        if self.kind is RangeKind.WARP:
            return f"{span} leaves out 0 (no change): a fixed warp, not an invariance"
        return span


def _number(value: float, unit: str) -> str:
    """A range end as the page writes it: three significant digits, a true minus sign, the unit's symbol."""
    from ..models.words import unit_symbol  # imported here: the model layer sits above the transforms

    symbol = unit_symbol(unit)
    text = ("−" if value < 0 else "") + f"{abs(value):.3g}"
    return text + (symbol if symbol == "°" else f" {symbol}" if symbol else "")


# -- reach per built-in parameter: f(end, H, W) → pixels -----------------------------------------------------------
def _local(H: int, W: int) -> float:
    """The farthest a deformation's local jitter moves a pixel per unit of displacement at its window's radius."""
    return WINDOW * max(H, W) * math.exp(-0.5)


_AFFINE_REACH = {
    "rotation": lambda v, H, W: max(H, W) / 2 * abs(v) * math.pi / 180,
    "scale_x": lambda v, H, W: W / 2 * abs(math.expm1(v)),
    "scale_y": lambda v, H, W: H / 2 * abs(math.expm1(v)),
    "shear": lambda v, H, W: H / 2 * abs(v),
    "translate_x": lambda v, H, W: abs(v) * W,
    "translate_y": lambda v, H, W: abs(v) * H,
}
_DEFORMATION_REACH = {
    "strength": lambda v, H, W: abs(v),
    "rotation": lambda v, H, W: _local(H, W) * abs(v) * math.pi / 180,
    "scale": lambda v, H, W: _local(H, W) * abs(math.expm1(v)),
}
_AFFINE = {k: (f, AFFINE_PARAMETERS[k][1]) for k, f in _AFFINE_REACH.items()}
_DEFORMATION = {k: (f, DEFORMATION_PARAMETERS[k][1]) for k, f in _DEFORMATION_REACH.items()}
_ROTATION = {"rotation": _AFFINE["rotation"]}
# the built-in parts' ranges by the part's registered name; a finite orbit has none
BUILTIN_RANGES: dict[str, dict] = {
    "rotation": _ROTATION, "auto": _ROTATION, "affine": _AFFINE, "deformation": _DEFORMATION,
    **{name: {} for name in ("rot90", "flips", "permutations", "sign_flips", "cyclic_shifts", "identity", "none")},
}


def _owner(key: str, parts: list[str], keys: set[str]):
    """The (reach function, unit) of range `key` (without '.lo'/'.hi'), from the part of `parts` it belongs to, or
    None. A combination renames a second part's range whose name the first part also uses `<part>_<name>`
    (`invlab.transforms.compose`), so an unrenamed name is the first part's whenever the first part may have it."""
    if not parts:  # no augmentation named: read the built-in names (affine's before the deformation's)
        parts = ["affine", "deformation"]
    tables = [BUILTIN_RANGES.get(p) for p in parts]
    for part, table in zip(parts[1:], tables[1:]):
        if table is not None and key.startswith(f"{part}_") and key[len(part) + 1:] in table:
            return table[key[len(part) + 1:]]
    first = tables[0]
    if first is not None and key in first:
        return first[key]
    for part, table in zip(parts[1:], tables[1:]):
        # the second part's own name, unless an unknown first part may hold it (then the second's is renamed)
        if table is not None and key in table and (first is not None or f"{part}_{key}" in keys):
            return table[key]
    return None


def _ends(values: dict[str, float]) -> dict[str, tuple[float, float]]:
    """Stored range values → {name: (lo, hi)} in order of appearance: "rotation": α → (−|α|, |α|); "shear.lo",
    "shear.hi" → their ends, ordered (a free range's ends may cross; one end alone is a single value)."""
    ends: dict[str, list[float]] = {}
    for key, value in values.items():
        key = key.removeprefix("range.")
        name, _, end = key.partition(".")
        value = float(value)
        ends.setdefault(name, [])
        ends[name] += [-abs(value), abs(value)] if not end else [value]
    return {name: (min(v), max(v)) for name, v in ends.items()}


def judge_ranges(values: dict[str, float], input_shape: tuple[int, ...] | None,
                 augmentation: str = "") -> list[RangeJudgement]:
    """Each learned range of `values` (the stored keys: a symmetric range as `"rotation": α`, a two-sided one as
    `"shear.lo"`, `"shear.hi"`) judged for inputs of `input_shape` (one input's: (C, H, W) images, (D,) vectors,
    None unknown) under `augmentation` (its registered name, or a combination's "rotation+affine"; "" reads the
    built-in names): a WARP when it leaves out 0, NEGLIGIBLE when its reach is under `NEGLIGIBLE_PIXELS` (a warp
    that small moves nothing either), else an INVARIANCE."""
    parts = [p.partition(":")[0] for p in augmentation.split("+")] if augmentation else []
    image = input_shape is not None and len(input_shape) >= 2
    H, W = (int(input_shape[-2]), int(input_shape[-1])) if image else (0, 0)
    ranges = _ends(values)
    out = []
    for name, (lo, hi) in ranges.items():
        found = _owner(name, parts, set(ranges))
        reach = max(found[0](lo, H, W), found[0](hi, H, W)) if found is not None and image else None
        if reach is not None and reach < NEGLIGIBLE_PIXELS:
            kind = RangeKind.NEGLIGIBLE
        elif lo > 0 or hi < 0:
            kind = RangeKind.WARP
        else:
            kind = RangeKind.INVARIANCE
        out.append(RangeJudgement(name, lo, hi, kind, reach, found[1] if found is not None else ""))
    return out


__all__ = ["NEGLIGIBLE_PIXELS", "RangeKind", "RangeJudgement", "judge_ranges", "BUILTIN_RANGES"]
