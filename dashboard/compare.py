"""The Compare page: sweeps of runs compared by the marginal likelihood (paper 000: the ELBO chooses the invariance).

A sweep is many runs that differ in one or more settings and the seed (`engine.sweeps`). This page

- launches one from the Training page's current settings (a setting, its values, a number of seeds), runs a
  built-in study (`engine.sweeps.STUDIES`), or opens a stored one (`?page=compare&sweep=ID`);
- runs it through `run_sweep` on a background thread (`SweepRunner`): Dask does the training, the thread only
  waits and collects progress, and the page's periodic tick (the same pattern as the Training page's live
  feed) drains that progress into the page on the server's event loop, so the page never waits for a run;
- shows a sortable, filterable table of the runs, filled in as they run and finish; the whole-data ELBO and the
  test error against the swept setting (mean ± sd over seeds); the ELBO curves of all runs grouped by the setting's
  value; and, when the setting is an invariance range, a line where each learned-range run's range ended;
- says, visibly, when the runs cannot be compared on one axis (other data, likelihood or estimator).

Clicking a row opens that run on the Training page (its curves, and its checkpoint to continue from).
"""
from __future__ import annotations

import logging
import math
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401 — registers Bokeh for the .opts() below
import numpy as np
import pandas as pd
import panel as pn
import param

from engine.errors import ConfigError, InvlabError
from engine.ids import parse_id, shorten
from engine.sweeps import STUDIES, SweepSpec, comparison, run_sweep, study
from engine.train import RunStore

from . import notebook
from .safe_text import html_text, markdown_text
from .settings import RunSettings, coerce
from .views import FRAME_HEIGHT, FRAME_WIDTH, RANGE_UNITS, _legend_opts, metric_label, y_limits

log = logging.getLogger(__name__)

INTRO = (
    "## Compare runs: the marginal likelihood chooses the invariance\n"
    "Each run of a sweep fits the **same data** with one setting changed, over a few seeds. The ELBO over the whole "
    "training set is a lower bound on the log marginal likelihood: how well the model *as a whole* — its "
    "invariance included — explains the data, without looking at the test set. Paper 000's point, shown here: "
    "on digits rotated by up to ±90°, the ELBO against a fixed rotation range peaks near 90°, and a run that "
    "learns its range ends near there (the dashed line). Higher is better; the bars are ± one standard deviation "
    "over seeds. Runs are only compared on one axis when they share data, likelihood and estimator. Click a run in "
    "the table to open it on the Training page."
)

# Invariance ranges a sweep may vary: the swept name → the learned range's name and its unit.
RANGE_AXES = {"model.init_rotation": ("rotation", "°"), "model.init_affine": ("affine", ""),
              "model.init_deformation": ("deformation", "px")}
AXIS_LABELS = {"model.init_rotation": "rotation range α (°)", "data.rotate": "data rotated by up to ± (°)",
               "model.init_affine": "affine range (half-width)", "model.init_deformation": "deformation strength (px)",
               "model.num_inducing": "inducing points M", "train.learning_rate": "learning rate",
               "model": "model family"}
SERIES_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22")
STATE_COLOURS = {"idle": "#666", "starting": "#9a6a00", "running": "#23843a", "stopping…": "#1f6fb5",
                 "stopped": "#1f6fb5", "finished": "#23843a", "failed": "#c0392b"}
LIVE_STATES = ("starting", "running", "stopping…")
PLOT_FRAME = dict(frame_width=FRAME_WIDTH + 80, frame_height=FRAME_HEIGHT + 40, framewise=True, show_grid=True)


def axis_label(name: str) -> str:
    """The words shown on an axis for a dotted setting name (the name itself when none are known)."""
    return AXIS_LABELS.get(name, name)


def field_name(axis: str) -> str:
    """A table column for a dotted setting name (Tabulator reads dots in a field as nesting)."""
    return axis.replace(".", "·")


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _finite(value) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return math.nan
    return value if math.isfinite(value) else math.nan


def _fmt_value(value) -> str:
    if isinstance(value, float):
        return format(value, "g")
    return str(value)


# -- what the plots show, from a Comparison ----------------------------------------------------------------------------
def learned_value(run: dict, axis: str) -> float | None:
    """Where a learned-range run's range ended, for the range `axis` varies (None when it has none)."""
    if axis not in RANGE_AXES:
        return None
    learned = run.get("learned") or {}
    name = RANGE_AXES[axis][0]
    for key, value in learned.items():
        if key == name or key.split(".")[-1] == name or key == axis:
            value = _finite(value)
            return None if math.isnan(value) else value
    return None


def is_learned_run(run: dict) -> bool:
    """A run that learned its invariance range (its value on the swept range axis is only where it started)."""
    if "model.learn_ranges" in run:
        return bool(run["model.learn_ranges"])
    return bool(run.get("learned"))


def primary_axis(axes: list[str], runs: list[dict]) -> str | None:
    """The setting the plots put on x: the first swept name with more than one numeric value among the runs
    (an invariance range first), else the first one that varies at all."""
    if not axes:
        return None

    def values(axis):
        return {run.get(axis) for run in runs if not (axis in RANGE_AXES and is_learned_run(run))}

    ranked = sorted(axes, key=lambda a: (a not in RANGE_AXES, axes.index(a)))
    for axis in ranked:  # a range swept beside learned-range runs: the learned runs are marked on its axis
        if axis in RANGE_AXES and any(is_learned_run(run) for run in runs) and values(axis) - {None}:
            return axis
    for axis in ranked:
        vals = values(axis) - {None}
        if len(vals) > 1 and all(_is_number(v) for v in vals):
            return axis
    for axis in ranked:
        if len(values(axis) - {None}) > 1:
            return axis
    return axes[0]


def series_axes(axes: list[str], entries: list[dict], x: str) -> list[str]:
    """The swept names, other than `x`, that split the entries into separate curves: those not already fixed by
    the value of `x` (in a list sweep names vary together, e.g. the family and its augmentation)."""
    out = []
    for axis in axes:
        if axis == x:
            continue
        seen: dict[str, set] = {}
        for entry in entries:
            seen.setdefault(repr(entry.get(x)), set()).add(repr(entry.get(axis)))
        if any(len(values) > 1 for values in seen.values()):
            out.append(axis)
    return out


def series_key(entry: dict, rest: list[str]) -> str:
    """The label of the curve an entry belongs to: its values of the swept names in `rest`."""
    return ", ".join(f"{a.split('.')[-1]} {_fmt_value(entry.get(a))}" for a in rest) or "mean ± sd over seeds"


@dataclass
class AxisData:
    """What the ELBO / test-error against the swept setting shows, one frame per series (other swept values)."""

    x: str | None
    groups: dict[str, pd.DataFrame] = field(default_factory=dict)  # series → x, n, elbo_mean, elbo_sd, error_*
    runs: pd.DataFrame = field(default_factory=pd.DataFrame)  # the single runs (faint points)
    learned: pd.DataFrame = field(default_factory=pd.DataFrame)  # learned-range runs: learned, elbo, error


def axis_data(cmp) -> AxisData:
    """Group means ± sd of the fixed-setting runs against the primary swept setting; learned-range runs apart."""
    x = primary_axis(list(cmp.axes), list(cmp.runs))
    out = AxisData(x)
    if x is None:
        return out
    fixed_groups = [g for g in cmp.groups if not (x in RANGE_AXES and is_learned_run(g))]
    rest = series_axes(list(cmp.axes), fixed_groups, x)
    frames: dict[str, list[dict]] = {}
    for g in fixed_groups:
        if g.get("n", 0) == 0 or g.get(x) is None:
            continue
        frames.setdefault(series_key(g, rest), []).append(
            {x: _x_value(g[x]), "n": g["n"], "elbo_mean": _finite(g.get("elbo_mean")),
             "elbo_sd": _finite(g.get("elbo_sd")), "error_mean": 100 * _finite(g.get("error_mean")),
             "error_sd": 100 * _finite(g.get("error_sd"))})
    for key, rows in frames.items():
        frame = pd.DataFrame(rows)
        if _is_number(rows[0][x]):
            frame = frame.sort_values(x, kind="stable")
        out.groups[key] = frame.reset_index(drop=True).rename(columns={x: field_name(x)})
    singles, learned = [], []
    for run in cmp.runs:
        if run.get("full_elbo") is None:
            continue
        if x in RANGE_AXES and is_learned_run(run):
            value = learned_value(run, x)
            if value is not None:
                learned.append({"run": run["run_id"], "learned": value, "elbo": _finite(run.get("full_elbo")),
                                "error": 100 * _finite(run.get("test_error"))})
            continue
        if run.get(x) is None:
            continue
        singles.append({field_name(x): _x_value(run.get(x)), "elbo": _finite(run.get("full_elbo")),
                        "error": 100 * _finite(run.get("test_error")), "series": series_key(run, rest),
                        "run": run["run_id"]})
    out.runs = pd.DataFrame(singles)
    out.learned = pd.DataFrame(learned)
    return out


def _x_value(value):
    """A value on the plots' x axis: numbers as they are, anything else (families, true / false) as text."""
    return value if _is_number(value) else _fmt_value(value)


def against_setting_plot(data: AxisData, which: str):
    """ELBO ("elbo") or test error ("error") against the swept setting: mean over seeds as a line, ± sd as bars,
    each run as a faint point, and a dashed line where each learned-range run ended."""
    x = data.x
    ylabel = "ELBO over the training set (nats)" if which == "elbo" else metric_label("test_error")
    title = ("ELBO against " if which == "elbo" else "Test error against ") + axis_label(x or "the setting")
    if x is None:
        return hv.Curve([], "x", "y").opts(title=title)
    xdim = hv.Dimension(field_name(x), label=axis_label(x))
    mean = hv.Dimension(f"{which}_mean", label=ylabel)
    layers = []
    for i, (series, frame) in enumerate(data.groups.items()):
        colour = SERIES_COLOURS[i % len(SERIES_COLOURS)]
        label = series
        sd = frame[f"{which}_sd"].fillna(0.0)
        layers.append(hv.ErrorBars((frame[field_name(x)], frame[f"{which}_mean"], sd), xdim,
                                   [mean, f"{which}_sd"]).opts(color=colour, line_width=1.5, lower_head=None,
                                                               upper_head=None))
        layers.append(hv.Curve(frame, xdim, [mean, "n", f"{which}_sd"], label=label).opts(
            color=colour, line_width=2, tools=["hover"]))
        layers.append(hv.Scatter(frame, xdim, [mean]).opts(color=colour, size=6))
    if len(data.runs):
        layers.append(hv.Scatter(data.runs, xdim, [hv.Dimension(which, label=ylabel), "run"], label="single runs")
                      .opts(color="#555", alpha=0.35, size=4, tools=["hover"]))
    if len(data.learned):
        for value in data.learned["learned"]:
            layers.append(hv.VLine(float(value)).opts(color="#ff7f0e", line_dash="dashed", line_width=2))
        layers.append(hv.Scatter(data.learned.rename(columns={"learned": field_name(x)}), xdim,
                                 [hv.Dimension(which, label=ylabel), "run"],
                                 label=f"learned range (ends at {_fmt_range(data.learned['learned'], x)})")
                      .opts(color="#ff7f0e", marker="diamond", size=11, tools=["hover"]))
    if not layers:
        return hv.Curve([], xdim, mean).opts(title=title)
    return hv.Overlay(layers).opts(title=title, **PLOT_FRAME, **_legend_opts())


def _fmt_range(values, axis: str) -> str:
    unit = RANGE_AXES.get(axis, ("", ""))[1]
    return ", ".join(f"{v:.0f}{unit}" if unit == "°" else f"{v:.3g}{unit}" for v in values)


def curves_plot(histories: dict, cmp_runs: list[dict], x: str | None):
    """Every run's ELBO during training, one colour per value of the swept setting (seeds share it)."""
    title = "ELBO during training, by " + axis_label(x or "run")
    groups: dict[str, list] = {}
    order: list = []
    for run in cmp_runs:
        hist = histories.get(run["key"])
        if hist is None or len(hist[0]) == 0:
            continue
        learned = x in RANGE_AXES and is_learned_run(run)
        value = "learned range" if learned else run.get(x) if x is not None else run["key"]
        label = value if isinstance(value, str) else value_label(x, value)
        if label not in groups:
            order.append((0 if not learned else 1, value if _is_number(value) else math.inf, label))
        groups.setdefault(label, []).append((np.asarray(hist[0], dtype=np.float64),
                                             np.asarray(hist[1], dtype=np.float64), run.get("run_id")))
    order.sort(key=lambda t: (t[0], t[1], t[2]))
    palette = _palette(len(order))
    step = hv.Dimension("step", label="training step")
    elbo = hv.Dimension("run_elbo", label=metric_label("elbo") + ", minibatch estimate")
    layers = []
    for (_, _, label), colour in zip(order, palette):
        colour = "#ff7f0e" if label == "learned range" else colour
        for steps, values, run_id in groups[label]:  # seeds share the colour and the legend entry
            layers.append(hv.Curve({"step": steps, "run_elbo": values, "run": np.full(len(steps), run_id or -1)},
                                   step, [elbo, "run"], label=label).opts(color=colour, line_width=1.5, alpha=0.85,
                                                                          tools=["hover"]))
    if not layers:
        return hv.Curve([], step, elbo).opts(title=title)
    # the first steps' ELBO is far below where runs end up: the y axis shows the part where runs differ
    settled = [values[len(values) // 5:] for members in groups.values() for _, values, _ in members]
    ylim = y_limits(settled)
    frame = {**PLOT_FRAME, "frame_height": max(PLOT_FRAME["frame_height"], 20 * len(order) + 20)}  # legend fits
    return hv.Overlay(layers).opts(title=title, legend_limit=1000, **({"ylim": ylim} if ylim else {}), **frame,
                                   **_legend_opts())


def value_label(axis: str, value) -> str:
    """"init_rotation 45°": a swept setting's short name and value, with its unit."""
    unit = RANGE_AXES.get(axis, ("", ""))[1]
    return f"{axis.split('.')[-1]} {_fmt_value(value)}{unit if _is_number(value) else ''}"


def _palette(n: int) -> list[str]:
    if n <= len(SERIES_COLOURS):
        return list(SERIES_COLOURS[:n])
    from bokeh.palettes import Viridis256

    return [Viridis256[int(i * 230 / max(1, n - 1))] for i in range(n)]


# -- the sweep's thread ------------------------------------------------------------------------------------------------
class SweepRunner:
    """`run_sweep` on a daemon thread; the page drains its progress (`drain()`) from the server thread.

    The thread only waits for Dask and collects `SweepProgress` reports; it never touches the page."""

    def __init__(self, spec: SweepSpec, store: RunStore, *, sweep_id: int | None = None,
                 scheduler: str | None = None, n_workers: int | None = None):
        self.spec, self.store = spec, store
        self.sweep_id = sweep_id
        self.scheduler, self.n_workers = scheduler or None, n_workers or None
        self.stop_event = threading.Event()
        self.error: str | None = None
        self.finished = False
        self._lock = threading.Lock()
        self._progress = None
        self._events: list[dict] = []
        self.thread = threading.Thread(target=self._run, name="invlab-sweep", daemon=True)

    def start(self) -> "SweepRunner":
        """Start the sweep's background thread; returns the runner."""
        self.thread.start()
        return self

    def stop(self) -> None:
        """Ask the sweep to stop: runs in progress are abandoned, finished runs stay stored."""
        self.stop_event.set()

    def _run(self) -> None:
        try:
            sweep_id = run_sweep(self.spec, store=self.store, scheduler=self.scheduler, n_workers=self.n_workers,
                                 sweep_id=self.sweep_id, progress=self._on_progress, stop=self.stop_event)
            with self._lock:
                self.sweep_id = sweep_id
        except InvlabError as err:
            with self._lock:
                self.error = str(err)
        except BaseException as err:  # noqa: BLE001 — the page shows it; the server stays up
            traceback.print_exc()
            with self._lock:
                self.error = f"{type(err).__name__}: {err}"
        finally:
            with self._lock:
                self.finished = True

    def _on_progress(self, progress) -> None:
        with self._lock:
            self._progress = progress
            if self.sweep_id is None and getattr(progress, "sweep_id", None) is not None:
                self.sweep_id = progress.sweep_id
            if progress.event:
                self._events.append(dict(progress.event))

    def drain(self):
        """(latest progress or None, events since the last drain, finished, error)."""
        with self._lock:
            events, self._events = self._events, []
            return self._progress, events, self.finished, self.error


# -- the page ----------------------------------------------------------------------------------------------------------
class ComparePage(pn.viewable.Viewer):
    """Launch, follow and compare sweeps; open one of their runs on the Training page."""

    sweep_id = param.Integer(default=None, allow_None=True, doc="The sweep shown (its id in the run store).")
    state = param.Selector(default="idle", objects=["idle", *LIVE_STATES, "stopped", "finished", "failed"],
                           doc="What the sweep shown is doing.")
    message = param.String(default="", doc="Progress, or what went wrong, in words.")
    n_workers = param.Integer(default=0, bounds=(0, 64), doc="Dask workers on this machine (0: one per core).")
    scheduler = param.String(default="", doc="Address of a running Dask scheduler (empty: a cluster on this machine).")

    @property
    def store(self) -> RunStore | None:
        """The run store the page reads sweeps from and writes them to (opened on first use when given as a callable);
        settable."""
        return self._store() if callable(self._store) else self._store

    @store.setter
    def store(self, store) -> None:
        self._store = store

    def __init__(self, settings: RunSettings | None = None,
                 store: RunStore | Callable[[], RunStore | None] | None = None, *,
                 on_open_run: Callable[[int], None] | None = None, tick_ms: int = 1000, **params):
        super().__init__(**params)
        self.settings = settings if settings is not None else RunSettings()
        self.store = store  # a RunStore, or a function giving one (the Explorer's, opened when first needed)
        self.on_open_run = on_open_run
        self.tick_ms = tick_ms
        self.runner: SweepRunner | None = None
        self.cmp = None  # the latest Comparison read from the store
        self.axes: list[str] = []
        self._planned: list = []  # PlannedRun of the sweep being run (rows before they are stored)
        self._live: dict[str, dict] = {}  # key → {"status", "step", "steps", "elbo", "history": ([s], [v])}
        self._histories: dict[str, tuple] = {}  # key → (steps, elbos) of stored runs
        self._stored_done = -1
        self._last_curves = 0.0
        self._callback = None
        self._layout = None  # the page's Column, once drawn
        self._active = False  # its contents are drawn (the tab has been shown)
        if pn.state.curdoc is not None and not notebook.in_notebook():
            pn.extension("tabulator")  # a served page built without it (`pn.serve(Explorer)`) still draws the table
        self._build_widgets()
        self.param.watch(self._show_state, ["state", "message", "sweep_id"])
        self._show_state()

    # -- widgets -------------------------------------------------------------------------------------------------------
    def _build_widgets(self) -> None:
        self.parameter = pn.widgets.Select(label="Setting to vary", options=self.parameter_options(), width=300)
        self.values = pn.widgets.TextInput(label="Values (comma-separated)", placeholder="e.g. 0, 45, 90, 135",
                                           width=300)
        self.seeds = pn.widgets.IntInput(label="Seeds per value", value=2, start=1, end=20, width=140)
        self.launch_button = pn.widgets.Button(label="▶ Run sweep", color="success", width=140)
        self.study_select = pn.widgets.Select(label="Built-in study", options=list(STUDIES), width=300)
        self.quick = pn.widgets.Checkbox(
            label="short form (one seed, five angles: about 15 s on 2 cores; untick for the full study, "
                  "3 seeds × 14 angles, about 75 s)",
            value=True)
        self.study_button = pn.widgets.Button(label="▶ Run study", color="success", width=140)
        self.sweeps_select = pn.widgets.Select(label="Stored sweeps", options={}, width=300)
        self.open_button = pn.widgets.Button(label="Open sweep", width=140)
        self.stop_button = pn.widgets.Button(label="■ Stop", color="warning", width=100, disabled=True)
        self.resume_button = pn.widgets.Button(label="▶ Resume", color="success", width=110, visible=False,
                                               description="Run this sweep's missing runs")
        self.workers = pn.widgets.IntInput.from_param(self.param.n_workers, label="Workers (0: one per core)",
                                                      width=140)
        self.scheduler_input = pn.widgets.TextInput.from_param(self.param.scheduler, label="Dask scheduler",
                                                               placeholder="empty: this machine", width=300)
        self.form_error = pn.pane.Alert("", alert_type="danger", visible=False, sizing_mode="stretch_width")
        self.form_error_text = ""  # what form_error says, as text (the pane holds it escaped)
        self.launch_button.on_click(lambda *_: self.launch_from_settings())
        self.study_button.on_click(lambda *_: self.launch_study(self.study_select.value, quick=self.quick.value))
        self.open_button.on_click(lambda *_: self.sweeps_select.value is not None
                                  and self.open_sweep(self.sweeps_select.value))
        self.stop_button.on_click(lambda *_: self.stop())
        self.resume_button.on_click(lambda *_: self.resume())
        self.parameter.param.watch(lambda event: self._suggest_values(event.new), "value")
        self._suggest_values(self.parameter.value)

        self.status_pane = pn.pane.HTML("", sizing_mode="stretch_width", margin=(4, 10),
                                        css_classes=["invlab-sweep-status"])
        self.not_comparable = pn.pane.Alert("", alert_type="warning", visible=False, sizing_mode="stretch_width",
                                            css_classes=["invlab-not-comparable"])
        self.table = pn.widgets.Tabulator(
            self._empty_frame(), show_index=False, disabled=True, selectable=1, pagination=None,
            header_filters=True, layout="fit_data_table", max_height=420, sizing_mode="stretch_width",
            css_classes=["invlab-sweep-table"])
        self.table.param.watch(self._on_select, "selection")
        self.elbo_pane = pn.pane.HoloViews(against_setting_plot(AxisData(None), "elbo"), linked_axes=False,
                                           name="elbo_vs_setting")
        self.error_pane = pn.pane.HoloViews(against_setting_plot(AxisData(None), "error"), linked_axes=False,
                                            name="error_vs_setting")
        self.curves_pane = pn.pane.HoloViews(curves_plot({}, [], None), linked_axes=False, name="elbo_curves")
        if not callable(self._store):  # a store opened on demand is listed when the page is shown, not before
            self.refresh_sweeps()

    def _empty_frame(self) -> pd.DataFrame:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in self._columns([])})

    @staticmethod
    def _columns(axes: list[str]) -> list[str]:
        return ["run", "status", *[field_name(a) for a in axes], "seed", "step", "ELBO", "test error (%)", "NLPD",
                "learned range"]

    def parameter_options(self) -> dict[str, str]:
        """The settings a sweep can vary: the family, then every data / model / training setting of the current
        configuration (labelled with its value now); the seed is varied by "Seeds per value"."""
        options = {f"model family (now {self.settings.model})": "model"}
        for section in ("model", "data", "train"):
            obj = self.settings.section(section)
            for name in obj.param:
                if name == "name" or (section == "train" and name == "seed"):
                    continue
                value = getattr(obj, name)
                options[f"{section}.{name} (now {_fmt_value(value)})"] = f"{section}.{name}"
        return options

    def refresh_parameters(self) -> None:
        """Follow the Training page's family and values (the Compare tab shows them when it is opened)."""
        current = self.parameter.value
        options = self.parameter_options()
        self.parameter.options = options
        if current in options.values():
            self.parameter.value = current

    def _suggest_values(self, dotted: str | None) -> None:
        """A placeholder that says what the chosen setting accepts."""
        p = self._parameter_object(dotted)
        objects = getattr(p, "objects", None) if p is not None else None
        if dotted == "model":
            from engine.models import model_names

            objects = model_names()
        if objects:
            self.values.placeholder = "e.g. " + ", ".join(_fmt_value(o) for o in list(objects)[:4])
        elif isinstance(p, param.Boolean):
            self.values.placeholder = "true, false"
        elif p is not None and getattr(p, "bounds", None):
            lo, hi = p.bounds
            self.values.placeholder = f"numbers in [{_fmt_value(lo)}, {_fmt_value(hi)}], e.g. " + \
                ", ".join(_fmt_value(v) for v in _spread(lo, hi, getattr(p, "default", None)))
        else:
            self.values.placeholder = "comma-separated values"

    def _parameter_object(self, dotted: str | None):
        if not dotted or "." not in dotted:
            return None
        section, _, name = dotted.partition(".")
        obj = self.settings.section(section)
        return obj.param[name] if name in obj.param else None

    def refresh_sweeps(self) -> None:
        """Re-read the stored sweeps (those this page's user may see) into the sweep selector; a store error shows as
        the message."""
        if self.store is None or not hasattr(self.store, "list_sweeps"):
            return
        try:
            sweeps = self.store.list_sweeps()
        except InvlabError as err:
            self.message = str(err)
            return
        options = {}
        for s in sweeps:
            name = getattr(s, "name", "") or "sweep"
            status = getattr(s, "status", "")
            options[f"#{s.id} {name}" + (f" — {status}" if status else "")] = s.id
        self.sweeps_select.options = options
        if options and self.sweeps_select.value not in options.values():
            shown = self.sweep_id if self.sweep_id in options.values() else next(iter(options.values()))
            self.sweeps_select.value = shown

    # -- launching -----------------------------------------------------------------------------------------------------
    def spec_from_settings(self, dotted: str | None = None, values: str | list | None = None,
                           seeds: int | None = None) -> SweepSpec:
        """The sweep the form describes: the Training page's configuration with `dotted` set to each of `values`
        (text as typed, comma-separated), times `seeds` seeds. Raises InvlabError naming what is wrong."""
        dotted = dotted if dotted is not None else self.parameter.value
        values = values if values is not None else self.values.value
        seeds = int(seeds if seeds is not None else self.seeds.value)
        if not dotted:
            raise InvlabError("choose the setting to vary")
        if isinstance(values, str):
            tokens = [t.strip() for t in values.replace(";", ",").split(",") if t.strip()]
            if not tokens:
                raise InvlabError(f"{dotted}: enter the values to try, separated by commas (e.g. 0, 45, 90)")
            p = self._parameter_object(dotted)
            parsed = []
            for token in tokens:
                value = _parse_token(token)
                parsed.append(coerce(p, value, dotted) if p is not None else value)
            values = parsed
        if seeds < 1:
            raise InvlabError("seeds per value: at least 1")
        base = self.settings.run_config()
        first_seed = int(self.settings.train.seed or 0)
        name = f"{dotted} over {len(values)} values × {seeds} seeds"
        spec = SweepSpec(name=name, base=base, vary={dotted: list(values)}, mode="grid",
                         seeds=list(range(first_seed, first_seed + seeds)))
        spec.validate()
        return spec

    def launch_from_settings(self) -> None:
        """Start a sweep varying the form's setting over its values and seeds on the Training page's configuration; a
        bad form shows its message under the form."""
        try:
            spec = self.spec_from_settings()
        except (InvlabError, ValueError, TypeError) as err:
            self._form_error(str(err))
            return
        self.launch(spec)

    def launch_study(self, name: str, quick: bool = True) -> None:
        """Start the built-in study `name` (`quick`: its short form); an unknown or invalid one shows its message under
        the form."""
        try:
            spec = study(name, quick=quick)
            spec.validate()
        except (InvlabError, KeyError, ValueError) as err:
            self._form_error(str(err))
            return
        self.launch(spec)

    def launch(self, spec: SweepSpec, sweep_id: int | None = None) -> None:
        """Run `spec` (or resume sweep `sweep_id`) on a background thread; the page follows it."""
        if self.store is None:
            self._form_error("this page has no run store to keep the sweep's runs in")
            return
        if self.runner is not None and not self.runner.finished:
            self._form_error("a sweep is running: stop it first (■ Stop), or wait for it to finish")
            return
        self._form_error("")
        try:
            planned = spec.runs()
        except InvlabError as err:
            self._form_error(str(err))
            return
        self._reset_view(planned, list(spec.vary))
        self.param.update(sweep_id=sweep_id, state="starting",
                          message=f"starting Dask workers for {len(planned)} runs…")
        self.runner = SweepRunner(spec, self.store, sweep_id=sweep_id, scheduler=self.scheduler or None,
                                  n_workers=self.n_workers or None).start()
        self.stop_button.disabled = False
        self.resume_button.visible = False
        self._start_ticking()

    def resume(self, sweep_id: int | None = None) -> None:
        """Run the missing runs of stored sweep `sweep_id` (default: the one shown), on the page."""
        sweep_id = self.sweep_id if sweep_id is None else int(sweep_id)
        if sweep_id is None or self.store is None:
            self._form_error("open a stored sweep first")
            return
        try:
            spec = SweepSpec.from_json(self.store.get_sweep(sweep_id).spec)
        except InvlabError as err:
            self._form_error(str(err))
            return
        self.launch(spec, sweep_id=sweep_id)

    def stop(self) -> None:
        """Stop the running sweep: runs in progress are abandoned, finished runs stay stored and Resume
        runs the rest."""
        if self.runner is not None and not self.runner.finished:
            self.runner.stop()
            self.state = "stopping…"
            self.message = "stopping: runs in progress are abandoned; finished runs stay stored"

    def _form_error(self, text: str) -> None:
        self.form_error_text = text
        self.form_error.object = markdown_text(text)
        self.form_error.visible = bool(text)

    # -- opening a stored sweep ----------------------------------------------------------------------------------------
    def open_sweep(self, sweep_id: int) -> None:
        """Show stored sweep `sweep_id` (a running sweep on this page keeps running in the background)."""
        if self.store is None:
            self._form_error("this page has no run store")
            return
        try:
            record = self.store.get_sweep(int(sweep_id))
        except InvlabError as err:
            self._form_error(str(err))
            return
        if self.runner is not None and self.runner.sweep_id == int(sweep_id) and not self.runner.finished:
            return  # already following it live
        self._form_error("")
        try:
            self._reset_view(SweepSpec.from_json(record.spec).runs(), [])
        except InvlabError:  # a specification this version no longer accepts: show what is stored
            self._reset_view([], [])
        self.runner = None
        for plan in self._planned:  # until the store has them, the sweep's runs are runs it has not run
            self._live[plan.key] = {"status": "not run", "step": 0, "history": ([], [])}
        stored = sum(r.status == "finished" for r in self.store.sweep_runs(record.id))
        complete = stored >= (record.total or 0)
        self.param.update(sweep_id=int(sweep_id), state="finished" if complete else "stopped",
                          message=self._record_text(record) + ("" if complete else "; ▶ Resume runs the rest"))
        self.resume_button.visible = not complete
        if int(sweep_id) in self.sweeps_select.options.values():
            self.sweeps_select.value = int(sweep_id)
        self.stop_button.disabled = True
        self.refresh()

    def _record_text(self, record) -> str:
        stored = sum(r.status == "finished" for r in self.store.sweep_runs(record.id))
        total = getattr(record, "total", 0) or stored
        return f"{record.name or 'sweep'}: {stored} of {total} runs stored"

    def _reset_view(self, planned: list, axes: list[str]) -> None:
        self._planned = list(planned)
        self.axes = list(axes)
        self._live, self._histories = {}, {}
        self._stored_done = -1
        self.cmp = None
        self.not_comparable.visible = False
        self._show_table()
        self._show_plots()

    # -- the tick: drain the sweep's progress into the page (server thread) --------------------------------------------
    def _start_ticking(self) -> None:
        if self._callback is None and pn.state.curdoc is not None:
            self._callback = pn.state.add_periodic_callback(self.tick, period=self.tick_ms)

    def _stop_ticking(self) -> None:
        if self._callback is not None:
            self._callback.stop()
            self._callback = None

    def tick(self) -> None:
        """The periodic update: draw the runs that finished since the last tick; a failure to draw shows as the message
        and the sweep goes on."""
        try:
            self._tick()
        except Exception as err:  # noqa: BLE001 — a drawing failure must not stop the periodic callback
            log.exception("compare page update failed")
            self.message = f"Could not update the page ({type(err).__name__}: {err}); the sweep goes on."

    def _tick(self) -> None:
        runner = self.runner
        if runner is None:
            self._stop_ticking()
            return
        progress, events, finished, error = runner.drain()
        if runner.sweep_id is not None and self.sweep_id != runner.sweep_id:
            self.sweep_id = runner.sweep_id
        stored = False
        for event in events:
            key = event.get("key")
            kind = event.get("kind", "")
            if key is None:
                continue
            live = self._live.setdefault(key, {"status": "queued", "step": 0, "history": ([], [])})
            if kind == "step":
                live["status"] = "running"
                live["step"] = int(event.get("step", live["step"]))
                if event.get("elbo") is not None:
                    live["elbo"] = float(event["elbo"])
                    live["history"][0].append(live["step"])
                    live["history"][1].append(float(event["elbo"]))
            elif kind in ("start", "started", "running"):
                live["status"] = "running"
            elif kind in ("done", "stored", "finished"):
                live["status"] = "done"
                stored = True
            elif kind in ("failed", "error"):
                live["status"] = "failed"
                live["message"] = str(event.get("message") or event.get("error") or "")
                stored = True
        if progress is not None and not finished:
            self.state = "stopping…" if runner.stop_event.is_set() else "running"
            self.message = progress_text(progress)
        if stored or finished or (self.cmp is None and self.sweep_id is not None):
            self.refresh()
        else:
            self._show_table()
            if time.perf_counter() - self._last_curves > 2.0 and events:
                self._show_curves()
        if finished:
            self._finish(runner, progress, error)

    def _finish(self, runner: SweepRunner, progress, error: str | None) -> None:
        self._stop_ticking()
        self.stop_button.disabled = True
        self.refresh_sweeps()
        if error:
            self.param.update(state="failed", message=f"the sweep failed: {error}")
        elif runner.stop_event.is_set():
            done = progress.done if progress is not None else 0
            total = progress.total if progress is not None else len(self._planned)
            self.param.update(state="stopped", message=f"stopped with {done} of {total} runs stored; ▶ Resume runs "
                                                       "the rest")
            self.resume_button.visible = self.sweep_id is not None
        else:
            text = progress_text(progress) if progress is not None else ""
            self.param.update(state="finished", message=text)
        for plan in self._planned:  # nothing runs any more: what did not finish says so
            live = self._live.setdefault(plan.key, {"status": "queued", "step": 0, "history": ([], [])})
            if live["status"] in ("running", "queued"):
                live["status"] = "not run"
        self.refresh()

    # -- reading the store ---------------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the sweep's comparison from the store and redraw the table and plots."""
        if self.sweep_id is None or self.store is None:
            self._show_table()
            return
        try:
            cmp = comparison(self.store, self.sweep_id)
        except InvlabError as err:
            self.message = str(err)
            return
        self.cmp = cmp
        self.axes = list(cmp.axes) or self.axes
        for run in cmp.runs:
            key = run.get("key")
            if run.get("run_id") is not None and key not in self._histories and run.get("status") in (
                    "finished", "converged", "done", "failed", "stopped"):
                try:
                    self._histories[key] = cmp.history(run["run_id"])
                except InvlabError:
                    pass
        self.not_comparable.object = (f"**These runs are not compared on one axis:** {markdown_text(cmp.reason)}"
                                      if not cmp.comparable else "")
        self.not_comparable.visible = not cmp.comparable
        self._show_table()
        self._show_plots()

    # -- drawing -------------------------------------------------------------------------------------------------------
    def rows(self) -> pd.DataFrame:
        """The table: one row per run, stored or planned, in the sweep's order."""
        axes = self.axes
        stored = {r.get("key"): r for r in (self.cmp.runs if self.cmp is not None else [])}
        keys = [p.key for p in self._planned] or list(stored)
        keys += [k for k in stored if k not in keys]
        planned = {p.key: p for p in self._planned}
        records = []
        for key in keys:
            run, plan, live = stored.get(key), planned.get(key), self._live.get(key, {})
            point = dict(plan.point) if plan is not None else {a: run.get(a) for a in axes}
            row = {"run": run.get("run_id") if run else None,
                   "status": (run.get("status") if run else None) or live.get("status", "queued")}
            for a in axes:
                value = run.get(a) if run is not None and a in run else point.get(a)
                row[field_name(a)] = value if _is_number(value) else (None if value is None else str(value))
            row["seed"] = run.get("seed") if run else (plan.seed if plan is not None else None)
            history = self._histories.get(key)
            row["step"] = live.get("step") if run is None else (history[0][-1] if history and history[0] else None)
            elbo = run.get("full_elbo") if run else None
            row["ELBO"] = _round(elbo)
            row["test error (%)"] = _round(100 * _finite(run.get("test_error")), 2) if run else None
            row["NLPD"] = _round(run.get("nlpd"), 4) if run else None
            learned = ""
            if run and run.get("learned"):
                learned = ", ".join(f"{k.split('.')[-1]} {_finite(v):.3g}{RANGE_UNITS.get(k.split('.')[-1], '')}"
                                    for k, v in run["learned"].items())
            row["learned range"] = learned
            if run is None and live.get("elbo") is not None:
                row["ELBO"] = None
            records.append(row)
        frame = pd.DataFrame(records, columns=self._columns(axes))
        if not len(frame):
            return self._empty_frame() if not axes else frame
        for column in ("run", "seed", "step"):
            frame[column] = pd.array(frame[column], dtype="Int64")
        return frame

    def _show_table(self) -> None:
        frame = self.rows()
        titles = {field_name(a): a for a in self.axes}
        if self.table.titles != titles:
            self.table.titles = titles
        if not frame.equals(self.table.value) or list(frame.columns) != list(self.table.value.columns):
            self.table.value = frame

    def _show_plots(self) -> None:
        data = axis_data(self.cmp) if self.cmp is not None else AxisData(None)
        self.axis_data = data
        self.elbo_pane.object = against_setting_plot(data, "elbo")
        self.error_pane.object = against_setting_plot(data, "error")
        self._show_curves()

    def _show_curves(self) -> None:
        self._last_curves = time.perf_counter()
        histories = dict(self._histories)
        runs = list(self.cmp.runs) if self.cmp is not None else []
        keys = {r.get("key") for r in runs}
        planned = {p.key: p for p in self._planned}
        for key, live in self._live.items():
            if key not in histories and live["history"][0]:
                histories[key] = live["history"]
                if key not in keys and key in planned:
                    runs.append({"key": key, **planned[key].point, "learned": {}})
        x = primary_axis(self.axes, runs) if runs else None
        self.curves_pane.object = curves_plot(histories, runs, x)

    def _show_state(self, *_) -> None:
        colour = STATE_COLOURS.get(self.state, "#666")
        sweep = f"sweep <b data-field=\"sweep\">#{self.sweep_id}</b>" if self.sweep_id is not None else "no sweep open"
        state = f'<b style="color:{colour}" data-field="sweep-state">{html_text(self.state)}</b>'
        message = f'<span data-field="sweep-message">{html_text(self.message)}</span>'
        self.status_pane.object = f"{state} · {sweep} · {message}"

    # -- opening a run -------------------------------------------------------------------------------------------------
    def _on_select(self, event) -> None:
        if not event.new:
            return
        index = event.new[0]
        frame = self.table.value
        if index >= len(frame):
            return
        run_id = frame.iloc[index]["run"]
        if run_id is None or pd.isna(run_id):
            self.message = "this run is not stored yet: it opens once it has finished"
            return
        self.open_run(int(run_id))

    def open_run(self, run_id: int) -> None:
        """Open stored run `run_id` on the Training page (through the page's callback)."""
        if self.on_open_run is not None:
            self.on_open_run(int(run_id))

    # -- the URL and the session ---------------------------------------------------------------------------------------
    def read_query(self, query: dict) -> list[str]:
        """`sweep=ID` in the link opens that stored sweep; returns what was refused."""
        raw = query.get("sweep")
        if raw in (None, ""):
            return []
        try:
            sweep_id = parse_id(raw, "sweep")
        except ConfigError as err:
            return [f"sweep={shorten(str(raw))!r} refused: {err}"]
        self.open_sweep(sweep_id)
        return [self.form_error_text] if self.form_error.visible else []

    def query(self) -> dict[str, str]:
        """What this page puts in the link: `sweep=ID` once a sweep is open, else nothing."""
        return {"sweep": str(self.sweep_id)} if self.sweep_id is not None else {}

    def close(self) -> None:
        """The browser session ended: stop following and stop the sweep (finished runs stay stored)."""
        self._stop_ticking()
        if self.runner is not None and not self.runner.finished:
            self.runner.stop()

    # -- layout --------------------------------------------------------------------------------------------------------
    def __panel__(self):
        """The page: its introduction at once, the rest when the tab is first shown (`activate`), so a session that
        never opens it does not pay for drawing its table and plots."""
        if self._layout is None:
            self._layout = pn.Column(pn.pane.Markdown(INTRO, sizing_mode="stretch_width"), sizing_mode="stretch_width",
                                     name="Compare")
            if self._active:
                self._layout[:] = self._contents()
        return self._layout

    def activate(self) -> None:
        """Draw the launch form, the table and the plots (once: the first time the page is shown)."""
        if self._active:
            return
        self._active = True
        if self._layout is not None:
            self._layout[:] = self._contents()

    def _contents(self) -> list:
        vary = pn.Column(pn.pane.Markdown("**Vary a setting of the Training page's configuration**", margin=(0, 10)),
                         self.parameter, self.values, pn.Row(self.seeds, self.launch_button),
                         name="Vary a setting")
        builtin = pn.Column(pn.pane.Markdown("**Run a built-in study**", margin=(0, 10)), self.study_select,
                            self.quick, self.study_button, name="Built-in study")
        stored = pn.Column(pn.pane.Markdown("**Open a stored sweep**", margin=(0, 10)), self.sweeps_select,
                           self.open_button, name="Stored sweep")
        where = pn.Column(pn.pane.Markdown("**Where the runs train**", margin=(0, 10)), self.workers,
                          self.scheduler_input, name="Workers")
        launch = pn.FlexBox(vary, builtin, stored, where, sizing_mode="stretch_width")
        plots = pn.FlexBox(self.elbo_pane, self.error_pane, self.curves_pane, sizing_mode="stretch_width")
        return [pn.pane.Markdown(INTRO, sizing_mode="stretch_width"), launch, self.form_error,
                pn.Row(self.stop_button, self.resume_button, self.status_pane, sizing_mode="stretch_width"),
                self.not_comparable,
                self.table, plots]


def progress_text(progress) -> str:
    """"5 of 12 runs done · 2 running · 0 failed · best ELBO −1234.5 · about 40 s left"."""
    parts = [f"{progress.done} of {progress.total} runs done", f"{progress.running} running",
             f"{progress.failed} failed"]
    best = _finite(progress.best_elbo)
    if not math.isnan(best):
        parts.append(f"best ELBO {best:.1f}")
    eta = _finite(progress.eta_s)
    if not math.isnan(eta) and progress.done < progress.total:
        parts.append(f"about {eta:.0f} s left" if eta < 120 else f"about {eta / 60:.0f} min left")
    return " · ".join(parts)


def _round(value, digits: int = 2):
    value = _finite(value)
    return None if math.isnan(value) else round(value, digits)


def _parse_token(token: str):
    """A typed value: 45 → 45, 0.5 → 0.5, true → True, anything else as text (checked by the setting itself)."""
    lowered = token.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return int(token)
    except ValueError:
        pass
    try:
        return float(token)
    except ValueError:
        return token


def _spread(lo, hi, default) -> list:
    if lo is None or hi is None:
        return [default] if default is not None else []
    if isinstance(lo, int) and isinstance(hi, int) and not isinstance(lo, bool):
        return sorted({lo, (lo + hi) // 2, hi})
    return [lo, (lo + hi) / 2, hi]
