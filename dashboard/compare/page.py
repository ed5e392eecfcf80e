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

from invlab.dashboard.compare.context import CompareContext
from invlab.dashboard.compare.discover import DiscoverStudy
from invlab.dashboard.compare.form import SweepForm
from invlab.dashboard.compare.live import SweepFollowing
from invlab.dashboard.compare.scheduler_choice import SchedulerChoice
from invlab.dashboard.notebook import display as notebook
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
    """Launch, follow and compare sweeps; open one of their runs on the Training page. Its parts share one
    `context` (a `CompareContext`: settings, store, where the runs train, tick) and ask the page for what only the
    page does through `param.Event`s it watches."""

    sweep_id = param.Integer(default=None, allow_None=True, doc="The sweep shown (its id in the run store).")
    state = param.Selector(default=StudyState.IDLE, objects=StudyState.values(),
                           doc="What the sweep shown is doing.")
    message = param.String(default="", doc="Progress, or what went wrong, in words.")
    discover_shown = param.Integer(default=None, allow_None=True, doc="The Discover study's sweep shown (its id).")

    def __init__(self, settings: RunSettings | None = None,
                 store: RunStore | Callable[[], RunStore | None] | None = None, *,
                 on_open_run: Callable[[int], None] | None = None, tick_ms: int = 1000,
                 data_choices: Callable[[], list[str]] | None = None, limits=None, user: str | None = None,
                 admin: bool = False, **params):
        """`store`: a RunStore, or a function giving one (the Explorer's, opened when first needed); `limits`: a
        server's `ServerLimits` (None in a notebook); `user` / `admin`: the page's logged-in user on a server with
        logins, and whether it is an admin (who may choose the Dask scheduler: scheduler_choice.py)."""
        super().__init__(**params)
        choice = SchedulerChoice(limits, logins=limits is not None and (user is not None or logins_on()), admin=admin)
        self.context = CompareContext(settings if settings is not None else RunSettings(), store, limits=limits,
                                      tick_ms=tick_ms, choice=choice)
        self.on_open_run = on_open_run
        if pn.state.curdoc is not None and not notebook.in_notebook():
            pn.extension("tabulator")  # a served page built without it (`pn.serve(Explorer)`) still draws the table
        self._layout = None  # the page's Column, once drawn
        self._active = False  # its contents are drawn (the tab has been shown)
        self.banner = pn.pane.Alert("", alert_type="info", visible=False, sizing_mode="stretch_width",
                                    css_classes=["invlab-lesson-banner"])  # a lesson's steps (set by the Explorer)
        self.form = SweepForm(self.context)
        self.following = SweepFollowing(self, self.context)
        self.discover = DiscoverStudy(self.context, data_choices=data_choices)
        self.form.param.watch(lambda *_: self.launch(self.form.spec), "launch")
        self.form.param.watch(lambda *_: self.open_sweep(self.form.sweep_to_open), "open")
        self.following.param.watch(lambda *_: self.resume(), "resume")
        self.discover.param.watch(lambda event: setattr(self, "discover_shown", event.new), "sweep_id")
        self.context.param.watch(lambda *_: self.open_run(self.context.run_to_open), "open_run")
        self.context.param.watch(lambda *_: self.refresh_sweeps(), "sweeps_changed")
        if self.context.store_ready:  # a store opened on demand is listed when the page is shown, not before
            self.refresh_sweeps()

    @property
    def store(self) -> RunStore | None:
        """The run store the page reads sweeps from and writes them to (`CompareContext.store`)."""
        return self.context.store

    # -- the form's and the sweep's (kept on the page for notebooks and tests) ----------------------------------------
    def parameter_options(self) -> dict[str, str]:
        """The settings a sweep can vary, labelled with their values now (`SweepForm.parameter_options`)."""
        return self.form.parameter_options()

    def refresh_parameters(self) -> None:
        """Follow the Training page's family and values (`SweepForm.refresh_parameters`)."""
        self.form.refresh_parameters()

    def refresh_sweeps(self) -> None:
        """Re-read the stored sweeps into the sweep selector (`SweepForm.refresh_sweeps`)."""
        self.form.refresh_sweeps(self.sweep_id)

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
        refused = self.context.busy()
        if refused:
            self.form.show_error(refused)
            return
        self.form.show_error("")
        limits = self.context.limits
        try:
            scheduler, shared = self.context.where_runs_train()
            planned = spec.runs()
            for run in planned if limits is not None else ():  # each run's data and size, as ▶ Start checks one
                limits.check(run.config)
        except InvlabError as err:
            self.form.show_error(str(err))
            return
        self.following.start(spec, planned, sweep_id, scheduler=scheduler, n_workers=self.context.n_workers or None,
                             shared=shared)

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
        try:
            record = self.following.open_sweep(sweep_id)
        except InvlabError as err:
            self.form.show_error(str(err))
            return
        if record is None:
            return
        self.form.show_error("")
        select = self.form.sweeps_select
        if int(sweep_id) in select.options.values():
            select.value = int(sweep_id)
        try:
            discover = is_discover(SweepSpec.from_json(record.spec))
        except InvlabError:
            discover = False
        if discover:
            self.discover.show(int(sweep_id))  # its ranking shows in the Discover study too

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
        return problems + ([self.form.form_error_text] if self.form.form_error.visible else [])

    def _read_discover(self, raw) -> list[str]:
        """`discover=ID` in the link shows that stored Discover study's ranking; returns what was refused."""
        if raw in (None, ""):
            return []
        try:
            sweep_id = parse_id(raw, "discover")
        except ConfigError as err:
            return [f"discover={shorten(str(raw))!r} refused: {err}"]
        self.activate()
        return [] if self.discover.show(sweep_id) else [self.discover.form.error_text]

    def query(self) -> dict[str, str]:
        """What this page puts in the link: `sweep=ID` once a sweep is open and `discover=ID` once a Discover study
        is shown, else nothing."""
        out = {"sweep": str(self.sweep_id)} if self.sweep_id is not None else {}
        if self.discover.sweep_id is not None:
            out["discover"] = str(self.discover.sweep_id)
        return out

    def busy(self) -> bool:
        """Whether a sweep launched from this page is running (the Discover study waits for it)."""
        return self.following.running()

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
                pn.pane.Markdown(SWEEPS, sizing_mode="stretch_width"), self.form, self.form.form_error, self.following]
