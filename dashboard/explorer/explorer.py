"""Explorer: the dashboard as one `pn.viewable.Viewer` that holds its parts and wires them together.

- `RunSettings` (`state.settings`): the family and its configs, the page's one source of truth, synced with the URL;
- `StatusBar` (`explorer.status`): what the run is doing, set at once by commands and filled in by the feed;
- `TrainingSession` (`session.training`): the training thread;
- `LiveFeed` (`explorer.feed`): the periodic tick that streams curves and views into the page;
- `RunDisplay` (`explorer.training`, held as `display`): drains the feed each tick, sets the status from the session
  and starts each new run's display;
- `SettingsChanges` (`explorer.changes`, held as `changes`): what a change of the settings does to the run;
- `PageLayout` (`explorer.page`, held as `page`): the widgets, the controls (`controls`), the lesson cards
  (`lessons`) and the page tabs;
- `PageLink` (`explorer.location`, held as `link`): the link in the address bar;
- `PageLifecycle` (`explorer.lifecycle`, held as `lifecycle`): connecting, closing with the page, theme hand-over;
- `RunsTab` (`explorer.runs`, held as `runs`): the run store and the stored runs a page can open;
- the family's prior page (`prior`), the Compare page for sweeps (`compare`).

The same object works under `panel serve`, in a notebook cell and with `pn.serve`.
"""
from __future__ import annotations

import panel as pn
import param

from invlab.dashboard.compare import ComparePage
from invlab.dashboard.controls.number_guard import NumberBoxGuard
from invlab.dashboard.explorer.changes import SettingsChanges
from invlab.dashboard.explorer.feed import LiveFeed
from invlab.dashboard.explorer.lifecycle import PageLifecycle
from invlab.dashboard.explorer.location import PageLink
from invlab.dashboard.explorer.page import PageLayout, curves_download, prior_page, run_buttons
from invlab.dashboard.explorer.runs import RunsTab
from invlab.dashboard.explorer.status import StatusBar
from invlab.dashboard.explorer.training import RunDisplay
from invlab.dashboard.explorer.user_data import config_with_data, data_choices
from invlab.dashboard.notebook import display as notebook
from invlab.dashboard.notebook.view import NotebookView
from invlab.dashboard.safe_text import markdown_text
from invlab.dashboard.serving.theme import ThemeSwitch
from invlab.dashboard.session.training import TrainingSession
from invlab.dashboard.state.settings import RunSettings
from invlab.dashboard.views.watch import ViewWatcher
from invlab.errors import InvlabError
from invlab.plugins import failure_lines
from invlab.train import RunConfig, RunStore
from invlab.train.states import PageState

# The page's updates (status line, curves, views) once a second: each costs the browser a layout of the page, and at
# twice a second Chromium took 0.09-0.13 of a core from a 2-core laptop's training threads (0.08 at once a second).
TICK_MS = 1000


class Explorer(pn.viewable.Viewer):
    """The lab in one object: controls, live training, curves and views, lessons, the prior page and Compare.

    `config`: the run to start from (default: the page's defaults, SVGP on digits). Your own data:
    `data=(X, y)` (X [N, D], or images [N, H, W] / [N, C, H, W]) or `data=df` with `target="column"`, or
    `dataset=` a built `invlab.data.Dataset`; it is handed over as 'python:NAME' and listed in the data box.
    `tick_ms`: how often the page is updated while training (the status line's step counter, the curves);
    clicks and state changes are shown at once, between ticks.
    `store`: True for the data directory's run store (opened when the page connects), a `RunStore`, or None.
    `limits`: a server's `ServerLimits` (None in a notebook); `user` / `admin`: the logged-in user on a server
    with logins. Display it in a notebook cell, or serve it with `pn.serve` / `panel serve`."""

    notice = param.String(default="", doc="Pending changes or the last action's outcome.")
    presenter = param.Boolean(default=False, doc="Presenter mode: the page drawn larger (fonts, lines, plots) for a "
                                                 "projector; `presenter=1` in a link.")

    def __init__(self, config: RunConfig | None = None, *, data=None, dataset=None, target: str | None = None,
                 store: RunStore | None | bool = True, tick_ms: int = TICK_MS, view_interval: float = 2.0,
                 eval_interval: float = 2.0, limits=None, user: str | None = None, admin: bool = False,
                 run: int | None = None, **params):
        """`run=ID`: open stored run ID at once (as Runs → Open run does); a run another process is writing, such as
        a loop under `invlab.train.watch`, is followed while it writes."""
        super().__init__(**params)
        # your own data: (X, y) or a DataFrame (target= its column to predict), or a built Dataset
        self.settings = RunSettings(config_with_data(config, data, dataset, target))
        self.limits = limits  # serving.ServerLimits under `invlab serve`; None: no limits (a notebook)
        self.user, self.admin = user, admin  # a server with logins: the page's user (its own runs only, unless admin)
        # store=True: the data directory's run store, opened when the page connects (or on first use, by the Runs
        # tab), so a page that never connects opens no file; the session closes it when it ends.
        self.session = TrainingSession(self.settings.run_config(), store=None if store is True else (store or None),
                                       view_interval=view_interval, eval_interval=eval_interval, limits=limits)
        self.feed = LiveFeed(self.session, tick_ms=tick_ms)
        self.view_watch = ViewWatcher()  # which views the page has on screen: the others are not computed
        self.view_watch.param.watch(self._on_views_on_screen, "on_screen")
        self.status = StatusBar()
        self._budget_notice: str | None = None  # "This run has finished its N steps: ..." (compared, never parsed)
        # installed plugins are loaded with state.settings; one that failed is named in a note that stays
        self.plugin_note = pn.pane.Alert(markdown_text(" ".join(f"Note: {line}." for line in failure_lines())),
                                         alert_type="warning", visible=bool(failure_lines()),
                                         sizing_mode="stretch_width")
        self._build_parts(store)
        self.display.status_from_settings()
        if run is not None:
            self.open_stored_run(int(run))

    def _build_parts(self, store) -> None:
        """The parts, each handed the parts it uses; a part that needs one built after it is handed a call to it."""
        say = self._say
        self.buttons = run_buttons(self.start, self.pause, self.step, self.reset, self.save_checkpoint)
        self.download = curves_download(self.curves)
        self.runs = RunsTab(self.session, self.status, store=store, user=self.user, admin=self.admin, say=say,
                            show_training=lambda: self.page.show_training(),
                            buttons=(self.buttons["save"], self.download))
        self.prior = prior_page()
        self.compare = ComparePage(self.settings, lambda: self.store, on_open_run=self.open_stored_run,
                                   data_choices=lambda: data_choices(self.limits), limits=self.limits,
                                   user=self.user, admin=self.admin)  # who may choose its Dask scheduler
        self.theme_switch = ThemeSwitch(lambda theme: self.lifecycle.switch_theme(theme))
        self.page = PageLayout(self.settings, self.session, self.status, self.feed, runs=self.runs,
                               compare=self.compare, prior=self.prior, buttons=self.buttons,
                               presenter_box=pn.widgets.Checkbox.from_param(self.param.presenter,
                                                                            label="presenter (larger page)"),
                               plugin_note=self.plugin_note, presenter=self.presenter, limits=self.limits,
                               on_page=lambda: self.link.update())
        self.link = PageLink(self.settings, self.session, page=self.page, compare=self.compare, prior=self.prior,
                             theme_switch=self.theme_switch, limits=self.limits, presenter=lambda: self.presenter,
                             set_presenter=lambda on: setattr(self, "presenter", on), say=say)
        self.display = RunDisplay(self.session, self.feed, self.status, self.settings, page=self.page,
                                  link=self.link, runs=self.runs, say=say, close=self.close)
        self.changes = SettingsChanges(self.settings, self.session, self.status, page=self.page, link=self.link,
                                       display=self.display, say=say)
        self.lifecycle = PageLifecycle(self, self.feed, display=self.display, link=self.link, runs=self.runs,
                                       compare=self.compare, page=self.page, theme_switch=self.theme_switch, say=say)

    def _say(self, text: str) -> None:
        self.notice = text

    @property
    def store(self) -> RunStore | None:
        """The page's run store (`RunsTab.store`): opened on first use; None without one."""
        return self.runs.store

    def open_stored_run(self, run_id: int) -> None:
        """Show stored run `run_id` on the Training page (`RunsTab.open`; a click on a run of the Compare page)."""
        self.runs.open(run_id)

    def _on_views_on_screen(self, event) -> None:
        self.session.views_shown = self.view_watch.names(self.feed.view_panes)

    # -- the page's state (kept as attributes for notebooks and tests) -------------------------------------------------
    @property
    def model(self) -> str:
        """The chosen model family's name (the page's Model family); settable."""
        return self.settings.model

    @model.setter
    def model(self, name: str) -> None:
        self.settings.model = name

    @property
    def data(self):
        """The data settings (a `DataConfig`: dataset, subset, rotation, ...); its parameters and the Data tab's widgets
        follow each other."""
        return self.settings.data

    @property
    def train(self):
        """The training settings (a `TrainConfig`: steps, learning rate, batch size, ...); `explorer.train.learning_rate
        = 0.02` moves the slider."""
        return self.settings.train

    @property
    def model_config(self):
        """The chosen model family's config object; its parameters and the Model tab's widgets follow each other."""
        return self.settings.model_config

    @property
    def curves(self):
        """The live training curves (ELBO, test error, ...) of the current run and the runs kept for comparison."""
        return self.feed.curves

    @property
    def view_panes(self):
        """The diagnostic panes by view name (spectrum, inducing inputs, hyper-parameters, ...), as drawn now."""
        return self.feed.view_panes

    def run_config(self) -> RunConfig:
        """The run configuration the page's settings describe now (model, data, model config, training)."""
        return self.settings.run_config()

    def to_query(self) -> str:
        """The configuration as it appears in the URL (only what differs from the defaults)."""
        return self.settings.query_string()

    # -- commands: the status changes at once; the training thread follows --------------------------------------------
    def start(self, *_):
        """Start (or continue) training: the Start button. A new configuration is validated first; a refused one shows
        its message on the page. A user's own loop's run (shown, not trained here) is refused: it would train this
        page's settings under that run."""
        self.store  # noqa: B018 — opened before the first run is built
        if self.display.refuse_own_loop():
            return
        if self.notice == self._budget_notice:
            self.notice = ""  # said at the last Start; this one may train on (more steps)
        if self.session.trainer is None or self.session.config.to_json() != self.run_config().to_json() and \
                self.session.step == 0 and self.session.state in (PageState.IDLE, PageState.FAILED):
            try:
                config = self.run_config().validate()
            except InvlabError as err:
                self.status.param.update(state=PageState.FAILED, message=str(err), tone="error")
                return
            if not self.display.within_limits(config, self.limits):
                return
            self.session.config = config
            if self.session.trainer is not None:
                self.session.commands.reset(config)
            self.status.param.update(state=PageState.BUILDING, message="", tone="info")
        elif self.session.state == PageState.FINISHED and self.session.trainer is not None \
                and self.session.step >= self.session.trainer.tc.steps:
            steps = self.session.trainer.tc.steps
            self.notice = self._budget_notice = (f"This run has finished its {steps} steps: raise Steps on the "
                                                 "Optimisation tab and press ▶ Start to train on, or press ↺ Reset "
                                                 "for a new run.")
            return
        elif self.status.state not in (PageState.FINISHED, PageState.CONVERGED):
            self.status.param.update(state=PageState.RUNNING, message="", tone="info")
        if self.notice == self.changes.reset_notice:  # said once: Start does not add it again
            self.notice += " ▶ Start goes on with the current run and its settings until then."
            self.changes.reset_notice = None
        self.session.commands.start()

    def pause(self, *_):
        """Pause training after the step in progress: the Pause button."""
        self.session.commands.pause()
        if self.status.state in (PageState.RUNNING, PageState.COLLAPSED, PageState.STALLED, PageState.DIVERGING):
            self.status.param.update(state=PageState.PAUSING, message="", tone="info")  # "paused" once the step ends
        elif self.status.state in (PageState.QUEUED, PageState.BUILDING):
            self.status.param.update(state=PageState.PAUSED, message="", tone="info")

    def step(self, *_):
        """Take one training step and pause: the Step button (refused, as Start is, on a user's own loop's run)."""
        self.store  # noqa: B018 — opened before the first run is built
        if not self.display.refuse_own_loop():
            self.session.commands.step_once()

    def reset(self, *_):
        """Build a new model from the page's settings, keeping the previous run's curves overlaid and labelled by what
        differed: the Reset button."""
        self.notice = ""
        try:
            config = self.run_config().validate()
        except InvlabError as err:
            self.notice = str(err)
            return
        if not self.display.within_limits(config, self.limits):
            return
        self.store  # noqa: B018 — opened before the run is built
        self.status.param.update(state=PageState.BUILDING, step=0, message="", tone="info")
        self.session.commands.reset(config)

    def save_checkpoint(self, *_):
        """Saved by the training thread between two steps; the status shows the path."""
        try:
            self.session.commands.request_checkpoint()
            self.notice = ""
        except InvlabError as err:
            self.notice = str(err)

    # -- the parts' own commands, kept on the Explorer ----------------------------------------------------------------
    def controls(self) -> pn.Tabs:
        """The control tabs (Data, Model, Invariance, Optimisation, Runs) (`PageLayout.controls`)."""
        return self.page.controls()

    def tick(self) -> None:
        """The periodic update: the training thread's new points and views into the page (`RunDisplay.tick`)."""
        self.display.tick()

    def read_location(self, location) -> None:
        """Take the configuration from the URL once, then keep the URL following the settings (`PageLink.read`)."""
        self.link.read(location)

    def sync_location(self, location) -> None:
        """`read_location` under the name notebooks and older code use."""
        self.link.read(location)

    def follow_run_in_link(self) -> None:
        """Put the run into the link when it changes (`PageLink.follow_run`); each tick."""
        self.link.follow_run()

    def resume_page(self) -> None:
        """Be shown again on a new page (the reload of a theme change) (`PageLifecycle.resume_page`)."""
        self.lifecycle.resume_page()

    def __panel__(self) -> pn.Column:
        location = pn.state.location
        if location is not None and self.link.location is None:
            self.link.read(location)  # before anything is drawn: the link's family and controls
        pages = self.page.__panel__()
        pn.state.onload(self.lifecycle.on_load)
        if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
            # Also for a page that never connects (Bokeh ends it after --unused-session-lifetime): whatever it
            # holds goes with it.
            self.lifecycle.close_with(pn.state.curdoc)
        hidden = pn.Column(self.link.url_field, self.theme_switch.field, NumberBoxGuard(width=0, height=0, margin=0),
                           self.view_watch, height=0, margin=0)
        return pn.Column(hidden, pages, sizing_mode="stretch_width", margin=0)

    def _repr_mimebundle_(self, include=None, exclude=None):
        """Display in a notebook: load what the page needs (offline too), and close when the page goes away
        (see invlab.dashboard.notebook.display)."""
        notebook.extension("tabulator")  # the Compare page's run table
        if self.display.heartbeat is None:
            self.display.heartbeat = notebook.Heartbeat()
        view = NotebookView(self._create_view(), self.display.heartbeat, sizing_mode="stretch_width", margin=0)
        bundle = view._repr_mimebundle_(include, exclude)
        for ref, entry in list(pn.state._views.items()):
            if entry[0] is view:
                notebook.track(self, ref)
        return bundle

    def close(self, wait: bool = True) -> None:
        """Stop training and the periodic callback (the browser session ended). With `wait=False` (what the server
        does) this returns at once and the training thread ends after its current step, closing the run store."""
        self.lifecycle.closed = True
        self.runs.close()
        self.feed.stop()
        self.session.stop(wait=wait)
        self.compare.close()

    @param.depends("presenter", watch=True)
    def _show_presenter(self) -> None:
        self.page.show_presenter(self.presenter)
        self.link.update()

    @param.depends("notice", watch=True)
    def _show_notice(self) -> None:
        self.page.show_notice(self.notice)

    def status_values(self) -> dict:
        """What the status bar shows, by name."""
        return {k: v for k, v in self.status.param.values().items() if k != "name"}
