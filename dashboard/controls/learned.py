"""A control for one learnable value of the running model (a range, a variance): its value on the value's interval
and scale, and a learn / freeze toggle."""
from __future__ import annotations

import math
import time

import panel as pn
import param

from invlab.dashboard.controls.param_control import ParamControl


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
            from invlab.models.base import Tunable

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
        """The learnable value as the control holds it, in its own units."""
        return self.holder.value

    @property
    def start(self):
        """The lower end of the value's slider."""
        return self.holder.param["value"].bounds[0]

    @property
    def end(self):
        """The upper end of the value's slider."""
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

