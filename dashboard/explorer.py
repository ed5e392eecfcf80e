"""Explorer: the dashboard as one `pn.viewable.Viewer` that wires its parts together.

- `RunSettings` (settings.py): the family and its configs, the page's one source of truth, synced with the URL;
- `StatusBar` (status.py): what the run is doing, set at once by commands and filled in by the feed;
- `TrainingSession` (session.py): the training thread;
- `LiveFeed` (feed.py): the periodic tick that streams curves and views into the page;
- controls (controls.py), lesson cards (lessons.py), the family's prior page (prior.py), the Compare page for
  sweeps (compare.py).

The same object works under `panel serve`, in a notebook cell and with `pn.serve`.
"""
from __future__ import annotations

import logging
import sqlite3
from urllib.parse import urlencode

import panel as pn
import param

from engine.errors import InvlabError
from engine.models import get_model
from engine.plugins import failure_lines
from engine.train import RunConfig, RunStore

from . import notebook
from .compare import ComparePage
from .controls import data_controls, model_controls, optimisation_controls
from .feed import LiveFeed
from .learned_controls import LearnedValueControl
from .lessons import (
    LessonCards,
    compare_for_family,
    get_lesson,
    prior_settings,
    steps_markdown,
    visible_controls,
)
from .prior import PriorPanel
from .safe_text import html_text, markdown_text
from .session import TrainingSession
from .settings import RunSettings, describe_difference, family_defaults
from .status import StatusBar
from .user_data import config_with_data, data_choices
from .words import family_help, family_sentence, not_applicable, orbit_words

log = logging.getLogger(__name__)

SIZE_KEYS = ("data.dataset", "data.source_options", "model.num_inducing", "train.batch_size")  # for the loop bound
RESOLVE_STEPS = 10  # L-BFGS steps (of up to 20 iterations each) run when a live value changes after a finished solve


class Explorer(pn.viewable.Viewer):
    """The lab in one object: controls, live training, curves and views, lessons, the prior page and Compare.

    `config`: the run to start from (default: the page's defaults, SVGP on digits). Your own data:
    `data=(X, y)` (X [N, D], or images [N, H, W] / [N, C, H, W]) or `data=df` with `target="column"`, or
    `dataset=` a built `engine.data.Dataset`; it is handed over as 'python:NAME' and listed in the data box.
    `store`: True for the data directory's run store (opened when the page connects), a `RunStore`, or None.
    `limits`: a server's `ServerLimits` (None in a notebook); `user` / `admin`: the logged-in user on a server
    with logins. Display it in a notebook cell, or serve it with `pn.serve` / `panel serve`."""

    notice = param.String(default="", doc="Pending changes or the last action's outcome.")

    def __init__(self, config: RunConfig | None = None, *, data=None, dataset=None, target: str | None = None,
                 store: RunStore | None | bool = True, tick_ms: int = 500, view_interval: float = 2.0,
                 eval_interval: float = 2.0, limits=None, user: str | None = None, admin: bool = False,
                 run: int | None = None, **params):
        """`run=ID`: open stored run ID at once (as Runs → Open run does); a run another process is writing, such as
        a loop under `engine.train.watch`, is followed while it writes."""
        super().__init__(**params)
        # your own data: (X, y) or a DataFrame (target= its column to predict), or a built Dataset
        self.settings = RunSettings(config_with_data(config, data, dataset, target))
        # store=True: the data directory's run store, opened when the page connects (or on first use), so a page
        # that never connects opens no file; the session closes it when it ends.
        self._store = None if store is True else (store or None)
        self._store_wanted = store is True
        self.limits = limits  # dashboard.limits.ServerLimits under `invlab serve`; None: no limits (a notebook)
        self.user, self.admin = user, admin  # a server with logins: the page's user (its own runs only, unless admin)
        self.session = TrainingSession(self.settings.run_config(), store=self._store, view_interval=view_interval,
                                       eval_interval=eval_interval, limits=limits)
        self.feed = LiveFeed(self.session, tick_ms=tick_ms)
        self.status = StatusBar()
        self.learned_controls: dict[str, LearnedValueControl] = {}
        self._doc = None
        self._heartbeat = None  # set when shown in a notebook: the page's sign of life
        self._location = None
        self._applying_run_config = False
        self._reading_link = False  # True while a link's settings are applied one by one
        self._run_started = False
        self._current_config: RunConfig | None = None  # the configuration of the run the curves show, at its start
        self._changes_during_run: list[tuple[int, str, object]] = []  # (step, "train.learning_rate", value) set live
        self._closed = False
        self._closes_with = None  # the document whose end closes this explorer
        self.settings.on_change(self._on_settings_change)
        self.session.param.watch(self._on_session_state, ["state", "message", "tone"])
        # installed plugins are loaded with dashboard.settings; one that failed is named in a note that stays
        self.plugin_note = pn.pane.Alert(markdown_text(" ".join(f"Note: {line}." for line in failure_lines())),
                                         alert_type="warning", visible=bool(failure_lines()),
                                         sizing_mode="stretch_width")
        self._build_widgets()
        self._status_from_settings()
        if run is not None:
            self.open_stored_run(int(run))

    # -- the run store -------------------------------------------------------------------------------------------------
    @property
    def store(self) -> RunStore | None:
        """The run store, opened on first use; None without one (or when it cannot be opened: the notice says why)."""
        if self._store_wanted:
            self._store_wanted = False
            try:
                self._store = RunStore(owner=self.user, admin=self.admin)
            except InvlabError as err:
                self._store_problem(str(err))
            except (OSError, sqlite3.Error) as err:
                self._store_problem(f"the run store in the data directory cannot be opened ({type(err).__name__}: "
                                    f"{err}); point INVLAB_DATA at a writable directory (or move a damaged runs.sqlite "
                                    "aside) and restart the server")
            if self._store is not None:
                self.session.store, self.session.owns_store = self._store, True
        return self._store

    def _store_problem(self, text: str) -> None:
        log.error("run store: %s", text)
        self.notice = f"Runs are not saved: {text}. Training works; stored runs cannot be listed or opened."

    # -- the page's state (kept as attributes for notebooks and tests) -------------------------------------------------
    @property
    def model(self) -> str:
        return self.settings.model

    @model.setter
    def model(self, name: str) -> None:
        self.settings.model = name

    @property
    def data(self):
        return self.settings.data

    @property
    def train(self):
        return self.settings.train

    @property
    def model_config(self):
        return self.settings.model_config

    @property
    def curves(self):
        return self.feed.curves

    @property
    def view_panes(self):
        return self.feed.view_panes

    def run_config(self) -> RunConfig:
        return self.settings.run_config()

    def to_query(self) -> str:
        """The configuration as it appears in the URL (only what differs from the defaults)."""
        return self.settings.query_string()

    # -- reacting to settings ------------------------------------------------------------------------------------------
    def _on_settings_change(self, events) -> None:
        if self._applying_run_config:
            return
        live = dict(get_model(self.settings.model).live)
        self._refuse_oversized_subset(events)  # raises (the field explains it) after putting the value back
        self._clear_field_messages()  # a value was accepted: messages about earlier refused values are stale
        structural = []
        for event in events:
            if event.obj is self.settings and event.name == "model":
                lesson = get_lesson(self.settings.lesson)
                extra = compare_for_family(lesson, self.settings.model)  # the lesson's second run
                if extra:
                    self.settings.model_config.param.update(**extra)
                self._rebuild_model_controls()
                structural.append("model family")
            elif event.obj is self.settings.train and event.name == "learning_rate":
                self._note_live_change("train.learning_rate", event.new)
                self.session.set_learning_rate(event.new)
                self.status.learning_rate = event.new
            elif event.obj is self.settings.model_config and event.name in live:
                self._note_live_change(f"model.{event.name}", event.new)
                self._apply_live(live[event.name], event.new)
            elif event.obj is self.settings.train and event.name in ("steps", "eval_every"):
                self.session.config.train[event.name] = event.new
                if self.session.trainer is not None:
                    setattr(self.session.trainer.tc, event.name, event.new)
            else:
                structural.append(event.name)
        if structural:
            self._structural_change(structural)
        self._mark_not_applicable()
        self._status_from_settings()
        self._update_location()

    def _refuse_oversized_subset(self, events) -> None:
        """A subset larger than the data has is put back at once, and refused with the data's size (the field says
        so; the URL never carries it). Not while a link is read: its values arrive one by one, and the run built from
        them says what is wrong with the whole."""
        if self._reading_link:
            return
        for event in events:
            if event.obj is self.settings.data and event.name in ("subset", "test_subset") and event.new:
                try:
                    self.settings.data.load()
                except InvlabError as err:
                    if str(event.new) in str(err) and event.name in str(err):
                        setattr(self.settings.data, event.name, event.old)
                        raise
                except Exception:  # noqa: BLE001 — other data problems are the run's to report, when it is built
                    return

    def _clear_field_messages(self) -> None:
        for group in (getattr(self, "data_group", None), getattr(self, "train_group", None),
                      self.model_group[0] if len(self.model_group) else None):
            for control in getattr(group, "controls", {}).values():
                if control.error and not control._syncing:
                    control._show_message("")

    def _note_live_change(self, key: str, value) -> None:
        """Remember a setting applied to the running model, so its curves are later labelled by their course."""
        if self.session.trainer is not None and self.session.step > 0:
            self._changes_during_run.append((self.session.step, key, value))

    def _apply_live(self, learnable: str, value) -> None:
        if value is None or self.session.trainer is None:
            return
        try:
            self.session.set_value(learnable, value)
            self.notice = f"{learnable} set to {value:g} in the running model"
        except InvlabError as err:
            self.notice = str(err)
            return
        if self.session.state in ("finished", "converged") and self.session.trainer.optimizer_name == "lbfgs":
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

    def _status_from_settings(self) -> None:
        if self.session.trainer is None and not self._run_started:
            self.status.run = f"{self.settings.model} on {self.settings.data.dataset}"
        self.status.learning_rate = self.settings.train.learning_rate

    # -- commands: the status changes at once; the training thread follows --------------------------------------------
    def start(self, *_):
        self.store  # noqa: B018 — opened before the first run is built
        if self.session.trainer is None or self.session.config.to_json() != self.run_config().to_json() and \
                self.session.step == 0 and self.session.state in ("idle", "failed"):
            try:
                config = self.run_config().validate()
            except InvlabError as err:
                self.status.param.update(state="failed", message=str(err), tone="error")
                return
            if not self._within_limits(config):
                return
            self.session.config = config
            if self.session.trainer is not None:
                self.session.reset(config)
            self.status.param.update(state="building", message="", tone="info")
        elif self.status.state not in ("finished", "converged"):
            self.status.param.update(state="running", message="", tone="info")
        if self.notice.startswith("Changed ") and "Press Reset" in self.notice and "Start goes on" not in self.notice:
            self.notice += " ▶ Start goes on with the current run and its settings until then."
        self.session.start()

    def _within_limits(self, config: RunConfig) -> bool:
        """Refuse (in the status) a run larger than this server allows, before anything is built."""
        if self.limits is None:
            return True
        try:
            self.limits.check(config)
        except InvlabError as err:
            self.status.param.update(state="failed", message=str(err), tone="error")
            return False
        return True

    def pause(self, *_):
        self.session.pause()
        if self.status.state in ("running", "collapsed", "stalled", "diverging"):
            self.status.param.update(state="pausing…", message="", tone="info")  # "paused" once the step ends
        elif self.status.state in ("queued", "building"):
            self.status.param.update(state="paused", message="", tone="info")

    def step(self, *_):
        self.store  # noqa: B018 — opened before the first run is built
        self.session.step_once()

    def reset(self, *_):
        self.notice = ""
        try:
            config = self.run_config().validate()
        except InvlabError as err:
            self.notice = str(err)
            return
        if not self._within_limits(config):
            return
        self.store  # noqa: B018 — opened before the run is built
        self.status.param.update(state="building", step=0, message="", tone="info")
        self.session.reset(config)

    def save_checkpoint(self, *_):
        """Saved by the training thread between two steps; the status shows the path."""
        try:
            self.session.request_checkpoint()
            self.notice = ""
        except InvlabError as err:
            self.notice = str(err)

    def open_run(self, *_):
        run_id = self.runs_select.value
        if run_id is None:
            self.notice = "no stored run selected"
            return
        self.status.param.update(state="building", message=f"opening stored run {run_id}…", tone="info")
        self.session.open_run(run_id)

    def open_run_link(self, raw) -> None:
        """`?run=ID` in the link: open that stored run on Training (refused, with the reason, when it is not a number
        or belongs to another user of a server with logins)."""
        if raw in (None, ""):
            return
        if not str(raw).isdigit():
            self.notice = f"run={raw!r} refused: a stored run is named by its number (Runs → Stored runs lists them)"
            return
        self.open_stored_run(int(raw))

    def open_stored_run(self, run_id: int) -> None:
        """Show stored run `run_id` on the Training page (a click on a run of the Compare page)."""
        self._refresh_runs()
        if run_id in self.runs_select.options.values():
            self.runs_select.value = run_id
        if hasattr(self, "pages"):
            self.pages.active = 0
        self.status.param.update(state="building", message=f"opening stored run {run_id}…", tone="info")
        self.session.open_run(run_id)

    # -- the training thread's state, shown as soon as it changes ------------------------------------------------------
    def _on_session_state(self, *_):
        """Runs on the training thread: schedule the status update on the page's event loop."""
        doc = self._doc
        if doc is not None and doc.session_context is not None:
            try:
                doc.add_next_tick_callback(self._status_from_session)
            except Exception:  # noqa: BLE001 — the document is gone (session closed): nothing to show
                pass
        elif doc is None:
            self._status_from_session()

    def _status_from_session(self) -> None:
        s = self.session
        values = dict(state="pausing…" if s.pausing else s.state, step=s.step, message=s.message, tone=s.tone)
        health = self.feed.last_snapshot.health if self.feed.last_snapshot is not None else None
        if s.followed_health is not None:  # a run another process writes: its verdict from what it stored
            health = s.followed_health
        if (s.state == "running" or s.followed_health is not None) and health is not None \
                and health.state not in ("ok", "converged"):
            values.update(state=health.state, message=health.hint,
                          tone="error" if health.state == "collapsed" else "warning")
        if s.state == "converged" and not s.message:
            values.update(message="the solver has converged: its answer will not change with more steps", tone="info")
        self.status.param.update(**values)

    # -- widgets and layout --------------------------------------------------------------------------------------------
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
        self.runs_select = pn.widgets.Select(label="Stored runs", options={}, width=280)
        self.open_button = pn.widgets.Button(label="Open run", width=100)
        self.open_button.on_click(self.open_run)
        self.download = pn.widgets.FileDownload(callback=self.curves.to_csv, filename="invlab_curves.csv",
                                                label="Download curves (CSV)", color="light", width=220)
        self.model_group = pn.Column(model_controls(self.settings.model_config), name="Model")
        # the chosen family in words, with its paper (the selector's hover help has every family's)
        self.family_words = pn.pane.HTML("", margin=(0, 10, 6, 10), width=300)
        self.invariance_group = pn.Column(pn.pane.Markdown("Start a run to see this family's invariance ranges."),
                                          name="Invariance")
        self.notice_pane = pn.pane.Alert("", alert_type="warning", visible=False, sizing_mode="stretch_width")
        self.lesson_pane = pn.pane.Alert("", alert_type="info", visible=False, sizing_mode="stretch_width",
                                         css_classes=["invlab-lesson-banner"])
        self.lessons = LessonCards()
        self.url_field = pn.widgets.TextInput(value="", visible=False)
        self.url_field.jscallback(value="""
            const url = window.location.pathname + cb_obj.value + window.location.hash;
            if (url !== window.location.pathname + window.location.search + window.location.hash)
              window.history.replaceState(window.history.state, "", url);""")
        self.prior = self._prior_page()
        self.compare = ComparePage(self.settings, lambda: self.store, on_open_run=self.open_stored_run)
        self.compare.param.watch(lambda *_: self._update_location(), "sweep_id")
        if not self._store_wanted:
            self._refresh_runs()  # a store handed in; the data directory's own is listed when the page connects

    def _prior_page(self):
        """The prior explorer of the family that has one (found through the model registry)."""
        from engine.models import REGISTRY

        for spec in REGISTRY.values():
            factory = getattr(spec, "prior_explorer", None)
            if factory is not None:
                return PriorPanel(factory())
        return PriorPanel()

    def controls(self) -> pn.Tabs:
        family = pn.widgets.Select.from_param(self.settings.param.model, label="Model family",
                                              description=family_help(self.settings.param.model.objects))
        self.family_select = family
        self.data_group = data_controls(self.settings.data, data_choices(self.limits))
        self.train_group = optimisation_controls(self.settings.train)
        tabs = [self.data_group, pn.Column(family, self.family_words, self.model_group, name="Model"),
                self.invariance_group,
                self.train_group,
                pn.Column(self.runs_select, self.open_button, self.buttons["save"], self.download, name="Runs")]
        shown = self._teacher_controls()
        if shown is not None:  # teacher mode: only the controls the lesson needs
            family.visible = "model" in shown
            for section, group in (("data", self.data_group), ("train", self.train_group)):
                self._hide_controls(section, group, shown)
            self._hide_controls("model", self.model_group[0], shown)
            keep = {"Data": any(k.startswith("data.") for k in shown),
                    "Model": "model" in shown or any(k.startswith("model.") for k in shown),
                    "Optimisation": any(k.startswith("train.") for k in shown), "Invariance": True, "Runs": False}
            tabs = [tab for tab in tabs if keep.get(tab.name, True)]
        self._mark_not_applicable()
        return pn.Tabs(*tabs, dynamic=False, width=340)

    def _mark_not_applicable(self) -> None:
        """Disable, with the reason under each, the controls that do nothing with the current settings (Degree for
        an RBF kernel, rotation for points, the learning rate of the L-BFGS solver)."""
        self.family_words.object = ('<div class="invlab-family-words" style="font-size:12px;color:#57606a;'
                                    f'line-height:1.35">{html_text(family_sentence(self.settings.model))}</div>')
        reasons = not_applicable(self.settings)
        groups = {"data": getattr(self, "data_group", None), "train": getattr(self, "train_group", None),
                  "model": self.model_group[0] if len(self.model_group) else None}
        for section, group in groups.items():
            for name, control in getattr(group, "controls", {}).items():
                control.set_applies(reasons.get(f"{section}.{name}", ""))

    def _teacher_controls(self) -> set[str] | None:
        """The controls teacher mode keeps ("model", "data.rotate", …), or None when not in teacher mode."""
        lesson = get_lesson(self.settings.lesson)
        return visible_controls(lesson) if self.settings.teacher and lesson is not None else None

    @staticmethod
    def _hide_controls(section: str, group, shown: set[str]) -> None:
        for name, control in getattr(group, "controls", {}).items():
            control.layout.visible = f"{section}.{name}" in shown

    def _rebuild_model_controls(self) -> None:
        old = self.model_group[0] if len(self.model_group) else None
        group = model_controls(self.settings.model_config)
        shown = self._teacher_controls()
        if shown is not None:
            self._hide_controls("model", group, shown)
        self.model_group[:] = [group]
        self._mark_not_applicable()
        if old is not None and hasattr(old, "close"):
            old.close()  # its controls stop following the previous family's config

    def __panel__(self):
        if pn.state.location is not None and self._location is None:
            self.read_location(pn.state.location)  # before anything is drawn: the link's family and controls
        run_bar = pn.Row(*(self.buttons[k] for k in ("start", "pause", "step", "reset")))
        curve_opts = pn.Row(pn.widgets.Checkbox.from_param(self.curves.param.logy, label="log y"),
                            pn.widgets.FloatSlider.from_param(self.curves.param.smoothing, width=200),
                            pn.widgets.Checkbox.from_param(self.curves.param.show_previous, label="previous runs"))
        main = pn.Column(self.url_field, self.lesson_pane, run_bar, self.status, self.notice_pane, self.plugin_note,
                         curve_opts,
                         self.curves.layout, self.feed.views_area, self.curves.extra_layout,
                         sizing_mode="stretch_width")
        layout = pn.Row(self.controls(), main, sizing_mode="stretch_width", name="Training")
        self._show_lesson()
        self.pages = pn.Tabs(("Training", layout), ("Lessons", self.lessons), ("Deep kernel prior", self.prior),
                             ("Compare", self.compare), dynamic=False, sizing_mode="stretch_width")
        self.pages.param.watch(self._on_page, "active")
        query = pn.state.location.query_params if pn.state.location is not None else {}
        if query.get("page") == "prior":
            self.pages.active = 2
            self.prior.activate()
        elif query.get("page") == "compare":
            self.pages.active = 3
        elif pn.state.location is not None and not query:
            self.pages.active = 1  # a bare link lands on the lessons
        pn.state.onload(self._on_load)
        if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
            # Also for a page that never connects (Bokeh ends it after --unused-session-lifetime): whatever it
            # holds goes with it.
            self._close_with(pn.state.curdoc)
        return self.pages

    def _on_page(self, event) -> None:
        if event.new == 2:
            self.prior.activate()
        elif event.new == 3:
            self.compare.activate()
            self.compare.refresh_parameters()  # the settings to vary follow the Training page's configuration
            self.compare.refresh_sweeps()
        self._update_location()

    def _repr_mimebundle_(self, include=None, exclude=None):
        """Display in a notebook: load what the page needs (offline too), and close when the page goes away
        (see dashboard.notebook)."""
        notebook.extension("tabulator")  # the Compare page's run table
        if self._heartbeat is None:
            self._heartbeat = notebook.Heartbeat()
        view = notebook.NotebookView(self._create_view(), self._heartbeat, sizing_mode="stretch_width", margin=0)
        bundle = view._repr_mimebundle_(include, exclude)
        for ref, entry in list(pn.state._views.items()):
            if entry[0] is view:
                notebook.track(self, ref)
        return bundle

    def _show_lesson(self) -> None:
        """The lesson's banner (title, what it shows, its steps) on the Training and prior pages; in teacher mode the
        prior page's controls the lesson does not touch are hidden."""
        lesson = get_lesson(self.settings.lesson)
        for pane in (self.lesson_pane, self.prior.banner):
            pane.object = steps_markdown(lesson) if lesson is not None else ""
            pane.visible = lesson is not None
        shown = self._teacher_controls()
        for name, widget in getattr(self.prior.controls, "_widgets", {}).items():
            if name != "name":
                widget.visible = shown is None or f"prior.{name}" in shown

    # -- server-side lifecycle -----------------------------------------------------------------------------------------
    def _on_load(self) -> None:
        self._doc = pn.state.curdoc
        if self._closed:
            return
        self.feed.start(self.tick)
        if pn.state.curdoc is not None:
            self._close_with(pn.state.curdoc)  # the tab went away: stop training
        if pn.state.location is not None:
            self.read_location(pn.state.location)
            self.open_run_link(pn.state.location.query_params.get("run"))
            if pn.state.location.query_params.get("page") == "compare":
                problems = self.compare.read_query(pn.state.location.query_params)
                if problems:
                    self.notice = "Some settings in the link were refused: " + "; ".join(problems)
        self._refresh_runs()

    def _close_with(self, doc) -> None:
        """Close when `doc`'s session is destroyed, without waiting for the training thread (the server thread
        stays free for the other pages)."""
        if self._closes_with is not doc:
            self._closes_with = doc
            doc.on_session_destroyed(lambda ctx: self.close(wait=False))

    def read_location(self, location) -> None:
        """Take the configuration from the URL once, then keep the URL following the settings."""
        if self._location is location:
            return
        self._location = None  # no URL writes while the link is being read
        query = location.query_params
        self._reading_link = True
        try:
            problems = self.settings.apply_query(query)
        finally:
            self._reading_link = False
        problems += self._refuse_oversize_link()
        prior = {k.partition(".")[2]: v for k, v in query.items() if k.startswith("prior.")}
        lesson = get_lesson(self.settings.lesson)
        prior = {**prior_settings(lesson), **prior} if lesson is not None else prior
        if prior:
            try:
                self.prior.explorer.param.update(**prior)
            except (ValueError, TypeError) as err:
                problems.append(f"prior settings refused: {err}")
        self._location = location
        if problems:
            self.notice = "Some settings in the link were refused: " + "; ".join(problems)
        self._update_location()

    def _refuse_oversize_link(self) -> list[str]:
        """Under a server's limits, put back the defaults of the link's settings that make the run too large (or
        read a folder outside the allowed ones); one message per refusal."""
        problems = []
        for _ in range(len(SIZE_KEYS) + 1):
            if self.limits is None:
                break
            try:
                self.limits.check(self.run_config())
                break
            except InvlabError as err:
                defaults = family_defaults(self.settings.model)
                reverted = []
                for key in getattr(err, "keys", []):
                    section, _, name = key.partition(".")
                    obj = self.settings.section(section)
                    if name not in obj.param:
                        continue
                    default = defaults[section].get(name, obj.param[name].default)
                    if getattr(obj, name) != default:
                        setattr(obj, name, default)
                        reverted.append(key)
                problems.append(str(err))
                if not reverted:
                    break
        return problems

    def sync_location(self, location) -> None:  # the name notebooks and older code use
        self.read_location(location)

    def _update_location(self) -> None:
        """Write the settings into the address bar (replacing the entry: the history is not flooded).

        Panel's Location defers browser-side URL writes until the document reports idle, which after a layout
        change may never come; a hidden field whose changes run `history.replaceState` does it at once."""
        if self._location is None:
            return
        query = self.settings.query_string()
        if getattr(self, "pages", None) is not None and self.pages.active == 3:  # the Compare page and its sweep
            extra = urlencode({"page": "compare", **self.compare.query()})
            query = f"{query}&{extra}" if query else f"?{extra}"
        self.url_field.value = query

    def close(self, wait: bool = True) -> None:
        """Stop training and the periodic callback (the browser session ended). With `wait=False` (what the server
        does) this returns at once and the training thread ends after its current step, closing the run store."""
        self._closed = True
        self._store_wanted = False
        self.feed.stop()
        self.session.stop(wait=wait)
        self.compare.close()

    # -- the tick: drain the session, feed the views -------------------------------------------------------------------
    def tick(self) -> None:
        if self._heartbeat is not None and self._heartbeat.silent():
            log.info("the notebook showing the explorer is gone: closing it")
            self.close()
            return
        try:
            update = self.feed.drain(self._start_new_run)
            if update.tunables is not None:
                self._show_learned(update.tunables)
            self._status_from_snapshot(self.feed.last_snapshot)
        except Exception as err:  # noqa: BLE001 — a drawing failure must not stop the periodic callback
            log.exception("dashboard update failed")
            self.notice = f"Could not update the page ({type(err).__name__}: {err}); training goes on."

    def _status_from_snapshot(self, snap) -> None:
        values = dict(step=self.session.step)
        if snap is not None:
            numerics = snap.numerics
            values.update(steps_per_sec=snap.steps_per_sec, device=snap.device, dtype=snap.dtype,
                          jitter=numerics.jitter, condition=numerics.condition, condition_of=numerics.condition_of)
        self.status.param.update(**values)
        self._status_from_session()

    def _start_new_run(self, update) -> None:
        old_config, new_config = self._current_config, update.config or self.session.config
        label = (describe_difference(old_config, new_config, changes=self._changes_during_run)
                 if old_config is not None else "previous run")
        self.curves.archive(label)
        self._current_config = RunConfig.from_json(new_config.to_json())  # the session's own changes as it runs
        self._changes_during_run = []
        self._run_started = True
        self.status.run = f"{new_config.model} on {new_config.data.get('dataset', 'digits')}"
        if update.config is not None and update.config.to_json() != self.run_config().to_json() \
                and update.run_label.startswith("stored run"):
            self._adopt(update.config)
        self.feed.last_snapshot = None  # the old run's figures and health say nothing about the new one
        self._rebuild_learned_controls()
        self._refresh_runs()

    def _adopt(self, config: RunConfig) -> None:
        """Show an opened run's settings in the controls (without asking for a Reset)."""
        self._applying_run_config = True
        try:
            self.settings.model = config.model
            for section, values in (("data", config.data), ("model", config.model_config), ("train", config.train)):
                obj = self.settings.section(section)
                obj.param.update(**{k: v for k, v in values.items() if k in obj.param and k != "name"})
            self._rebuild_model_controls()
        finally:
            self._applying_run_config = False
        self.notice = ""
        self._update_location()

    def _rebuild_learned_controls(self) -> None:
        trainer = self.session.trainer
        self.learned_controls = {}
        tunables = trainer.model.tunables() if trainer is not None and hasattr(trainer.model, "tunables") else []
        tunables = [t for t in tunables if t.group == "invariance"]
        if not tunables:
            family = self.session.config.model
            augmentation = self.session.config.model_config.get("augmentation")
            if augmentation is not None and trainer is not None:  # a finite orbit: say what it is
                kind = "image" if getattr(trainer.dataset, "image_shape", None) else "points"
                text = markdown_text(orbit_words(family, augmentation, kind))
            else:
                text = f"The **{markdown_text(family)}** family has no invariance ranges to set."
            self.invariance_group[:] = [pn.pane.Markdown(text)]
            return
        controls = []
        for tunable in tunables:
            ctl = LearnedValueControl(tunable, self._set_learned, self._freeze_learned)
            self.learned_controls[tunable.name] = ctl
            controls.append(ctl.panel)
        self.invariance_group[:] = controls

    def _set_learned(self, name, value):
        setting = {learnable: key for key, learnable in get_model(self.settings.model).live}.get(name)
        if setting is not None and setting in self.settings.model_config.param:
            # one quantity, one parameter: the config's value (the Model tab's box, the URL) is set, and setting it
            # applies it live (re-solving a finished solver)
            try:
                setattr(self.settings.model_config, setting, value)
            except ValueError as err:
                self.notice = str(err)
            return
        try:
            self.session.set_value(name, value)
            ctl = self.learned_controls.get(name)
            label = ctl.tunable.label if ctl is not None else name
            self.notice = f"{label} set to {value:g}" + (f" ({name})" if ctl is not None else "")
        except InvlabError as err:
            self.notice = str(err)

    def _freeze_learned(self, name, frozen):
        self.session.freeze(name, frozen)

    def _show_learned(self, tunables) -> None:
        values = {t.name: t.value for t in tunables}
        for name, ctl in self.learned_controls.items():
            if name in values:
                ctl.show(values[name])

    def _refresh_runs(self) -> None:
        if self.store is None:
            return
        try:
            runs = self.store.list_runs(limit=100)
        except InvlabError as err:
            self.notice = str(err)
            return
        except sqlite3.Error as err:
            self._store_problem(f"the run store {self.store.path} cannot be read ({type(err).__name__}: {err}); it "
                                "was left untouched: move it aside (or point INVLAB_DATA elsewhere) and restart the "
                                "server to start a new store")
            return
        by = (lambda r: f" ({r.owner})" if r.owner else "") if self.admin else (lambda r: "")
        def label(r) -> str:  # a watched loop's run by its own name first
            named = f"{r.name}: " if r.name else ""
            return f"#{r.id} {named}{r.model} on {r.dataset} — {r.status}, step {r.step}{by(r)}"

        self.runs_select.options = {label(r): r.id for r in runs}

    @param.depends("notice", watch=True)
    def _show_notice(self) -> None:
        self.notice_pane.object = markdown_text(self.notice)
        self.notice_pane.visible = bool(self.notice)

    def status_values(self) -> dict:
        """What the status bar shows, by name."""
        return {k: v for k, v in self.status.param.values().items() if k != "name"}
