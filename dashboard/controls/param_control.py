"""Controls built from the engine's param configs: bounds, choices and docs are never copied here.

Each parameter gets one `ParamControl`: a widget chosen from the parameter object itself, on the quantity's
natural scale, and a message line under it. The widget never writes into the config directly: a value the
user enters is offered to the parameter, and one the parameter refuses (out of bounds, not a number, not a
list of class labels) is explained under the field while the field returns to the value in use. The config
object (the page's state, synced with the URL) therefore only ever holds valid values, and the widget follows
it when it changes from elsewhere (a link, a lesson preset, code).

How each parameter is shown is decided in `field_kinds` from the parameter alone.
"""
from __future__ import annotations

import json
import logging

import panel as pn
import param
from bokeh.models import CustomJSTickFormatter

from invlab.dashboard.controls.scale_slider import box_step, log_digits, make_slider, position, value_at
from invlab.dashboard.safe_text import html_text
from invlab.dashboard.state.field_kinds import (  # noqa: F401 — the names other modules and tests read here
    BOX_FORMAT,
    BOX_WIDTH,
    DATA_PARAMS,
    FULL_WIDTH,
    LINEAR_FORMAT,
    LOG_FORMAT,
    MESSAGE_COLOUR,
    OPTIMISATION_PARAMS,
    _g,
    _label,
    _nice_step,
    _round_log,
    allowed,
    is_seed,
    number_scale,
    span,
    widget_kind,
    zero_word,
)
from invlab.errors import InvlabError

log = logging.getLogger(__name__)


# -- one parameter ---------------------------------------------------------------------------------------------------
class ParamControl(pn.viewable.Viewer):
    """One parameter of a param object: its widget(s) and a message line under them.

    `obj`/`pname`: the param object and the parameter's name. `options`: choices for a drop-down where the
    parameter does not list them itself (the dataset name). `scale`: force 'log' or 'linear' (a `Tunable` says
    its own scale). `log_step`: a log slider's stops this many decades apart (default: about 400 over its range; see
    `scale_slider`). The control offers each entered value to the parameter, explains a refusal under the field
    and puts the field back to the value in use; it follows the parameter when it changes from elsewhere.
    """

    def __init__(self, obj: param.Parameterized, pname: str, *, options=None, scale: str | None = None,
                 label: str | None = None, width: int = FULL_WIDTH, log_step: float | None = None):
        super().__init__()
        self.obj, self.pname = obj, pname
        self.p = obj.param[pname]
        self.kind = "select" if options is not None else widget_kind(pname, self.p)
        if scale is not None and self.kind in ("log-slider", "linear-slider", "number-box"):
            lo, hi = span(self.p)
            if lo is not None and hi is not None and (scale == "linear" or lo > 0):
                self.kind = f"{scale}-slider"
        self.label = label or _label(pname, self.p)
        self._log_step = log_step
        self._zero = zero_word(self.p) if self.kind == "int-box" else None  # "all": the box shows 0 as that word
        self._slider_width = max(width - BOX_WIDTH - 15, 80)
        self.error = ""  # the last refusal's message, "" once a value is accepted
        self._syncing = False
        self._keep_message = False  # set while a running model's value is shown: its changes are not the user's
        self.slider = None
        self.box = self._make_widget(options, width)
        self.message = pn.pane.HTML("", visible=False, margin=(0, 10, 4, 10), width=width)
        # why it does not apply (a widget, not a pane: its text changes without a new pane model on the page)
        self.note = pn.widgets.StaticText(value="", visible=False, margin=(0, 10, 4, 10), width=width,
                                          css_classes=["invlab-not-applicable"],
                                          styles={"color": "#57606a", "font-size": "12px", "line-height": "1.3"})
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
            w = make(pn.widgets.IntInput, value=self._boxed(value), step=1, width=width, placeholder=self._zero or "")
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
        slider, self._slider_range = make_slider(self.p, self.kind, value, self._slider_width, self._log_step)
        slider.param.watch(self._from_slider, "value_throttled")
        return slider

    def _position(self, value) -> float:
        """Where `value` sits on the slider (`scale_slider.position`)."""
        return position(self.kind, self._slider_range, value)

    def _box_step(self, value) -> float:
        """The box's arrow step (`scale_slider.box_step`)."""
        return box_step(self.kind, self.p, value)

    def _boxed(self, value):
        """What an integer box shows for `value`: empty, under its placeholder word ("all"), where 0 means that."""
        return None if self._zero and value == 0 else value

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
        raw = 0 if self._zero and event.new is None else event.new  # an emptied "all" box means 0: all
        try:
            value = self._parse(raw) if self.kind in ("list", "dict") else raw
        except ValueError:
            self._refuse(raw)
            return
        self.apply(value, shown=raw)

    def _from_slider(self, event) -> None:
        if self._syncing or event.new is None:
            return
        self.apply(value_at(self.kind, event.new, log_digits(self._log_step)))

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
        elif self._zero and in_use == 0:
            in_use_text = f"0 ({self._zero})"
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
            elif self.kind == "int-box":
                self.box.value = self._boxed(value)
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
        self.note.value = html_text(f"Does not apply: {reason}.") if reason else ""  # a Bokeh Div shows HTML
        self.note.visible = bool(reason)

    # conveniences ------------------------------------------------------------------------------------------------
    @property
    def value(self):
        """The parameter's current value in its own units."""
        return getattr(self.obj, self.pname)

    @property
    def start(self):
        """The parameter's lower bound in its own units (None if open)."""
        return (self.p.bounds or (None, None))[0]

    @property
    def end(self):
        """The parameter's upper bound in its own units (None if open)."""
        return (self.p.bounds or (None, None))[1]

    @property
    def options(self):
        """The choices of a selector parameter (None for a number)."""
        return self.box.options if isinstance(self.box, pn.widgets.Select) else None

    @property
    def visible(self) -> bool:
        """Whether the control is shown; teacher mode hides the controls a lesson does not need."""
        return self.layout.visible

    @visible.setter
    def visible(self, shown: bool) -> None:
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
