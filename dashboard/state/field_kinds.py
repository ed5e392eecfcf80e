"""How a parameter is shown, on its natural scale, decided from the parameter object alone (so a new family's
config needs no dashboard code); the words that say what it accepts.

- a positive `Number` whose bounds (or soft bounds) span ≥ 3 decades — variances, lengthscales, δ, learning
  rates, jitter, ε: a number box holding the exact value beside a slider over log10 of the value;
- any other bounded `Number` (angles, fractions, weights): a number box beside a linear slider;
- a half-bounded or unbounded `Number`, or one that may be empty (`allow_None`: "auto from the data"): the box;
  empty means None, and a bounded scale keeps its slider;
- an `Integer` that is a seed, or whose range spans two decades or has no upper end: a number box (one whose 0
  keeps all, a subset, shows "all" for 0, as a list's box does when empty);
  a small-range `Integer` (a degree, a layer count): a slider;
- `Selector`: a drop-down; `ListSelector`: a multi-choice; `Boolean`: a check box; `List`: comma-separated
  text; `Dict`: JSON text.
"""
from __future__ import annotations

import math
import re

import param

# Parameters shown per group; anything else of a config stays reachable through the URL and the CLI.
DATA_PARAMS = ["dataset", "rotate", "subset", "odd_even", "classes", "test_fraction", "seed"]
OPTIMISATION_PARAMS = ["learning_rate", "batch_size", "steps", "optimizer", "schedule", "seed", "device", "dtype",
                       "eval_every", "jitter"]
LOG_DECADES = 3  # a positive number whose range spans this many decades gets a log slider
INT_BOX_RATIO = 100  # an integer whose range spans this ratio (two decades) is typed, not slid
BOX_WIDTH, FULL_WIDTH = 105, 300
MESSAGE_COLOUR = "#c0392b"

# Tick text for a slider: the real value, short (0.001, 1, 3.16e+4), never rounded to 0.
_SHOW_NUMBER = """
const v = %s;
const a = Math.abs(v);
if (a !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(2).replace(/\\.?0+e/, "e");
return String(Number(v.toPrecision(3)));
"""
LOG_FORMAT = _SHOW_NUMBER % "Math.pow(10, tick)"
# Text in a number box: the value to six significant digits, tiny and huge ones as 1e-6 / 1e12 (Number() reads both).
BOX_FORMAT = """
const a = Math.abs(tick);
if (a !== 0 && (a >= 1e6 || a < 1e-4)) return tick.toExponential(6).replace(/\\.?0+e/, "e").replace("e+", "e");
return String(Number(tick.toPrecision(6)));
"""
LINEAR_FORMAT = _SHOW_NUMBER % "tick"


# -- what a parameter needs, from the parameter alone ------------------------------------------------------------------
def span(p: param.Parameter) -> tuple[float | None, float | None]:
    """The interval a slider spans: the soft bounds where given (e.g. jitter: 1e-10..0.1 though 0 is allowed),
    else the hard bounds."""
    hard = p.bounds or (None, None)
    soft = getattr(p, "softbounds", None) or (None, None)
    return (soft[0] if soft[0] is not None else hard[0], soft[1] if soft[1] is not None else hard[1])


def is_seed(name: str) -> bool:
    """Whether a parameter named `name` is a seed (shown in a number box, never on a slider)."""
    return name == "seed" or name.endswith("_seed") or name.startswith("seed_")


def number_scale(p: param.Parameter) -> str | None:
    """'log', 'linear' or None (a number box alone) for a float parameter."""
    lo, hi = span(p)
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return None
    if lo > 0 and math.log10(hi / lo) >= LOG_DECADES - 1e-9:
        return "log"
    return "linear"


def widget_kind(name: str, p: param.Parameter) -> str:
    """How the parameter is shown: 'checkbox', 'select', 'list', 'dict', 'int-box', 'int-slider', 'number-box',
    'log-slider', 'linear-slider' (the two sliders come with a number box for the exact value) or 'multi'."""
    if isinstance(p, param.Boolean):
        return "checkbox"
    if isinstance(p, param.ListSelector):
        return "multi"
    if isinstance(p, param.Selector) or (getattr(p, "objects", None) and not isinstance(p, param.List)):
        return "select"
    if isinstance(p, param.List):
        return "list"
    if isinstance(p, param.Dict):
        return "dict"
    if isinstance(p, param.Integer):
        lo, hi = span(p)
        if is_seed(name) or lo is None or hi is None or (hi + 1) / (max(lo, 0) + 1) >= INT_BOX_RATIO:
            return "int-box"
        return "int-slider"
    if isinstance(p, param.Number):
        scale = number_scale(p)
        return "number-box" if scale is None else f"{scale}-slider"
    return "text"


# How a parameter's doc says that 0 stands for a word rather than a number ("…; 0 keeps all."): its box shows the
# word, as a list's box shows "all" when empty.
_ZERO_MEANS = re.compile(r"\b0 keeps (all)\b")


def zero_word(p: param.Parameter) -> str | None:
    """The word an integer's box shows for 0 where its doc says 0 keeps everything ("all": a subset), else None."""
    found = _ZERO_MEANS.search(p.doc or "") if isinstance(p, param.Integer) else None
    return found.group(1) if found else None


def _g(x) -> str:
    """A number as a person writes it: 0.001, 1e-06, 50, 1e+12."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    return str(x) if isinstance(x, int) else format(x, "g")


def allowed(name: str, p: param.Parameter) -> str:
    """What the parameter accepts, in words (shown when a value is refused)."""
    if isinstance(p, param.Number):
        whole = isinstance(p, param.Integer)
        noun = "a whole number" if whole else "a number"
        lo, hi = p.bounds or (None, None)
        inc_lo, inc_hi = getattr(p, "inclusive_bounds", (True, True))
        if lo is not None and hi is not None:
            text = f"{noun} from {_g(lo)} to {_g(hi)}"
            if not (inc_lo and inc_hi):
                text += " (" + " and ".join(
                    f"not {_g(b)} itself" for b, inc in ((lo, inc_lo), (hi, inc_hi)) if not inc) + ")"
        elif lo is not None:
            text = f"{noun} {'≥' if inc_lo else '>'} {_g(lo)}"
        elif hi is not None:
            text = f"{noun} {'≤' if inc_hi else '<'} {_g(hi)}"
        else:
            text = noun
        return text + ("; empty = automatic" if p.allow_None else "")
    if isinstance(p, param.List):
        item = getattr(p, "item_type", None) or getattr(p, "class_", None)
        if item is int:
            return "whole numbers separated by commas, e.g. 4, 9 (empty: all)"
        return "values separated by commas"
    if isinstance(p, param.Dict):
        return "a JSON object, e.g. {\"num_train\": 500}"
    if getattr(p, "objects", None):
        return "one of " + ", ".join(map(str, p.objects))
    return "a valid value"


def _label(name: str, p: param.Parameter) -> str:
    return p.label or name.replace("_", " ").capitalize()


def _round_log(x: float) -> float:
    """A log slider's position as a value with three significant digits (0.0316, not 0.031622776…)."""
    return float(f"{10.0 ** x:.3g}")


def _nice_step(width: float) -> float:
    """A step of 1, 2 or 5 × 10^k near `width`."""
    if not (width > 0 and math.isfinite(width)):
        return 1.0
    exp = math.floor(math.log10(width))
    for m in (1, 2, 5, 10):
        if m * 10 ** exp >= width * 0.999:
            return float(f"{m * 10 ** exp:.3g}")
    return 10.0 ** (exp + 1)

