"""The Compare page itself: its state, its layout, launching and resuming a sweep, the link's `sweep=ID` and opening
a run.

`ComparePage` holds its parts, each handed what it uses: the launch form (`SweepForm`, form.py, held as `form`), the
sweep it follows and draws (`SweepFollowing`, live.py, held as `following`) and the Discover study
(`DiscoverStudy`, discover.py, held as `discover`).
"""
from __future__ import annotations

from typing import Callable

import panel as pn
import param

from invlab.dashboard.compare.discover import DiscoverStudy
from invlab.dashboard.compare.form import SweepForm
from invlab.dashboard.compare.live import SweepFollowing
from invlab.dashboard.compare.scheduler_choice import SchedulerChoice, SchedulerRefused
from invlab.dashboard.notebook import display as notebook
from invlab.dashboard.parts import PartAttribute
from invlab.dashboard.serving.identity import logins_on
from invlab.dashboard.state.settings import RunSettings
from invlab.errors import ConfigError, InvlabError
from invlab.ids import parse_id, shorten
from invlab.sweeps import SweepSpec
from invlab.sweeps.discover_report import is_discover
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


class ComparePage(pn.viewable.Viewer):
    """Launch, follow and compare sweeps; open one of their runs on the Training page."""

    sweep_id = param.Integer(default=None, allow_None=True, doc="The sweep shown (its id in the run store).")
    state = param.Selector(default=StudyState.IDLE, objects=StudyState.values(),
                           doc="What the sweep shown is doing.")
    message = param.String(default="", doc="Progress, or what went wrong, in words.")
    n_workers = param.Integer(default=0, bounds=(0, 64), doc="Dask workers on this machine (0: one per core).")
    scheduler = param.String(default="", doc="Address of a running Dask scheduler (empty: a cluster on this machine, "
                                             "or the server's); on a server, only where `scheduler_choice` allows.")
    discover_shown = param.Integer(default=None, allow_None=True, doc="The Discover study's sweep shown (its id).")

    # the parts' widgets and state, reached from the page as before (notebooks, tests)
    parameter = PartAttribute("form", "The setting to vary (its dotted name).")
    values = PartAttribute("form", "The values to try, as typed (comma-separated).")
    seeds = PartAttribute("form", "Seeds per value.")
    launch_button = PartAttribute("form", "▶ Run sweep.")
    study_select = PartAttribute("form", "The built-in study to run.")
    quick = PartAttribute("form", "Run the built-in study's short form.")
    study_button = PartAttribute("form", "▶ Run study.")
    sweeps_select = PartAttribute("form", "The stored sweeps a page can open.")
    open_button = PartAttribute("form", "Open sweep.")
    workers = PartAttribute("form", "The Workers box (follows `n_workers`).")
    scheduler_input = PartAttribute("form", "The Dask scheduler box (follows `scheduler`).")
    form_error = PartAttribute("form", "What is wrong with the form, under it.")
    form_error_text = PartAttribute("form", "What `form_error` says, as text.")
    runner = PartAttribute("following", "The `SweepRunner` of the sweep launched last; None before one or once a "
                                        "stored sweep is opened.")
    cmp = PartAttribute("following", "The latest comparison of the sweep shown, read from the store.")
    axes = PartAttribute("following", "The settings the sweep shown varies (dotted names).")
    axis_data = PartAttribute("following", "The plots' values (an `AxisData`), once drawn.")
    stop_button = PartAttribute("following", "■ Stop.")
    resume_button = PartAttribute("following", "▶ Resume: run the sweep's missing runs.")
    status_pane = PartAttribute("following", "The status line: the sweep's state, its id and the message.")
    not_comparable = PartAttribute("following", "Says why the runs are not compared on one axis.")
    table = PartAttribute("following", "The sweep's runs, one row each.")
    elbo_pane = PartAttribute("following", "The ELBO against the varied setting.")
    error_pane = PartAttribute("following", "The test error against the varied setting.")
    curves_pane = PartAttribute("following", "The ELBO curves of the sweep's runs.")
    tick_ms = PartAttribute("following", "How often a running sweep is drawn (ms).")

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
                 data_choices: Callable[[], list[str]] | None = None, limits=None, user: str | None = None,
                 admin: bool = False, **params):
        """`limits`: a server's `ServerLimits` (None in a notebook); `user` / `admin`: the page's logged-in user on a
        server with logins, and whether it is an admin (who may choose the Dask scheduler: scheduler_choice.py)."""
        super().__init__(**params)
        self.settings = settings if settings is not None else RunSettings()
        self.store = store  # a RunStore, or a function giving one (the Explorer's, opened when first needed)
        self.on_open_run = on_open_run
        if pn.state.curdoc is not None and not notebook.in_notebook():
            pn.extension("tabulator")  # a served page built without it (`pn.serve(Explorer)`) still draws the table
        self.limits = limits  # a server's ServerLimits: every page of the server shares one Dask cluster
        self.scheduler_choice = SchedulerChoice(limits, logins=limits is not None and (user is not None or logins_on()),
                                                admin=admin)
        self.scheduler = self.scheduler_choice.server_address or self.scheduler  # the box shows the server's
        self._layout = None  # the page's Column, once drawn
        self._active = False  # its contents are drawn (the tab has been shown)
        self.banner = pn.pane.Alert("", alert_type="info", visible=False, sizing_mode="stretch_width",
                                    css_classes=["invlab-lesson-banner"])  # a lesson's steps (set by the Explorer)
        self.form = SweepForm(self.settings, lambda: self.store, where=(self.param.n_workers, self.param.scheduler),
                              shared_cluster=self.shared_cluster, shown=lambda: self.sweep_id, say=self._say,
                              launch=self.launch, open_sweep=self.open_sweep, choice=self.scheduler_choice)
        self.following = SweepFollowing(self, lambda: self.store, tick_ms=tick_ms, open_run=self.open_run,
                                        resume=self.resume, show_error=self.form.show_error,
                                        refresh_sweeps=self.form.refresh_sweeps)
        if not callable(self._store):  # a store opened on demand is listed when the page is shown, not before
            self.refresh_sweeps()
        self.discover = DiscoverStudy(self, data_choices=data_choices, limits=limits)

    def _say(self, text: str) -> None:
        self.message = text

    # -- the form's and the sweep's (kept on the page for notebooks and tests) ----------------------------------------
    def parameter_options(self) -> dict[str, str]:
        """The settings a sweep can vary, labelled with their values now (`SweepForm.parameter_options`)."""
        return self.form.parameter_options()

    def refresh_parameters(self) -> None:
        """Follow the Training page's family and values (`SweepForm.refresh_parameters`)."""
        self.form.refresh_parameters()

    def refresh_sweeps(self) -> None:
        """Re-read the stored sweeps into the sweep selector (`SweepForm.refresh_sweeps`)."""
        self.form.refresh_sweeps()

    def spec_from_settings(self, dotted: str | None = None, values: str | list | None = None,
                           seeds: int | None = None) -> SweepSpec:
        """The sweep the form describes (`SweepForm.spec_from_settings`). Raises InvlabError naming what is wrong."""
        return self.form.spec_from_settings(dotted, values, seeds)

    def launch_from_settings(self) -> None:
        """Start the sweep the form describes (`SweepForm.launch_from_settings`)."""
        self.form.launch_from_settings()

    def launch_study(self, name: str, quick: bool = True) -> None:
        """Start the built-in study `name`, `quick`: its short form (`SweepForm.launch_study`)."""
        self.form.launch_study(name, quick=quick)

    def stop(self) -> None:
        """Stop the running sweep; finished runs stay stored and Resume runs the rest (`SweepFollowing.stop`)."""
        self.following.stop()

    def tick(self) -> None:
        """The periodic update of a running sweep (`SweepFollowing.tick`)."""
        self.following.tick()

    def refresh(self) -> None:
        """Read the sweep's comparison from the store and redraw the table and plots (`SweepFollowing.refresh`)."""
        self.following.refresh()

    def rows(self):
        """The table: one row per run, stored or planned, in the sweep's order (`SweepFollowing.rows`)."""
        return self.following.rows()

    # -- launching, resuming and opening a sweep -----------------------------------------------------------------------
    def launch(self, spec: SweepSpec, sweep_id: int | None = None) -> None:
        """Run `spec` (or resume sweep `sweep_id`) on a background thread; the page follows it."""
        if self.store is None:
            self.form.show_error("this page has no run store to keep the sweep's runs in")
            return
        if self.busy():
            self.form.show_error("a sweep is running: stop it first (■ Stop), or wait for it to finish")
            return
        if self.discover.running():
            self.form.show_error("the Discover study is running: ■ Stop discover first, or wait for it to finish")
            return
        self.form.show_error("")
        try:
            scheduler, shared = self.where_runs_train()
            planned = spec.runs()
            for run in planned if self.limits is not None else ():  # each run's data and size, as ▶ Start checks one
                self.limits.check(run.config)
        except InvlabError as err:
            self.form.show_error(str(err))
            return
        self.following.start(spec, planned, sweep_id, scheduler=scheduler, n_workers=self.n_workers or None,
                             shared=shared)

    def where_runs_train(self) -> tuple[str | None, bool]:
        """(the Dask scheduler address the page's runs go to, or None; whether to the server's shared cluster), by
        `scheduler_choice`'s rule. An address the page may not choose raises SchedulerRefused, said beside the box,
        before anything contacts it."""
        try:
            where = self.scheduler_choice.resolve(self.scheduler)
        except SchedulerRefused as err:
            self.form.show_scheduler_refusal(str(err))
            raise
        self.form.show_scheduler_refusal("")
        return where

    def resume(self, sweep_id: int | None = None) -> None:
        """Run the missing runs of stored sweep `sweep_id` (default: the one shown), on the page."""
        sweep_id = self.sweep_id if sweep_id is None else int(sweep_id)
        if sweep_id is None or self.store is None:
            self.form.show_error("open a stored sweep first")
            return
        try:
            spec = SweepSpec.from_json(self.store.sweeps.get(sweep_id).spec)
        except InvlabError as err:
            self.form.show_error(str(err))
            return
        self.launch(spec, sweep_id=sweep_id)

    def open_sweep(self, sweep_id: int) -> None:
        """Show stored sweep `sweep_id` (a running sweep on this page keeps running in the background); a Discover
        study's ranking shows in the Discover study too."""
        record = self.following.open_sweep(sweep_id)
        if record is None:
            return
        if int(sweep_id) in self.sweeps_select.options.values():
            self.sweeps_select.value = int(sweep_id)
        try:
            discover = is_discover(SweepSpec.from_json(record.spec))
        except InvlabError:
            discover = False
        if discover and self.discover.show(int(sweep_id)):
            self.discover_changed()  # its ranking shows in the Discover study too

    # -- opening a run -------------------------------------------------------------------------------------------------
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
        `invlab serve` without --scheduler) rather than a cluster of this page's own (a notebook)."""
        return self.limits is not None and not self.scheduler_choice.server_address

    def busy(self) -> bool:
        """Whether a sweep launched from this page is running (the Discover study waits for it)."""
        return self.following.running()

    def discover_changed(self) -> None:
        """The Discover study shows another sweep: the link follows (the Explorer watches `discover_shown`)."""
        self.discover_shown = self.discover.sweep_id

    def close(self) -> None:
        """The browser session ended: stop following and stop the sweep (finished runs stay stored)."""
        self.following.close()
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
        return [self.banner, pn.pane.Markdown(INTRO, sizing_mode="stretch_width"), self.discover,
                pn.pane.Markdown(SWEEPS, sizing_mode="stretch_width"), self.form, self.form_error, self.following]
