"""The Compare page itself: its state, its widgets, its layout, the link's `sweep=ID` and opening a run.

`ComparePage` combines the launch form (form.py) and the following and drawing of a sweep (live.py).
"""
from __future__ import annotations

from typing import Callable

import pandas as pd
import panel as pn
import param

from invlab.dashboard.compare.data import AxisData, field_name
from invlab.dashboard.compare.discover import DiscoverStudy
from invlab.dashboard.compare.form import SweepForm
from invlab.dashboard.compare.live import SweepFollowing
from invlab.dashboard.compare.plots import against_setting_plot, curves_plot
from invlab.dashboard.compare.runner import SweepRunner
from invlab.dashboard.notebook import display as notebook
from invlab.dashboard.state.settings import RunSettings
from invlab.errors import ConfigError
from invlab.ids import parse_id, shorten
from invlab.sweeps import STUDIES
from invlab.train import RunStore
from invlab.train.states import StudyState

INTRO = (
    "## Compare runs: the marginal likelihood chooses the invariance\n"
    "The ELBO over the whole training set is a lower bound on the log marginal likelihood: how well the model *as a "
    "whole*, its invariance included, explains the data, without looking at the test set (van der Wilk, Bauer, John "
    "& Hensman, \"Learning Invariances using the Marginal Likelihood\", 2018, arXiv:1808.05563). Higher is better. "
    "Runs are only compared when they share data, likelihood and estimator."
)
SWEEPS = (
    "### Sweeps: one setting changed\n"
    "Each run of a sweep fits the **same data** with one setting changed, over a few seeds. On digits rotated by up "
    "to ±90°, the ELBO against a fixed rotation range peaks near 90°, and a run that learns its range ends near "
    "there (the dashed line). The bars are ± one standard deviation over seeds. Click a run in the table to open it "
    "on the Training page."
)

LIVE_STATES = (StudyState.STARTING, StudyState.RUNNING, StudyState.STOPPING)


class ComparePage(SweepForm, SweepFollowing, pn.viewable.Viewer):
    """Launch, follow and compare sweeps; open one of their runs on the Training page."""

    sweep_id = param.Integer(default=None, allow_None=True, doc="The sweep shown (its id in the run store).")
    state = param.Selector(default=StudyState.IDLE, objects=StudyState.values(),
                           doc="What the sweep shown is doing.")
    message = param.String(default="", doc="Progress, or what went wrong, in words.")
    n_workers = param.Integer(default=0, bounds=(0, 64), doc="Dask workers on this machine (0: one per core).")
    scheduler = param.String(default="", doc="Address of a running Dask scheduler (empty: a cluster on this machine).")
    discover_shown = param.Integer(default=None, allow_None=True, doc="The Discover study's sweep shown (its id).")

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
                 on_open_run: Callable[[int], None] | None = None, tick_ms: int = 1000,
                 data_choices: Callable[[], list[str]] | None = None, limits=None, **params):
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
        self.limits = limits  # a server's ServerLimits: every page of the server shares one Dask cluster
        self.banner = pn.pane.Alert("", alert_type="info", visible=False, sizing_mode="stretch_width",
                                    css_classes=["invlab-lesson-banner"])  # a lesson's steps (set by the Explorer)
        self._build_widgets()
        self.discover = DiscoverStudy(self, data_choices=data_choices, limits=limits)
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
        problems = self._read_discover(query.get("discover"))
        raw = query.get("sweep")
        if raw in (None, ""):
            return problems
        try:
            sweep_id = parse_id(raw, "sweep")
        except ConfigError as err:
            return problems + [f"sweep={shorten(str(raw))!r} refused: {err}"]
        self.open_sweep(sweep_id)
        return problems + ([self.form_error_text] if self.form_error.visible else [])

    def _read_discover(self, raw) -> list[str]:
        """`discover=ID` in the link shows that stored Discover study's ranking; returns what was refused."""
        if raw in (None, ""):
            return []
        try:
            sweep_id = parse_id(raw, "discover")
        except ConfigError as err:
            return [f"discover={shorten(str(raw))!r} refused: {err}"]
        self.activate()
        return [] if self.discover.show(sweep_id) else [self.discover.error_text]

    def query(self) -> dict[str, str]:
        """What this page puts in the link: `sweep=ID` once a sweep is open and `discover=ID` once a Discover study
        is shown, else nothing."""
        out = {"sweep": str(self.sweep_id)} if self.sweep_id is not None else {}
        if self.discover.sweep_id is not None:
            out["discover"] = str(self.discover.sweep_id)
        return out

    @property
    def shared_cluster(self) -> bool:
        """Whether runs without a scheduler address go to the server's one shared cluster (`cluster.py`: under
        `invlab serve`) rather than a cluster of this page's own (a notebook)."""
        return self.limits is not None

    def busy(self) -> bool:
        """Whether a sweep launched from this page is running (the Discover study waits for it)."""
        return self.runner is not None and not self.runner.finished

    def discover_changed(self) -> None:
        """The Discover study shows another sweep: the link follows (the Explorer watches `discover_shown`)."""
        self.discover_shown = self.discover.sweep_id

    def close(self) -> None:
        """The browser session ended: stop following and stop the sweep (finished runs stay stored)."""
        self._stop_ticking()
        if self.runner is not None and not self.runner.finished:
            self.runner.stop()
        self.discover.close()

    # -- layout --------------------------------------------------------------------------------------------------------
    def __panel__(self):
        """The page: its introduction at once, the rest when the tab is first shown (`activate`), so a session that
        never opens it does not pay for drawing its table and plots."""
        if self._layout is None:
            self._layout = pn.Column(self.banner, pn.pane.Markdown(INTRO, sizing_mode="stretch_width"),
                                     sizing_mode="stretch_width", name="Compare")
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
        if self.shared_cluster:  # the server's cluster: its size is the server's, not a page's
            here = pn.pane.Markdown("Empty: this server's Dask cluster, one worker per core, shared by every page.",
                                    width=300, margin=(0, 10))
        else:
            here = self.workers
        where = pn.Column(pn.pane.Markdown("**Where the runs train**", margin=(0, 10)), here,
                          self.scheduler_input, name="Workers")
        launch = pn.FlexBox(vary, builtin, stored, where, sizing_mode="stretch_width")
        plots = pn.FlexBox(self.elbo_pane, self.error_pane, self.curves_pane, sizing_mode="stretch_width")
        return [self.banner, pn.pane.Markdown(INTRO, sizing_mode="stretch_width"), self.discover,
                pn.pane.Markdown(SWEEPS, sizing_mode="stretch_width"), launch, self.form_error,
                pn.Row(self.stop_button, self.resume_button, self.status_pane, sizing_mode="stretch_width"),
                self.not_comparable,
                self.table, plots]

