"""Controls built from the engine's param configs: bounds, choices and docs are never copied here.

Each parameter gets one `ParamControl`: a widget chosen from the parameter object itself, on the quantity's
natural scale, and a message line under it. The widget never writes into the config directly: a value the
user enters is offered to the parameter, and one the parameter refuses (out of bounds, not a number, not a
list of class labels) is explained under the field while the field returns to the value in use. The config
object (the page's state, synced with the URL) therefore only ever holds valid values, and the widget follows
it when it changes from elsewhere (a link, a lesson preset, code).

How a parameter is shown, decided from the parameter alone so a new family's config needs no dashboard code:

- a positive `Number` whose bounds (or soft bounds) span ≥ 3 decades — variances, lengthscales, δ, learning
  rates, jitter, ε: a number box holding the exact value beside a slider over log10 of the value;
- any other bounded `Number` (angles, fractions, weights): a number box beside a linear slider;
- a half-bounded or unbounded `Number`, or one that may be empty (`allow_None`: "auto from the data"): the box;
  empty means None, and a bounded scale keeps its slider;
- an `Integer` that is a seed, or whose range spans two decades or has no upper end: a number box;
  a small-range `Integer` (a degree, a layer count): a slider;
- `Selector`: a drop-down; `ListSelector`: a multi-choice; `Boolean`: a check box; `List`: comma-separated
  text; `Dict`: JSON text.
"""
from __future__ import annotations

import json
import logging
import math
import time

import panel as pn
import param
from bokeh.models import CustomJSTickFormatter

from engine.data import list_datasets
from engine.errors import InvlabError

from .safe_text import html_text

log = logging.getLogger(__name__)

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


# -- one parameter ---------------------------------------------------------------------------------------------------
class ParamControl(pn.viewable.Viewer):
    """One parameter of a param object: its widget(s) and a message line under them.

    `obj`/`pname`: the param object and the parameter's name. `options`: choices for a drop-down where the
    parameter does not list them itself (the dataset name). `scale`: force 'log' or 'linear' (a `Tunable` says
    its own scale). The control offers each entered value to the parameter, explains a refusal under the field
    and puts the field back to the value in use; it follows the parameter when it changes from elsewhere.
    """

    def __init__(self, obj: param.Parameterized, pname: str, *, options=None, scale: str | None = None,
                 label: str | None = None, width: int = FULL_WIDTH):
        super().__init__()
        self.obj, self.pname = obj, pname
        self.p = obj.param[pname]
        self.kind = "select" if options is not None else widget_kind(pname, self.p)
        if scale is not None and self.kind in ("log-slider", "linear-slider", "number-box"):
            lo, hi = span(self.p)
            if lo is not None and hi is not None and (scale == "linear" or lo > 0):
                self.kind = f"{scale}-slider"
        self.label = label or _label(pname, self.p)
        self._slider_width = max(width - BOX_WIDTH - 15, 80)
        self.error = ""  # the last refusal's message, "" once a value is accepted
        self._syncing = False
        self._keep_message = False  # set while a running model's value is shown: its changes are not the user's
        self.slider = None
        self.box = self._make_widget(options, width)
        self.message = pn.pane.HTML("", visible=False, margin=(0, 10, 4, 10), width=width)
        self.note = pn.pane.HTML("", visible=False, margin=(0, 10, 4, 10), width=width)  # why it does not apply
        self.not_applicable = ""  # the reason shown in `note`, "" while the control applies
        if self.slider is not None:
            row = pn.Row(self.box, self.slider, margin=0)
        else:
            row = self.box
        self.layout = pn.Column(row, self.message, self.note, margin=0)
        self._watcher = obj.param.watch(self._follow, [pname])

    # widgets ------------------------------------------------------------------------------------------------------
    def _make_widget(self, options, width):
        p, value, kind = self.p, getattr(self.obj, self.pname), self.kind
        doc = p.doc or None

        def make(cls, **kw):  # the doc becomes the label's tooltip where the widget has one
            extra = {"description": doc} if doc and "description" in cls.param else {}
            return cls(label=self.label, **extra, **kw)

        if kind == "checkbox":
            w = make(pn.widgets.Checkbox, value=bool(value), width=width)
        elif kind == "select":
            objects = list(options) if options is not None else list(p.objects)
            if value not in objects and value is not None:
                objects.append(value)
            w = make(pn.widgets.Select, options=objects, value=value, width=width)
        elif kind == "multi":
            w = make(pn.widgets.MultiChoice, options=list(p.objects), value=list(value or []), width=width)
        elif kind in ("list", "dict", "text"):
            w = make(pn.widgets.TextInput, value=self._as_text(value), placeholder="all" if kind == "list" else "",
                     width=width)
        elif kind == "int-slider":
            lo, hi = span(p)
            w = make(pn.widgets.IntSlider, start=int(lo), end=int(hi), value=int(value), step=1, width=width)
        elif kind == "int-box":  # no start/end: the browser would clamp −5 to 0 silently instead of refusing it
            w = make(pn.widgets.IntInput, value=value, step=1, width=width, placeholder="")
        else:  # a float: the exact value in a box, and a slider on its scale where it has a range
            w = make(pn.widgets.FloatInput, value=value, width=width if kind == "number-box" else BOX_WIDTH,
                     placeholder="auto" if p.allow_None else "", step=self._box_step(value),
                     format=CustomJSTickFormatter(code=BOX_FORMAT))
            if kind in ("log-slider", "linear-slider"):
                self.slider = self._make_slider(value)
        watched = "value_throttled" if isinstance(w, pn.widgets.IntSlider) else "value"
        w.param.watch(self._from_widget, watched)
        return w

    def _make_slider(self, value):
        p = self.p
        lo, hi = span(p)
        inc_lo, inc_hi = getattr(p, "inclusive_bounds", (True, True))
        if self.kind == "log-slider":
            start, end = math.log10(lo), math.log10(hi)
            step = _nice_step((end - start) / 400)
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
        self._slider_range = (start, end)
        slider = pn.widgets.FloatSlider(label="", start=start, end=end, step=step, value=self._position(value),
                                        show_value=False, tooltips=True, width=self._slider_width,
                                        format=CustomJSTickFormatter(code=fmt), margin=(28, 10, 5, 5))
        slider.param.watch(self._from_slider, "value_throttled")
        return slider

    def _position(self, value) -> float:
        """Where `value` sits on the slider (its log10 on a log slider), clamped to the slider's ends."""
        start, end = self._slider_range
        if value is None or not isinstance(value, (int, float)) or not math.isfinite(value):
            return start + 0.5 * (end - start)  # "auto": the middle; the box says auto
        if self.kind == "log-slider":
            pos = math.log10(value) if value > 0 else start
        else:
            pos = float(value)
        return min(max(pos, start), end)

    def _box_step(self, value) -> float:
        """The box's arrow step: a tenth of the value's order of magnitude on a log scale, else the slider's."""
        if self.kind == "log-slider":
            ref = value if isinstance(value, (int, float)) and value and value > 0 else span(self.p)[0]
            return float(f"{10.0 ** math.floor(math.log10(ref)):.3g}")
        if self.kind == "linear-slider":
            lo, hi = span(self.p)
            return _nice_step((hi - lo) / 200)
        return 0.1

    def _as_text(self, value) -> str:
        if self.kind == "list":
            return ", ".join(str(v) for v in (value or []))
        if self.kind == "dict":
            return json.dumps(value or {})
        return "" if value is None else str(value)

    def _parse(self, text: str):
        """Text from a list / dict box as a value for the parameter (ValueError when it cannot be one)."""
        text = (text or "").strip()
        if self.kind == "dict":
            return json.loads(text) if text else {}
        if self.kind != "list":
            return text
        items = [s.strip() for s in text.strip("[]").split(",") if s.strip()]
        item_type = getattr(self.p, "item_type", None) or getattr(self.p, "class_", None)
        if item_type is int:
            out = []
            for s in items:
                f = float(s)  # raises ValueError for 'abc'
                if not f.is_integer():
                    raise ValueError(f"{s} is not a whole number")
                out.append(int(f))
            return out
        if item_type is float:
            return [float(s) for s in items]
        return items

    # the two directions ------------------------------------------------------------------------------------------
    def _from_widget(self, event) -> None:
        if self._syncing:
            return
        raw = event.new
        try:
            value = self._parse(raw) if self.kind in ("list", "dict") else raw
        except ValueError:
            self._refuse(raw)
            return
        self.apply(value, shown=raw)

    def _from_slider(self, event) -> None:
        if self._syncing or event.new is None:
            return
        value = _round_log(event.new) if self.kind == "log-slider" else float(f"{event.new:.6g}")
        self.apply(value)

    def apply(self, value, shown=None) -> bool:
        """Offer `value` to the parameter; True if it was taken. A refusal is explained under the field and the
        widgets go back to the value in use."""
        before = getattr(self.obj, self.pname)
        try:
            setattr(self.obj, self.pname, value)
        except Exception as err:  # noqa: BLE001 — param (or a watcher of the config) refused it: say so
            log.debug("%s: %r not taken: %s", self.pname, value, err)
            if getattr(self.obj, self.pname) == before and not _same(before, value):
                self._refuse(value if shown is None else shown, err)
            else:  # taken, but something downstream failed: the field shows the value in use, with the error
                self._show_message(str(err))
                self.show(getattr(self.obj, self.pname))
            return False
        self._show_message("")
        self.show(getattr(self.obj, self.pname))  # e.g. a slider moved to where the typed value lies
        return True

    def _refuse(self, shown, err: Exception | None = None) -> None:
        in_use = getattr(self.obj, self.pname)
        reason = allowed(self.pname, self.p)
        if err is not None and (reason == "a valid value" or isinstance(err, InvlabError)):
            reason = _plain(str(err))  # the page's own refusal (e.g. more points than the data has) says it best
        shown_text = _g(shown) if not isinstance(shown, str) else shown
        if in_use is None:
            in_use_text = "empty (automatic)"
        elif self.kind in ("list", "dict"):
            in_use_text = self._as_text(in_use) or "empty"
        else:
            in_use_text = _g(in_use)
        self._show_message(f"{self.label} can't be {shown_text!s}: {reason}. Kept {in_use_text}.")
        self.show(in_use)

    def _show_message(self, text: str) -> None:
        self.error = text
        if text:
            self.message.object = (f'<div class="invlab-field-message" data-param="{self.pname}" '
                                   f'style="color:{MESSAGE_COLOUR};font-size:12px;line-height:1.3">'
                                   f'{html_text(text)}</div>')
        self.message.visible = bool(text)

    def _follow(self, event) -> None:
        """The parameter changed (this control, a link, a preset, code): show its value, clear a stale message."""
        if not (self._syncing or self._keep_message):
            self._show_message("")
        self.show(event.new)

    def show(self, value) -> None:
        """Put `value` into the widgets without offering it back to the parameter."""
        self._syncing = True
        try:
            if self.kind in ("list", "dict", "text"):
                self.box.value = self._as_text(value)
            elif self.kind == "multi":
                self.box.value = list(value or [])
            elif self.kind == "int-slider" and value is not None:
                self.box.value = int(value)
            else:
                self.box.value = value
            if self.slider is not None:
                self.slider.value = self._position(value)
                if self.kind == "log-slider" and isinstance(value, (int, float)) and value and value > 0:
                    self.box.step = self._box_step(value)
        finally:
            self._syncing = False

    def resend(self) -> None:
        """Send the widgets' values to the browser again. A value the server sent while the user was typing another
        can leave the browser showing the older one, and an unchanged value is never sent twice."""
        self._syncing = True
        try:
            for w in (self.box, self.slider):
                if not isinstance(w, (pn.widgets.FloatInput, pn.widgets.FloatSlider)) or w.value is None:
                    continue
                value, step = w.value, w.step or 1.0
                at_end = isinstance(w, pn.widgets.FloatSlider) and value + step > w.end
                w.value = value - step if at_end else value + step  # two changes: both reach the browser
                w.value = value
        finally:
            self._syncing = False

    def set_applies(self, reason: str = "") -> None:
        """Disable the control and say under it why it does nothing with the current settings (`reason`), or, with
        "", enable it again."""
        if reason == self.not_applicable:
            return
        self.not_applicable = reason
        for w in (self.box, self.slider):
            if w is not None:
                w.disabled = bool(reason)
        self.note.object = (f'<div class="invlab-not-applicable" data-param="{self.pname}" style="color:#57606a;'
                            f'font-size:12px;line-height:1.3">{html_text("Does not apply: " + reason)}.</div>'
                            if reason else "")
        self.note.visible = bool(reason)

    # conveniences ------------------------------------------------------------------------------------------------
    @property
    def value(self):
        return getattr(self.obj, self.pname)

    @property
    def start(self):
        """The parameter's lower bound in its own units (None if open)."""
        return (self.p.bounds or (None, None))[0]

    @property
    def end(self):
        return (self.p.bounds or (None, None))[1]

    @property
    def options(self):
        return self.box.options if isinstance(self.box, pn.widgets.Select) else None

    @property
    def visible(self) -> bool:
        return self.layout.visible

    @visible.setter
    def visible(self, shown: bool) -> None:  # teacher mode hides the controls a lesson does not need
        self.layout.visible = bool(shown)

    def close(self) -> None:
        """Stop following the parameter (the control is being thrown away)."""
        self.obj.param.unwatch(self._watcher)

    def __panel__(self):
        return self.layout


def _same(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return False


def _plain(message: str) -> str:
    """param's message without its class-qualified names ("Number parameter 'TrainConfig.x' must be …")."""
    return message.rstrip(".")


# -- groups (the control tabs) ---------------------------------------------------------------------------------------
class ControlGroup(pn.Column):
    """The controls of some parameters of one param object, as one tab (`name` is the tab's title).

    A `pn.Column` of `ParamControl`s, so a tab or a layout holding it keeps it (and `controls` by name)."""

    def __init__(self, obj: param.Parameterized, names, *, name: str, options: dict | None = None,
                 scales: dict | None = None, **params):
        controls = {n: ParamControl(obj, n, options=(options or {}).get(n), scale=(scales or {}).get(n))
                    for n in names}
        super().__init__(*controls.values(), name=name, **{"margin": (5, 0), **params})
        self.obj = obj
        self.controls: dict[str, ParamControl] = controls

    @property
    def _widgets(self) -> dict[str, ParamControl]:  # what pn.Param offered under this name
        return self.controls

    def close(self) -> None:
        """Stop following the param object (the group is being replaced, e.g. by another family's)."""
        for control in self.controls.values():
            control.close()


def param_controls(obj: param.Parameterized, names=None, *, name: str = "", **kwargs) -> ControlGroup:
    """Controls for `names` (default: every parameter but `name`) of any param object."""
    names = [p for p in obj.param if p != "name"] if names is None else list(names)
    return ControlGroup(obj, names, name=name, **kwargs)


def data_controls(data: param.Parameterized, choices: list[str] | None = None) -> ControlGroup:
    """The Data tab; `choices`: what the data box offers (default: the bundled datasets)."""
    return ControlGroup(data, DATA_PARAMS, name="Data", options={"dataset": choices or list_datasets()})


def model_controls(model_config: param.Parameterized) -> ControlGroup:
    return param_controls(model_config, name="Model")


def optimisation_controls(train: param.Parameterized) -> ControlGroup:
    return ControlGroup(train, OPTIMISATION_PARAMS, name="Optimisation")


# -- a learnable value of the running model --------------------------------------------------------------------------
class LearnedValueControl(pn.viewable.Viewer):
    """A control for one `Tunable` of the running model (a range, a variance): its value on the Tunable's
    interval and scale, and a learn / freeze toggle.

    `on_value(name, value)` is called when the user sets a value, `on_freeze(name, frozen)` when the toggle
    changes; `show(value)` reflects the model's current value without sending it back.
    """

    SETTLE_S = 2.0  # after a set, values far from it are taken as older snapshots for this long

    def __init__(self, tunable, on_value, on_freeze, *legacy):
        super().__init__()
        if isinstance(tunable, str):  # the old call: (name, value, lo, hi, on_value, on_freeze)
            from engine.models.base import Tunable

            name, value, lo, hi = tunable, on_value, on_freeze, legacy[0]
            on_value, on_freeze = legacy[1], legacy[2]
            tunable = Tunable(name, " ".join(name.split(".")[-2:]).replace("_", " "), float(value), lo, hi)
        self.tunable = tunable
        self.tunable_name = tunable.name
        self._on_value, self._on_freeze = on_value, on_freeze
        label = tunable.label + (f" ({tunable.unit})" if tunable.unit else "")
        self.label = label  # in words, with its unit: what the page's notices call it
        lo, hi = tunable.lo, tunable.hi
        if tunable.scale == "log" and lo is not None and lo <= 0:
            lo = None  # a log scale needs a positive interval: type the value instead
        value = float(tunable.value)
        if lo is not None and hi is not None and math.isfinite(value):
            value = min(max(value, lo), hi)
        holder = type("LearnedValue", (param.Parameterized,), {
            "value": param.Number(default=value, bounds=(lo, hi), allow_None=False, label=label,
                                  doc=f"{tunable.label}: the running model's value ({tunable.name}). "
                                      "Set it here; untick 'learn' to keep it fixed while training goes on.")})
        self.holder = holder()
        self._showing = False
        self._resend = False
        self._pending = None  # (value the user set, when): snapshots older than the set must not undo it on screen
        self.control = ParamControl(self.holder, "value", scale=tunable.scale if lo is not None else None,
                                    label=label)
        self.learn = pn.widgets.Checkbox(label="learn (untick to freeze)", value=not tunable.frozen, width=200,
                                         margin=(0, 10, 12, 10), visible=getattr(tunable, "learnable", True))
        self.holder.param.watch(self._sent, "value")
        self.learn.param.watch(lambda e: self._on_freeze(self.tunable_name, not e.new), "value")
        self.panel = pn.Column(self.control, self.learn, margin=0)

    def _sent(self, event) -> None:
        if not self._showing:
            self._pending = (event.new, time.monotonic())
            self._on_value(self.tunable_name, event.new)

    @property
    def value(self) -> float:
        return self.holder.value

    @property
    def start(self):
        return self.holder.param["value"].bounds[0]

    @property
    def end(self):
        return self.holder.param["value"].bounds[1]

    @property
    def widget(self):
        """The slider (the box where the value has no interval)."""
        return self.control.slider or self.control.box

    def show(self, value: float) -> None:
        """Reflect the model's current value without sending it back."""
        value = float(value)
        if not math.isfinite(value):
            return
        value = float(f"{value:.4g}")  # 56.74, not 56.7414759…: it changes every tick
        if self._pending is not None:
            wanted, since = self._pending
            if abs(value - wanted) > 0.02 * max(abs(wanted), 1e-12) and time.monotonic() - since < self.SETTLE_S:
                return  # a snapshot taken before the set reached the model
            self._pending = None
            self._resend = True  # the browser may still show what a tick sent while the user typed
        lo, hi = self.holder.param["value"].bounds
        value = min(max(value, lo), hi) if lo is not None and hi is not None else value
        self._showing = self.control._keep_message = True
        try:
            self.holder.value = value
            if self._resend:
                self._resend = False
                self.control.resend()
        except ValueError:
            pass
        finally:
            self._showing = self.control._keep_message = False

    def __panel__(self):
        return self.panel
