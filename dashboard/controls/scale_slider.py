"""The slider a `ParamControl` puts beside its number box, on the quantity's natural scale.

A scale (variance, lengthscale, δ, learning rate, jitter) slides over log10 of its value, anything else bounded
(angles, fractions) over the value itself; the ends are the parameter's soft bounds, else its hard bounds, a step
inside an open end. The stops are even on that scale: by default about 400 of them over the range (1, 2 or 5 ×
10^k), or `log_step` decades apart where a control asks for coarser ones (the prior page's δ: ten stops a decade).
A released position stands for a value with just enough significant digits to tell neighbouring stops apart
(0.0316, not 0.031622776…), so the box beside it shows a number a person would type.
"""
from __future__ import annotations

import math

import panel as pn
import param
from bokeh.models import CustomJSTickFormatter

from invlab.dashboard.state.field_kinds import LINEAR_FORMAT, LOG_FORMAT, _nice_step, span

DEFAULT_DIGITS = 3  # significant digits of a log slider's value at the default, fine stops


def log_digits(step: float | None) -> int:
    """Significant digits that tell two log-slider stops `step` decades apart from each other (3 by default; 2 for
    ten stops a decade: 1, 1.3, 1.6, 2, 2.5, 3.2, 4, 5, 6.3, 7.9)."""
    if step is None:
        return DEFAULT_DIGITS
    return max(1, 1 + math.ceil(-math.log10(10.0 ** step - 1.0) - 1e-9))


def make_slider(p: param.Parameter, kind: str, value, width: int, log_step: float | None = None):
    """The slider for parameter `p` shown as `kind` ("log-slider" or "linear-slider"), at `value`: (the
    `FloatSlider`, its (start, end) in slider units). The caller watches its `value_throttled`."""
    lo, hi = span(p)
    inc_lo, inc_hi = getattr(p, "inclusive_bounds", (True, True))
    if kind == "log-slider":
        start, end = math.log10(lo), math.log10(hi)
        step = log_step or _nice_step((end - start) / 400)
        fmt = LOG_FORMAT
    else:
        start, end = float(lo), float(hi)
        step = _nice_step((end - start) / 200)
        fmt = LINEAR_FORMAT
    hard_lo, hard_hi = p.bounds or (None, None)
    if lo == hard_lo and not inc_lo:  # an open end cannot be chosen: stay a step inside it
        start += step
    if hi == hard_hi and not inc_hi:
        end -= step
    slider = pn.widgets.FloatSlider(label="", start=start, end=end, step=step,
                                    value=position(kind, (start, end), value), show_value=False, tooltips=True,
                                    width=width, format=CustomJSTickFormatter(code=fmt), margin=(28, 10, 5, 5))
    return slider, (start, end)


def position(kind: str, slider_range: tuple[float, float], value) -> float:
    """Where `value` sits on the slider (its log10 on a log slider), clamped to the slider's ends."""
    start, end = slider_range
    if value is None or not isinstance(value, (int, float)) or not math.isfinite(value):
        return start + 0.5 * (end - start)  # "auto": the middle; the box says auto
    if kind == "log-slider":
        pos = math.log10(value) if value > 0 else start
    else:
        pos = float(value)
    return min(max(pos, start), end)


def value_at(kind: str, pos: float, digits: int = DEFAULT_DIGITS) -> float:
    """The value a released slider position stands for, with `digits` significant digits on a log slider."""
    if kind == "log-slider":
        return float(f"{10.0 ** pos:.{digits}g}")
    return float(f"{pos:.6g}")


def box_step(kind: str, p: param.Parameter, value) -> float:
    """The number box's arrow step: a tenth of the value's order of magnitude on a log scale, else the slider's."""
    if kind == "log-slider":
        ref = value if isinstance(value, (int, float)) and value and value > 0 else span(p)[0]
        return float(f"{10.0 ** math.floor(math.log10(ref)):.3g}")
    if kind == "linear-slider":
        lo, hi = span(p)
        return _nice_step((hi - lo) / 200)
    return 0.1


__all__ = ["DEFAULT_DIGITS", "box_step", "log_digits", "make_slider", "position", "value_at"]
