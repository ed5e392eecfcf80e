"""Explorer: the dashboard as one `pn.viewable.Viewer` — controls, views and one TrainingSession.

State lives in param objects (the data, model and training configs from the engine, plus the family);
views are thin and fed at a few Hz by a periodic callback on the server thread that drains the
session's outbox. The same object works under `panel serve`, in a notebook cell and with `pn.serve`.
"""
from __future__ import annotations

import contextlib
import json
import logging
import math
import time

import panel as pn
import param

from engine.data import DataConfig
from engine.errors import InvlabError
from engine.models import get_model, model_names
from engine.train import RunConfig, RunStore
from engine.train.config import DEFAULT_LEARNING_RATE, apply_values, config_values

from .controls import LearnedValueControl, data_controls, model_controls, optimisation_controls
from .prior import PriorPanel
from .session import TrainingSession
from .views import CurveBoard, ViewPane

log = logging.getLogger(__name__)

STATE_COLOURS = {"idle": "#777", "building": "#b58900", "queued": "#b58900", "running": "#2a9d3a", "paused": "#1f6fb5",
                 "finished": "#2a9d3a", "failed": "#c0392b"}


RESOLVE_STEPS = 10  # L-BFGS steps (of up to 20 iterations each) run when a live value changes after a finished solve


class Explorer(pn.viewable.Viewer):
    model = param.Selector(default="svgp", objects=model_names(), doc="Model family.")
    notice = param.String(default="", doc="Pending changes or the last action's outcome.")

    def __init__(self, config: RunConfig | None = None, *, store: RunStore | None | bool = True, tick_ms: int = 500,
                 view_interval: float = 2.0, **params):
        config = config or RunConfig(train={"steps": 2000, "eval_every": 50})
        super().__init__(model=config.model, **params)
        self.data = apply_values(DataConfig, config.data, "data")
        self.train = config.train_config()  # the learning rate, if not given, is the optimiser's default
        self.model_config = apply_values(get_model(config.model).config, config.model_config, f"{config.model} model")
        self.store = RunStore() if store is True else (store or None)
        self.session = TrainingSession(self.run_config(), store=self.store, view_interval=view_interval)
        self.tick_ms = tick_ms
        self.curves = CurveBoard()
        self.view_panes: dict[str, ViewPane] = {}
        self.learned_controls: dict[str, LearnedValueControl] = {}
        self._run_label = ""
        self._last_snapshot = None
        self._callback = None
        self._location = None
        self._pending_extra: dict[str, tuple[list, list]] = {}
        self._last_extra = 0.0
        self._optimizer = config.optimizer_name()
        self._following_default_lr = False
        self._watch_config(self.data, self.train, self.model_config)
        self._build_widgets()

    # -- configuration -----------------------------------------------------------------------------------------------
    def run_config(self) -> RunConfig:
        return RunConfig(model=self.model, data=config_values(self.data), model_config=config_values(self.model_config),
                         train=config_values(self.train))

    def _watch_config(self, *objects) -> None:
        for obj in objects:
            obj.param.watch(self._on_config_change, [p for p in obj.param if p != "name"])

    def _on_config_change(self, *events) -> None:
        live = dict(get_model(self.model).live)
        structural = []
        for event in events:
            if event.obj is self.train and event.name == "learning_rate":
                if not self._following_default_lr:
                    self.session.set_learning_rate(event.new)
            elif event.obj is self.model_config and event.name in live:
                self._apply_live(live[event.name], event.new)
            elif not (event.obj is self.train and event.name in ("steps", "eval_every")):
                if event.obj is self.train and event.name == "optimizer":
                    self._follow_default_learning_rate()
                structural.append(event.name)
            elif event.name == "steps" and self.session.trainer is not None:
                self.session.trainer.tc.steps = event.new
        if structural:
            self._structural_change(structural)

    def _follow_default_learning_rate(self) -> None:
        """Keep the learning rate at the optimiser's default (0.01 Adam, 1 L-BFGS) when the family or the optimiser
        setting changes which optimiser runs, unless the user chose another rate. It belongs to the next run: the
        running one keeps its rate."""
        old, new = self._optimizer, self.run_config().optimizer_name()
        self._optimizer = new
        if new != old and self.train.learning_rate == DEFAULT_LEARNING_RATE.get(old) and new in DEFAULT_LEARNING_RATE:
            self._following_default_lr = True
            try:
                self.train.learning_rate = DEFAULT_LEARNING_RATE[new]
            finally:
                self._following_default_lr = False

    def _apply_live(self, learnable: str, value) -> None:
        if value is None or self.session.trainer is None:
            return
        try:
            self.session.set_value(learnable, value)
            self.notice = f"{learnable} set to {value:g} in the running model"
        except InvlabError as err:
            self.notice = str(err)
            return
        if self.session.state == "finished" and self.session.trainer.optimizer_name == "lbfgs":
            # a solver, not a trajectory: its answer for the new value is a few L-BFGS steps away, so give it
            self.session.resolve(RESOLVE_STEPS)
            self.notice += f"; re-solving ({RESOLVE_STEPS} L-BFGS steps)"

    def _structural_change(self, names) -> None:
        if self.session.trainer is None or (self.session.step == 0 and self.session.state in ("idle", "failed")):
            self.session.config = self.run_config()
            if self.session.trainer is not None:
                self.session.reset(self.run_config())
            self.notice = ""
        else:
            self.notice = (f"Changed {', '.join(sorted(set(names)))}: this needs a new model. Press Reset to apply "
                           "(the current curves stay for comparison).")

    @param.depends("model", watch=True)
    def _family_changed(self) -> None:
        old = self.model_config
        self.model_config = get_model(self.model).config()
        if self._location is not None:
            self._location.unsync(old)
            self._location.sync(self.model_config, {p: f"model.{p}" for p in self.model_config.param if p != "name"})
        self._watch_config(self.model_config)
        self.model_group[:] = [model_controls(self.model_config)]
        self._follow_default_learning_rate()
        self._structural_change(["model family"])

    # -- commands ---------------------------------------------------------------------------------------------------
    def start(self, *_):
        if self.session.trainer is None or self.session.config.to_json() != self.run_config().to_json() and \
                self.session.step == 0:
            self.session.config = self.run_config()
            if self.session.trainer is not None:
                self.session.reset(self.run_config())
        self.session.start()

    def pause(self, *_):
        self.session.pause()

    def step(self, *_):
        self.session.step_once()

    def reset(self, *_):
        self.notice = ""
        try:
            config = self.run_config().validate()
        except InvlabError as err:
            self.notice = str(err)
            return
        self.session.reset(config)

    def save_checkpoint(self, *_):
        try:
            self.notice = f"checkpoint saved: {self.session.save_checkpoint()}"
        except InvlabError as err:
            self.notice = str(err)

    def open_run(self, *_):
        run_id = self.runs_select.value
        if run_id is None:
            self.notice = "no stored run selected"
            return
        self.session.open_run(run_id)

    # -- widgets and layout -------------------------------------------------------------------------------------------
    def _build_widgets(self) -> None:
        self.buttons = {
            "start": pn.widgets.Button(label="▶ Start", color="success", width=90),
            "pause": pn.widgets.Button(label="❚❚ Pause", color="primary", width=90),
            "step": pn.widgets.Button(label="+1 Step", width=80),
            "reset": pn.widgets.Button(label="↺ Reset", color="warning", width=80),
            "save": pn.widgets.Button(label="Save checkpoint", width=140),
        }
        for key, fn in (("start", self.start), ("pause", self.pause), ("step", self.step), ("reset", self.reset),
                        ("save", self.save_checkpoint)):
            self.buttons[key].on_click(fn)
        self.runs_select = pn.widgets.Select(label="Stored runs", options={}, width=260)
        self.open_button = pn.widgets.Button(label="Open run", width=100)
        self.open_button.on_click(self.open_run)
        self.download = pn.widgets.FileDownload(callback=self.curves.to_csv, filename="invlab_curves.csv",
                                                label="Download curves (CSV)", color="light", width=220)
        self.model_group = pn.Column(model_controls(self.model_config), name="Model")
        self.invariance_group = pn.Column(pn.pane.Markdown("Start a run to see this family's invariance ranges."),
                                          name="Invariance")
        self.status = pn.pane.HTML("", sizing_mode="stretch_width", name="status")
        self.notice_pane = pn.pane.Alert("", alert_type="warning", visible=False)
        self.views_area = pn.FlexBox()
        self.prior = PriorPanel()  # the deep-kernel-process prior explorer: a page of its own, drawn when first shown
        self._refresh_runs()
        self._render_status()

    def controls(self) -> pn.Tabs:
        family = pn.widgets.Select.from_param(self.param.model, label="Model family")
        return pn.Tabs(
            data_controls(self.data),
            pn.Column(family, self.model_group, name="Model"),
            self.invariance_group,
            optimisation_controls(self.train),
            pn.Column(self.runs_select, self.open_button, self.buttons["save"], self.download, name="Runs"),
            dynamic=False, width=330,
        )

    def __panel__(self):
        run_bar = pn.Row(*(self.buttons[k] for k in ("start", "pause", "step", "reset")))
        curve_opts = pn.Row(pn.widgets.Checkbox.from_param(self.curves.param.logy, label="log y"),
                            pn.widgets.FloatSlider.from_param(self.curves.param.smoothing, width=200),
                            pn.widgets.Checkbox.from_param(self.curves.param.show_previous, label="previous runs"))
        main = pn.Column(run_bar, self.status, self.notice_pane, curve_opts, self.curves.layout, self.views_area,
                         self.curves.extra_layout, sizing_mode="stretch_width")
        layout = pn.Row(self.controls(), main, sizing_mode="stretch_width", name="Training")
        self.pages = pn.Tabs(("Training", layout), ("Deep kernel prior", self.prior), dynamic=False, sizing_mode="stretch_width")
        self.pages.param.watch(lambda event: event.new == 1 and self.prior.activate(), "active")
        pn.state.onload(self._on_load)
        return self.pages

    # -- server-side lifecycle -------------------------------------------------------------------------------------------
    def _on_load(self) -> None:
        if self._callback is None:
            self._callback = pn.state.add_periodic_callback(self.tick, period=self.tick_ms)
        if pn.state.curdoc is not None:  # under a server: stop training when the browser tab goes away
            pn.state.on_session_destroyed(lambda ctx: self.close())
        if pn.state.location is not None:
            self.sync_location(pn.state.location)

    def sync_location(self, location) -> None:
        """Keep the whole configuration in the URL query string (and read it from there first)."""
        self._location = location
        location.sync(self, {"model": "model"})
        location.sync(self.data, {p: f"data.{p}" for p in self.data.param if p != "name"})
        location.sync(self.model_config, {p: f"model.{p}" for p in self.model_config.param if p != "name"})
        location.sync(self.train, {p: f"train.{p}" for p in self.train.param if p != "name"})

    def close(self) -> None:
        """Stop training and the periodic callback (the browser session ended)."""
        if self._callback is not None:
            self._callback.stop()
            self._callback = None
        self.session.stop()

    # -- the tick: drain the session, feed the views ---------------------------------------------------------------------
    MAIN_CURVES = {"elbo", "test_error", "test_rmse", "test_nlpd"}
    EXTRA_EVERY = 2.0  # seconds between updates of the secondary curves (loss terms)

    def tick(self) -> None:
        started = time.perf_counter()
        update = self.session.drain()
        building = 0.0
        try:
            with batched_recompute(pn.state.curdoc) as attach_new_models:
                if update.new_run:
                    self._start_new_run(update)
                sends = self._curves_to_send(update)
                if self._add_panes([metric for metric, _, _ in sends], update.snapshot):
                    attach_new_models()  # before any data is streamed into the new plots
                building = time.perf_counter() - started
                for metric, steps, values in sends:
                    self.curves.send(metric, steps, values)
                if update.snapshot is not None:
                    self._last_snapshot = update.snapshot
                    self._show_views(update.snapshot.views)
                    self._show_learned(update.snapshot.views)
                self._render_status()
        except Exception as err:  # noqa: BLE001 — a drawing failure must not stop the periodic callback
            log.exception("dashboard update failed")
            self.notice = f"Could not update the page ({type(err).__name__}: {err}); training goes on."
        # creating plots is a one-off (about 1.5 s when a run's first data arrives): pace on the steady-state work
        self._pace(time.perf_counter() - started - building)

    def _start_new_run(self, update) -> None:
        self.curves.archive(self._run_label or "previous")
        self._run_label = update.run_label
        self._pending_extra = {}
        self._rebuild_learned_controls()
        self._refresh_runs()

    def _curves_to_send(self, update) -> list[tuple[str, list, list]]:
        """The main curves now; secondary ones (loss terms, ranges) collected and sent every EXTRA_EVERY seconds."""
        sends = []
        has_elbo = "elbo" in update.points or "elbo" in self.curves.buffers
        for metric, (steps, values) in update.points.items():
            if metric == "loss" and has_elbo:
                continue  # −ELBO: the same curve upside down
            if metric in self.MAIN_CURVES or (metric == "loss" and not has_elbo):
                sends.append((metric, steps, values))
            else:
                pending = self._pending_extra.setdefault(metric, ([], []))
                pending[0].extend(steps)
                pending[1].extend(values)
        now = time.perf_counter()
        finishing = update.snapshot is not None and update.snapshot.status != "running"
        if now - self._last_extra >= self.EXTRA_EVERY or finishing:
            sends.extend((metric, steps, values) for metric, (steps, values) in self._pending_extra.items())
            self._pending_extra, self._last_extra = {}, now
        return [(metric, steps, values) for metric, steps, values in sends if len(steps)]

    def _add_panes(self, metrics, snapshot) -> bool:
        """Create the plots about to receive data; True if any were created.

        A new plot's data source must be attached to the document before its first data is streamed: a
        detached source emits no events, so the browser would keep the empty copy it received with the plot."""
        created = False
        for metric in metrics:
            if metric not in self.curves.buffers:
                self.curves.buffer(metric)
                created = True
        if snapshot is not None:
            for name, view in snapshot.views.items():
                pane = self.view_panes.get(name)
                if pane is None or pane.kind is not type(view):
                    self.view_panes[name] = ViewPane(name, view)
                    self.views_area.append(self.view_panes[name].panel)
                    created = True
        return created

    def _pace(self, elapsed: float) -> None:
        """Keep the tick under about a quarter of the server's (or notebook kernel's) event loop.

        A periodic callback that overruns its period is re-run at once without yielding, which would
        starve the loop (in a notebook: no cell runs until training ends)."""
        cb = self._callback
        if cb is None:
            return
        period = max(self.tick_ms, int(4000 * elapsed))
        if abs(period - cb.period) > 0.25 * cb.period:
            cb.period = period

    def _show_views(self, views) -> None:
        """Send each view to its pane (`_add_panes` created the missing ones, already holding their view)."""
        for name, view in views.items():
            pane = self.view_panes[name]
            if pane.pipe.data is not view:
                pane.update(view)

    def _rebuild_learned_controls(self) -> None:
        trainer = self.session.trainer
        self.learned_controls = {}
        ranges = getattr(trainer.model, "invariance_parameters", None) if trainer is not None else None
        if ranges is None:
            self.invariance_group[:] = [pn.pane.Markdown(f"The **{self.model}** family has no invariance ranges.")]
            return
        controls = []
        for name, p in ranges().items():
            value = p().detach()
            if value.numel() != 1:
                continue
            lo, hi = (getattr(p, "lo", None), getattr(p, "hi", None))
            ctl = LearnedValueControl(name, float(value), lo, hi, self._set_learned, self._freeze_learned)
            ctl.learn.value = not p.frozen
            self.learned_controls[name] = ctl
            controls.append(ctl.panel)
        self.invariance_group[:] = controls or [pn.pane.Markdown("No scalar invariance ranges in this model.")]

    def _set_learned(self, name, value):
        try:
            self.session.set_value(name, value)
            self.notice = f"{name} set to {value:g}"
        except InvlabError as err:
            self.notice = str(err)

    def _freeze_learned(self, name, frozen):
        self.session.freeze(name, frozen)

    def _show_learned(self, views) -> None:
        scalars = views.get("hyperparameters")
        if scalars is None:
            return
        for name, ctl in self.learned_controls.items():
            if name in scalars.values:
                ctl.show(scalars.values[name])

    def _refresh_runs(self) -> None:
        if self.store is None:
            return
        try:
            runs = self.store.list_runs(limit=100)
        except InvlabError as err:
            self.notice = str(err)
            return
        self.runs_select.options = {f"#{r.id} {r.model} on {r.dataset} — {r.status}, step {r.step}": r.id for r in runs}

    @param.depends("notice", watch=True)
    def _show_notice(self) -> None:
        self.notice_pane.object = self.notice
        self.notice_pane.visible = bool(self.notice)

    def status_values(self) -> dict:
        s = self._last_snapshot
        numerics = s.numerics if s is not None else {}
        return {
            "state": self.session.state, "step": self.session.step,
            "steps_per_sec": s.steps_per_sec if s is not None else float("nan"),
            "device": s.device if s is not None else "-", "dtype": s.dtype if s is not None else "-",
            "jitter": numerics.get("jitter", float("nan")), "kuu_condition": numerics.get("kuu_condition", float("nan")),
            "learning_rate": self.train.learning_rate, "message": self.session.message,
        }

    def _render_status(self) -> None:
        v = self.status_values()

        def fmt(x, spec):
            return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)

        colour = STATE_COLOURS.get(v["state"], "#777")
        cells = [
            f'<b style="color:{colour}" data-field="state">{v["state"]}</b>',
            f'step <b data-field="step">{v["step"]}</b>',
            f'<span data-field="rate">{fmt(v["steps_per_sec"], ".1f")}</span> steps/s',
            f'{v["device"]} · {v["dtype"]}',
            f'lr <span data-field="lr">{fmt(v["learning_rate"], "g")}</span>',
            f'jitter {fmt(v["jitter"], ".1e")}',
            f'cond(K<sub>uu</sub>) {fmt(v["kuu_condition"], ".2e")}',
        ]
        message = v["message"]
        html = " &nbsp;|&nbsp; ".join(cells)
        if message:
            html += f'<div data-field="message" style="color:#c0392b;margin-top:4px">{_escape(message)}</div>'
        self.status.object = f'<div class="invlab-status" style="font-family:monospace">{html}</div>'

    def to_query(self) -> str:
        """The configuration as it appears in the URL query (for sharing a demo as a link)."""
        items = {"model": self.model}
        for prefix, obj in (("data", self.data), ("model", self.model_config), ("train", self.train)):
            items.update({f"{prefix}.{k}": v for k, v in config_values(obj).items()})
        return json.dumps(items, sort_keys=True)


@contextlib.contextmanager
def batched_recompute(doc):
    """Recompute the Bokeh document's model graph at most once, and only if some update changed it.

    Each plot update otherwise freezes and re-walks the whole graph (≈35 ms on this page, several times
    per tick). Uses Bokeh's model manager internals; without them (another Bokeh) it does nothing special.
    """
    models = getattr(doc, "models", None)
    if models is None or not all(hasattr(models, a) for a in ("_push_freeze", "_freeze_count", "recompute")):
        yield lambda: None
        return
    dirty = []

    def attach_new_models():
        """Recompute now: models added so far join the document (and get their document) before the block ends."""
        if dirty:
            dirty.clear()
            models.recompute()

    models._push_freeze()
    models.invalidate = lambda: dirty.append(True)  # instance attribute shadows the method while batching
    try:
        yield attach_new_models
    finally:
        del models.invalidate
        models._freeze_count -= 1
        if models._freeze_count == 0 and dirty:
            models.recompute()


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
