"""Control groups generated from the engine's param configs: bounds, choices and docs are never copied here."""
from __future__ import annotations

import panel as pn
import param

from engine.data import list_datasets

# Parameters shown per group; anything else of a config stays reachable through the URL and the CLI.
DATA_PARAMS = ["dataset", "rotate", "subset", "odd_even", "classes", "test_fraction", "seed"]
OPTIMISATION_PARAMS = ["learning_rate", "batch_size", "steps", "optimizer", "schedule", "seed", "device", "dtype",
                       "eval_every", "jitter"]


def _slider_throttling(obj: param.Parameterized, names) -> dict:
    """Sliders report only when released (`value_throttled`), so a drag does not rebuild a model per pixel."""
    out = {}
    for name in names:
        p = obj.param[name]
        if isinstance(p, param.Number) and p.allow_None and not isinstance(p, param.Integer):
            out[name] = {"type": pn.widgets.FloatInput, "placeholder": "auto"}  # empty = chosen from the data
        elif isinstance(p, param.Number) and p.bounds and None not in p.bounds and not isinstance(p, param.Integer):
            out[name] = {"type": pn.widgets.FloatSlider, "throttled": True}
        elif isinstance(p, param.Integer):  # counts and seeds span orders of magnitude: type them
            out[name] = {"type": pn.widgets.IntInput}
    return out


def data_controls(data: param.Parameterized) -> pn.Param:
    widgets = _slider_throttling(data, DATA_PARAMS)
    widgets["dataset"] = {"type": pn.widgets.Select, "options": list_datasets()}
    return pn.Param(data, parameters=DATA_PARAMS, widgets=widgets, show_name=False, name="Data")


def model_controls(model_config: param.Parameterized) -> pn.Param:
    names = [p for p in model_config.param if p != "name"]
    return pn.Param(model_config, parameters=names, widgets=_slider_throttling(model_config, names), show_name=False,
                    name="Model")


def optimisation_controls(train: param.Parameterized) -> pn.Param:
    widgets = _slider_throttling(train, OPTIMISATION_PARAMS)
    widgets["learning_rate"] = {"type": pn.widgets.FloatInput, "step": 0.001}  # applied live: no throttling needed
    widgets["jitter"] = {"type": pn.widgets.FloatInput, "step": 1e-6}
    return pn.Param(train, parameters=OPTIMISATION_PARAMS, widgets=widgets, show_name=False, name="Optimisation")


class LearnedValueControl:
    """A slider (or number box) for one learnable value of the running model, with a learn / freeze toggle."""

    def __init__(self, name: str, value: float, lo: float | None, hi: float | None, on_value, on_freeze):
        label = " ".join(name.split(".")[-2:]).replace("_", " ")  # e.g. "rotation half width": fits the column
        if lo is not None and hi is not None:
            step = (hi - lo) / 200  # the bounds are open (a range of exactly ±180° is refused): stay a step inside
            self.widget = pn.widgets.FloatSlider(label=label, start=lo + step, end=hi - step, step=step, width=240,
                                                 value=min(max(value, lo + step), hi - step))
            watch_on = "value_throttled"
        else:
            self.widget = pn.widgets.FloatInput(label=label, value=value, width=240)
            watch_on = "value"
        self.learn = pn.widgets.Checkbox(label="learn", value=True, width=60)
        self._updating = False
        self.widget.param.watch(lambda e: None if self._updating else on_value(name, e.new), watch_on)
        self.learn.param.watch(lambda e: on_freeze(name, not e.new), "value")
        self.panel = pn.Row(self.widget, self.learn)

    def show(self, value: float) -> None:
        """Reflect the model's current value without sending it back."""
        value = float(value)
        if isinstance(self.widget, pn.widgets.FloatSlider):
            value = min(max(value, self.widget.start), self.widget.end)
        self._updating = True
        try:
            self.widget.value = value
        finally:
            self._updating = False
