"""Explorer: the dashboard as one `pn.viewable.Viewer` that wires its parts together.

- `RunSettings` (`state.settings`): the family and its configs, the page's one source of truth, synced with the URL;
- `StatusBar` (`explorer.status`): what the run is doing, set at once by commands and filled in by the feed;
- `TrainingSession` (`session.training`): the training thread;
- `LiveFeed` (`explorer.feed`): the periodic tick that streams curves and views into the page, drained by the
  Explorer's own tick (`explorer.training`), which also sets the status from the session and starts each new run's
  display;
- `RunsTab` (`explorer.runs`, held as `runs`): the run store and the stored runs a page can open;
- the controls (`controls`), lesson cards (`lessons`), the family's prior page (`prior`), the Compare page for
  sweeps (`compare`).

The same object works under `panel serve`, in a notebook cell and with `pn.serve`.
"""
from __future__ import annotations

import panel as pn
import param

from invlab.dashboard.controls.learned import LearnedValueControl
from invlab.dashboard.explorer.feed import LiveFeed
from invlab.dashboard.explorer.layout import notice_html
from invlab.dashboard.explorer.location import PageLocation
from invlab.dashboard.explorer.page import ExplorerPage
from invlab.dashboard.explorer.status import StatusBar
from invlab.dashboard.explorer.training import TrainingDisplay
from invlab.dashboard.explorer.user_data import config_with_data
from invlab.dashboard.lessons.catalogue import compare_for_family, get_lesson
from invlab.dashboard.notebook import display as notebook
from invlab.dashboard.notebook.view import NotebookView
from invlab.dashboard.safe_text import markdown_text
from invlab.dashboard.session.training import TrainingSession
from invlab.dashboard.state.settings import RunSettings
from invlab.dashboard.views.watch import ViewWatcher
from invlab.errors import InvlabError
from invlab.models import get_model
from invlab.plugins import failure_lines
from invlab.train import RunConfig, RunStore
from invlab.train.states import PageState

# The page's updates (status line, curves, views) once a second: each costs the browser a layout of the page, and at
# twice a second Chromium took 0.09-0.13 of a core from a 2-core laptop's training threads (0.08 at once a second).
TICK_MS = 1000
RESOLVE_STEPS = 10  # L-BFGS steps (of up to 20 iterations each) run when a live value changes after a finished solve


class Explorer(TrainingDisplay, ExplorerPage, PageLocation, pn.viewable.Viewer):
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
        # store=True: the data directory's run store, opened when the page connects (or on first use), so a page
        # that never connects opens no file; the session closes it when it ends.
        self._store_given = store  # the Runs tab's (`RunsTab`): True opens the data directory's on first use
        self.limits = limits  # serving.ServerLimits under `invlab serve`; None: no limits (a notebook)
        self.user, self.admin = user, admin  # a server with logins: the page's user (its own runs only, unless admin)
        self.session = TrainingSession(self.settings.run_config(), store=None if store is True else (store or None),
                                       view_interval=view_interval, eval_interval=eval_interval, limits=limits)
        self.feed = LiveFeed(self.session, tick_ms=tick_ms)
        self.view_watch = ViewWatcher()  # which views the page has on screen: the others are not computed
        self.view_watch.param.watch(self._on_views_on_screen, "on_screen")
        self.status = StatusBar()
        self.learned_controls: dict[str, LearnedValueControl] = {}
        self._doc = None
        self._kernel_loop = None  # in a notebook: the kernel's event loop, which runs the ticks
        self._heartbeat = None  # set when shown in a notebook: the page's sign of life
        self._location = None
        self._applying_run_config = False
        self._reading_link = False  # True while a link's settings are applied one by one
        self._run_started = False
        # the notices this page posted that a later Start acts on (compared as the page posted them, never parsed)
        self._budget_notice: str | None = None  # "This run has finished its N steps: ..."
        self._reset_notice: str | None = None  # "Changed X: this needs a new model. Press Reset ..."
        self._current_config: RunConfig | None = None  # the configuration of the run the curves show, at its start
        self._changes_during_run: list[tuple[int, str, object]] = []  # (step, "train.learning_rate", value) set live
        self._closed = False
        self._closes_with = None  # the document whose end closes this explorer
        self.settings.on_change(self._on_settings_change)
        self.session.param.watch(self._on_session_state, ["state", "message", "tone"])
        # installed plugins are loaded with state.settings; one that failed is named in a note that stays
        self.plugin_note = pn.pane.Alert(markdown_text(" ".join(f"Note: {line}." for line in failure_lines())),
                                         alert_type="warning", visible=bool(failure_lines()),
                                         sizing_mode="stretch_width")
        self._build_widgets()
        self._status_from_settings()
        if run is not None:
            self.open_stored_run(int(run))

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
        done = self.session.state in (PageState.FINISHED, PageState.CONVERGED)
        if done and self.session.trainer.optimizer_name == "lbfgs":
            # a solver, not a trajectory: its answer for the new value is a few L-BFGS steps away, so give it
            self.session.resolve(RESOLVE_STEPS)
            self.notice += f"; re-solving ({RESOLVE_STEPS} L-BFGS steps)"

    def _structural_change(self, names) -> None:
        untrained = self.session.step == 0 and self.session.state in (PageState.IDLE, PageState.FAILED)
        if self.session.trainer is None or untrained:
            self.session.config = self.run_config()
            if self.session.trainer is not None:
                self.session.reset(self.run_config())
            self.notice = ""
        else:
            self.notice = self._reset_notice = (f"Changed {', '.join(sorted(set(names)))}: this needs a new model. "
                                                "Press Reset to apply (the current curves stay for comparison).")

    def _status_from_settings(self) -> None:
        if self.session.trainer is None and not self._run_started:
            self.status.run = f"{self.settings.model} on {self.settings.data.dataset}"
        self.status.param.update(learning_rate=self.settings.train.learning_rate, total=int(self.settings.train.steps))

    # -- commands: the status changes at once; the training thread follows --------------------------------------------
    def start(self, *_):
        """Start (or continue) training: the Start button. A new configuration is validated first; a refused one shows
        its message on the page."""
        self.store  # noqa: B018 — opened before the first run is built
        if self.notice == self._budget_notice:
            self.notice = ""  # said at the last Start; this one may train on (more steps)
        if self.session.trainer is None or self.session.config.to_json() != self.run_config().to_json() and \
                self.session.step == 0 and self.session.state in (PageState.IDLE, PageState.FAILED):
            try:
                config = self.run_config().validate()
            except InvlabError as err:
                self.status.param.update(state=PageState.FAILED, message=str(err), tone="error")
                return
            if not self._within_limits(config):
                return
            self.session.config = config
            if self.session.trainer is not None:
                self.session.reset(config)
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
        if self.notice == self._reset_notice:  # said once: Start does not add it again
            self.notice += " ▶ Start goes on with the current run and its settings until then."
            self._reset_notice = None
        self.session.start()

    def _within_limits(self, config: RunConfig) -> bool:
        """Refuse (in the status) a run larger than this server allows, before anything is built."""
        if self.limits is None:
            return True
        try:
            self.limits.check(config)
        except InvlabError as err:
            self.status.param.update(state=PageState.FAILED, message=str(err), tone="error")
            return False
        return True

    def pause(self, *_):
        """Pause training after the step in progress: the Pause button."""
        self.session.pause()
        if self.status.state in (PageState.RUNNING, PageState.COLLAPSED, PageState.STALLED, PageState.DIVERGING):
            self.status.param.update(state=PageState.PAUSING, message="", tone="info")  # "paused" once the step ends
        elif self.status.state in (PageState.QUEUED, PageState.BUILDING):
            self.status.param.update(state=PageState.PAUSED, message="", tone="info")

    def step(self, *_):
        """Take one training step and pause: the Step button."""
        self.store  # noqa: B018 — opened before the first run is built
        self.session.step_once()

    def reset(self, *_):
        """Build a new model from the page's settings, keeping the previous run's curves overlaid and labelled by what
        differed: the Reset button."""
        self.notice = ""
        try:
            config = self.run_config().validate()
        except InvlabError as err:
            self.notice = str(err)
            return
        if not self._within_limits(config):
            return
        self.store  # noqa: B018 — opened before the run is built
        self.status.param.update(state=PageState.BUILDING, step=0, message="", tone="info")
        self.session.reset(config)

    def save_checkpoint(self, *_):
        """Saved by the training thread between two steps; the status shows the path."""
        try:
            self.session.request_checkpoint()
            self.notice = ""
        except InvlabError as err:
            self.notice = str(err)

    def _repr_mimebundle_(self, include=None, exclude=None):
        """Display in a notebook: load what the page needs (offline too), and close when the page goes away
        (see invlab.dashboard.notebook.display)."""
        notebook.extension("tabulator")  # the Compare page's run table
        if self._heartbeat is None:
            self._heartbeat = notebook.Heartbeat()
        view = NotebookView(self._create_view(), self._heartbeat, sizing_mode="stretch_width", margin=0)
        bundle = view._repr_mimebundle_(include, exclude)
        for ref, entry in list(pn.state._views.items()):
            if entry[0] is view:
                notebook.track(self, ref)
        return bundle

    def close(self, wait: bool = True) -> None:
        """Stop training and the periodic callback (the browser session ended). With `wait=False` (what the server
        does) this returns at once and the training thread ends after its current step, closing the run store."""
        self._closed = True
        self.runs.close()
        self.feed.stop()
        self.session.stop(wait=wait)
        self.compare.close()

    @param.depends("presenter", watch=True)
    def _show_presenter(self) -> None:
        self._enlarge_parts()
        if getattr(self, "pages", None) is not None:
            self._show_lesson()
        self._update_location()

    @param.depends("notice", watch=True)
    def _show_notice(self) -> None:
        for pane in self.page_notices:
            pane.object = notice_html(self.notice)

    def status_values(self) -> dict:
        """What the status bar shows, by name."""
        return {k: v for k, v in self.status.param.values().items() if k != "name"}
