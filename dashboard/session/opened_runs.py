"""The training thread's side of a stored run opened on the page (`TrainingSession.open_run`): its settings and curves,
continued from its latest checkpoint, or, while another process still trains it, followed as that process writes it,
with that run's health verdict in the message. A run a user's own loop wrote (`invlab.train.watch`) is shown as that
loop's (`OwnLoop`): the page cannot continue it. The session holds it as `session.opened`; its thread runs these
methods."""
from __future__ import annotations

import weakref
from collections.abc import Callable

from invlab.dashboard.session.follow import RunFollower, gaps_as_nan
from invlab.dashboard.session.own_loop import OwnLoop
from invlab.errors import InvlabError
from invlab.train import RunConfig, RunStore, Trainer
from invlab.train.checkpoint import load_checkpoint
from invlab.train.health import Health
from invlab.train.states import HealthState, PageState, RunStatus
from invlab.train.store import RunStoreError

SESSIONS: "weakref.WeakSet" = weakref.WeakSet()  # this process's sessions that have shown a run (`_begin_run`)


def trained_by_another_page(session, run_id: int) -> bool:
    """Whether another page's session in this process trains stored run `run_id` of the same store (a second tab
    on it)."""
    path = getattr(session.store, "path", None)
    return any(other is not session and other.trainer is not None and other.run_id == run_id
               and getattr(other.store, "path", None) == path for other in list(SESSIONS))


class OpenedRuns:
    """Opening and following stored runs, for a `TrainingSession` (see the module's doc). It holds the run another
    process writes that the session follows (`following`, a `RunFollower`), that run's health verdict
    (`followed_health`) and the metrics an opened run drops when it is continued (`truncate_on_start`).

    What it uses of the `session` (which it also tells apart from this process's other sessions on a run):
    `store()`, `limits()`, `trainer()`, `config()` and `step()` are the session's now; `adopt(config, trainer)` makes
    a run the session's; `set_state(**values)` sets its state, step, message and tone; `begin_run(label, config,
    history, layout=None)` starts a run's curves (`layout`: its metric names, when not the family's);
    `publish(force_views=)` hands its trainer's new points (and views) to the page;
    `add_points(new)` adds a followed run's new points and `show_views(snapshot)` its views."""

    def __init__(self, session, *, store: Callable[[], RunStore | None], limits: Callable[[], object],
                 trainer: Callable[[], Trainer | None], config: Callable[[], RunConfig], step: Callable[[], int],
                 adopt: Callable[[RunConfig, Trainer | None], None], set_state: Callable[..., None],
                 begin_run: Callable[..., None], publish: Callable[..., None], add_points: Callable[[dict], None],
                 show_views: Callable[[object], None]):
        self.session = session
        self._store, self._limits, self._trainer, self._config, self._step = store, limits, trainer, config, step
        self._adopt, self._set, self._begin_run, self._publish = adopt, set_state, begin_run, publish
        self._add_points, self._show_stored_views = add_points, show_views
        self.truncate_on_start: tuple[int, int] | None = None  # an opened run: drop its metrics past the checkpoint
        self.following: RunFollower | None = None  # an opened run another process writes
        self.followed_health: Health | None = None  # that run's health verdict from what it stored, while it runs
        self.own_loop: OwnLoop | None = None  # the last run opened, when a user's own loop wrote it

    def shown_loop(self) -> OwnLoop | None:
        """The watched loop's run the page shows (opened, not replaced by a run built here since), or None."""
        return self.own_loop if self._trainer() is None else None

    @property
    def store(self) -> RunStore | None:
        """The session's run store (None without one)."""
        return self._store()

    @property
    def limits(self):
        """The server's limits every model is checked against first (None: no limits)."""
        return self._limits()

    @property
    def run_id(self) -> int | None:
        """The stored run this session shows: the one it trains or opened, or the one another process writes that it
        follows; None before a run is built or without a store."""
        trainer, following = self._trainer(), self.following
        if trainer is not None and trainer.run_id is not None:
            return int(trainer.run_id)
        return following.run_id if following is not None else None

    def claim_or_follow(self, trainer) -> bool:
        """Claim `trainer`'s stored run for this page (`Trainer.claim`); whether it may train. While another page of
        this server trains the run (a second tab on it, or another user of a class server), this page follows that
        run instead, saying so, and False is returned; a refusal for another reason (a process outside this server)
        is raised, with that process named."""
        try:
            trainer.claim()
            return True
        except RunStoreError:
            run_id = trainer.run_id
            if run_id is None or not trained_by_another_page(self.session, int(run_id)):
                raise
        # its live writer is followed: its points drawn here as that page trains it; the page's message says why in
        # one update (two would show the plain 'opened' message for a moment before it)
        self.open(int(run_id), lead=f"▶ Start did not train run {run_id} here: ")
        return False

    def open(self, run_id: int, *, lead: str = "") -> None:
        """Show a stored run: its settings and curves; continue from its latest checkpoint if it has one. `lead`
        begins the message that says so when another writer trains the run (why this page follows it).

        Nothing stored is changed by opening: metrics logged after the checkpoint are dropped only when the
        user continues training (they would be replaced by the new steps)."""
        if self.store is None:
            raise InvlabError("this session has no run store to open runs from")
        self._set(state=PageState.BUILDING, message="", tone="info")
        self.own_loop = None
        record = self.store.runs.get(run_id)
        config = RunConfig.from_json(record.config)
        loop = OwnLoop.of(record, config)
        if self.limits is not None:
            self.limits.check(config)
        history = self.store.metrics.read(run_id)
        writer = self.store.leases.live_writer(run_id)  # another process trains it: two writers would garble the run
        latest = None if writer else self.store.checkpoints.latest(run_id)
        if latest is None:
            self._adopt(config, None)
            if writer:  # its points are drawn as that process writes them (`_follow`)
                self.following, self.followed_health = RunFollower(self.store, run_id), None
                history, _ = self.following.read()
            self.own_loop = loop
            own = {} if loop is None else {"layout": OwnLoop.layout(history)}  # only the metrics the loop logged
            self._begin_run(f"stored run {run_id}", config, gaps_as_nan(history), **own)
            self._show_stored_views((self.following or RunFollower(self.store, run_id)).read_views(record))
            self._set(state=PageState.IDLE, step=record.step, tone="info",
                      message=self._shown_only(record, loop, writer, lead))
            if writer:  # judged on what it stored so far, not only once new points arrive
                self.judge_followed()
            return
        step, path = latest
        trainer = Trainer(config, store=self.store, run_id=run_id)
        trainer.load_state(load_checkpoint(path, map_location=trainer.device))
        for name, (steps, values) in history.items():
            kept = [i for i, s in enumerate(steps) if s <= step]
            trainer.history[name] = ([steps[i] for i in kept], [values[i] for i in kept])
        if hasattr(trainer.model, "restore_history"):  # e.g. the learned ranges over training
            trainer.model.restore_history(trainer.history, step)
        self._adopt(config, trainer)
        self.truncate_on_start = (run_id, step) if record.step > step else None
        self._begin_run(f"stored run {run_id}", config)
        done = step >= trainer.tc.steps
        message = f"opened stored run {run_id} at step {step}" + ("" if done else "; Start continues it")
        if record.step > step:  # say what continuing costs: the steps after the checkpoint were never saved
            message += (f" — its last checkpoint is at step {step}, so the {record.step - step} steps after it (to "
                        f"step {record.step}) cannot be continued; Start replaces them")
        self._set(state=PageState.FINISHED if done else PageState.PAUSED, step=step, tone="info", message=message)
        self._publish(force_views=True)

    def _shown_only(self, record, loop: OwnLoop | None, writer: str | None, lead: str) -> str:
        """What the page says of stored run `record`, opened without a checkpoint to continue from: `loop` wrote it
        (None: the lab trained it), `writer` still writes it (None: nothing does)."""
        if loop is not None:
            return loop.followed(lead, writer) if writer else loop.opened(record.status, record.step)
        if writer and trained_by_another_page(self.session, record.id):
            why = ("another page of this server is training it (another tab, or another user on a class server); "
                   "its new points are drawn here as it writes them, and it is not continued here")
        elif writer:
            why = (f"it is still being trained by another process ({writer}), whose new points are drawn as it "
                   "writes them; it is not continued here")
        else:
            why = "it has no checkpoint to continue from"
        return (f"{lead}opened stored run {record.id} ({record.status} at step {record.step}): its curves are "
                f"shown; {why}, so Start trains a new run with its settings")

    def follow(self) -> None:
        """Draw the points another process wrote to the run this page follows since the last look; when that
        process has stopped writing it, say how the run ended and stop following."""
        try:
            new, record = self.following.read()
            views = self.following.read_views(record)
        except InvlabError as err:
            self.following = self.followed_health = None
            self._set(message=str(err), tone="error")
            return
        self._add_points(new)
        self._show_stored_views(views)
        if record.status != RunStatus.RUNNING:
            self.following = self.followed_health = None
            ended = f" ({record.message})" if record.message else ""
            loop = self.shown_loop()
            message = (loop.ended(record.status, record.step, record.message or "") if loop is not None else
                       f"stored run {record.id} is now {record.status} at step {record.step}{ended}; its curves are "
                       "shown, and Start trains a new run with its settings")
            self._set(step=record.step, tone="error" if record.status == RunStatus.FAILED else "info", message=message)
        else:
            if new:  # judged again only when points arrived
                self.judge_followed()
            if record.step != self._step():
                self._set(step=record.step)

    def judge_followed(self) -> None:
        """Put the followed run's health verdict (`followed_health`) in the message while it is not ok."""
        health = self.following.health(self._config())
        if health == self.followed_health:
            return
        was_bad = (self.followed_health is not None
                   and self.followed_health.state not in (HealthState.OK, HealthState.CONVERGED))
        self.followed_health = health
        run_id = self.following.run_id
        if health.state not in (HealthState.OK, HealthState.CONVERGED):
            self._set(tone="error" if health.state == HealthState.COLLAPSED else "warning",
                      message=f"stored run {run_id}, trained by another process, is {health.state}: {health.hint}")
        elif was_bad:  # it recovered: the warning goes
            self._set(tone="info", message=f"stored run {run_id} is trained by another process, whose new points are "
                                           "drawn as it writes them; its training looks healthy again")
