"""`mean ± sd` as a reader takes it in: the sd to two significant figures and the mean to the same decimal place
("18.00 ± 0.65", "266.0 ± 5.6", "1230 ± 45"), so the two never disagree on how precisely the mean is known."""
from __future__ import annotations

import math


def sd_places(sd: float) -> int:
    """Decimal places that show `sd` (> 0) to two significant figures (negative: round to tens, hundreds …)."""
    places = 1 - math.floor(math.log10(abs(sd)))
    if abs(round(abs(sd), places)) >= 10 ** (2 - places):  # 9.96 rounds to 10.0: two figures are then "10"
        places -= 1
    return places


def _fixed(value: float, places: int) -> str:
    text = f"{round(value, places):.{max(places, 0)}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text  # never "-0.00"


def plus_minus(mean: float | None, sd: float | None, places: int = 3, scale: float = 1.0, unit: str = "") -> str:
    """`mean ± sd` (both times `scale`, the `unit` once at the end): the sd to two significant figures and the mean
    to the same decimal place; without a finite non-zero sd, the mean with `places` decimals; "-" without a mean."""
    if mean is None or not math.isfinite(mean):
        return "-"
    mean = mean * scale
    if sd is None or not math.isfinite(sd) or sd == 0:
        return _fixed(mean, places) + ("" if sd is None else f" ± {_fixed(0.0, places)}") + unit
    sd = abs(sd * scale)
    shown = sd_places(sd)
    return f"{_fixed(mean, shown)} ± {_fixed(sd, shown)}{unit}"


__all__ = ["plus_minus", "sd_places"]
