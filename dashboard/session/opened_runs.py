"""A stored run opened on the page (`?run=ID`, the Runs tab's Open run): its settings and curves, continued from its
newest checkpoint that loads by the engine's one road (`invlab.train.opening.open_run`, the one `invlab train
--resume` takes: checkpoints that do not load are named, and ▶ Start claims the run and drops what it stored past
the checkpoint), or, while another process still trains it, followed as that process writes it, with that run's
health verdict in the message. A run a user's own loop wrote (`invlab.train.watch`) is shown as that loop's
(`OwnLoop`): the page cannot continue it.

`OpenedRuns` (the session's `opened`) does this on the training thread and hands back what the page is to show, a
`Shown`, which the session adopts (`TrainingSession._adopt`); it never calls back into the session."""
from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

from invlab.dashboard.session.follow import RunFollower, gaps_as_nan
from invlab.dashboard.session.own_loop import OwnLoop
from invlab.dashboard.state_words import state_tone
from invlab.errors import InvlabError
from invlab.train import RunConfig, RunStore, Trainer
from invlab.train.evaluation import Snapshot
from invlab.train.health import Health
from invlab.train.opening import OpenedRun, open_run
from invlab.train.states import HealthState, PageState, RunStatus
from invlab.train.store import RunStoreError

SESSIONS: "weakref.WeakSet" = weakref.WeakSet()  # this process's sessions that have shown a run (`_begin_run`)
HEALTHY = (HealthState.OK, HealthState.CONVERGED)


@dataclass
class Shown:
    """What the page shows next, from opening or following a stored run, for the session to adopt: with `label`, a
    new run's curves (`config`, `trainer`: the run the session now holds, None when it is shown and not continued;
    `history` and `layout` its stored curves, None: the trainer's and the family's); `points` a followed run's new
    points; `views` its stored views; `values` the session's state, step, message and tone to set; `publish`: hand
    the trainer's points and views to the page."""

    label: str | None = None
    config: RunConfig | None = None
    trainer: Trainer | None = None
    history: dict | None = None
    layout: tuple[str, ...] | None = None
    points: dict = field(default_factory=dict)
    views: Snapshot | None = None
    values: dict = field(default_factory=dict)
    publish: bool = False


def trained_by_another_page(opened: "OpenedRuns", run_id: int) -> bool:
    """Whether another page's session in this process trains stored run `run_id` of the same store as `opened`'s
    session (a second tab on it)."""
    path = getattr(opened.store, "path", None)
    return any(other.opened is not opened and other.trainer is not None and other.opened.run_id == run_id
               and getattr(other.store, "path", None) == path for other in list(SESSIONS))


class OpenedRuns:
    """Opening and following stored runs for a `TrainingSession` (see the module's doc). It is handed the session's
    run `store` (None: none), the server's `limits` (None: none) and `trainer()`, the run the session holds now. It
    holds the run it opened to continue (`continued`, an `OpenedRun`, claimed at ▶ Start), the run another process
    writes that the page follows (`following`, a `RunFollower`, with its `followed_config`) and that run's health
    verdict (`followed_health`)."""

    def __init__(self, store: RunStore | None, limits=None, *, trainer: Callable[[], Trainer | None]):
        self.store, self.limits, self._trainer = store, limits, trainer
        self.continued: OpenedRun | None = None  # the opened run the session's trainer continues, until claimed
        self.following: RunFollower | None = None  # an opened run another process writes
        self.followed_config: RunConfig | None = None  # its settings
        self.followed_health: Health | None = None  # its health verdict from what it stored, while it runs
        self.own_loop: OwnLoop | None = None  # the last run opened, when a user's own loop wrote it

    def shown_loop(self) -> OwnLoop | None:
        """The watched loop's run the page shows (opened, not replaced by a run built here since), or None."""
        return self.own_loop if self._trainer() is None else None

    @property
    def run_id(self) -> int | None:
        """The stored run this session shows: the one it trains or opened, or the one another process writes that it
        follows; None before a run is built or without a store."""
        trainer, following = self._trainer(), self.following
        if trainer is not None and trainer.record.run_id is not None:
            return int(trainer.record.run_id)
        return following.run_id if following is not None else None

    def stop_following(self) -> None:
        """Any command ends following a run another process writes."""
        self.following = self.followed_health = None

    def claim(self, trainer: Trainer) -> Shown | None:
        """Claim `trainer`'s stored run for this page, before it trains: None when it may train (an opened run's
        metrics and views past its checkpoint are dropped now, as `invlab train --resume` does). While another page
        of this server trains the run (a second tab on it, or another user of a class server), this page follows
        that run instead and what to show is returned, saying so; a refusal for another reason (a process outside
        this server) is raised, with that process named."""
        continued = self.continued
        try:
            if continued is not None and continued.trainer is trainer:
                continued.claim()
            else:
                trainer.record.claim()
            self.continued = None
            return None
        except RunStoreError:
            run_id = trainer.record.run_id
            if run_id is None or not trained_by_another_page(self, int(run_id)):
                raise
        # its live writer is followed: its points drawn here as that page trains it; the message says why in one
        # update (two would show the plain 'opened' message for a moment before it)
        return self.open(int(run_id), lead=f"▶ Start did not train run {run_id} here: ")

    def open(self, run_id: int, *, lead: str = "") -> Shown:
        """What the page shows of stored run `run_id`: its settings and curves, continued from its newest checkpoint
        that loads if it has one. `lead` begins the message that says so when another writer trains the run (why
        this page follows it). Nothing stored is changed: what it stored past the checkpoint is dropped only when
        ▶ Start claims it (`claim`)."""
        if self.store is None:
            raise InvlabError("this session has no run store to open runs from")
        record = self.store.runs.get(run_id)
        if self.limits is not None:  # before any data is read or any model built
            self.limits.check(RunConfig.from_json(record.config))
        opened, held = open_run(self.store, run_id, claim=False), self._trainer()
        if opened.trainer is None and opened.skipped and held is not None and held.record.run_id == run_id:
            return self._kept(opened, held)  # the page's own model is the run's only good copy: it stays
        self.own_loop = self.continued = None
        self.stop_following()
        if opened.trainer is None:
            return self._shown_only(opened, lead)
        self.continued = opened
        step, stored = opened.step, opened.record.step
        done = step >= opened.trainer.tc.steps
        message = f"opened stored run {run_id} at step {step}" + ("" if done else "; Start continues it")
        if opened.dropped:  # say what continuing costs: the steps after the checkpoint were never saved
            message += (f" — its last checkpoint is at step {step}, so the {opened.dropped} steps after it "
                        f"(to step {stored}) cannot be continued; Start replaces them")
        message += "".join(f"; {note}" for note in opened.notes)
        return Shown(label=f"stored run {run_id}", config=opened.config, trainer=opened.trainer, publish=True,
                     values=dict(state=PageState.FINISHED if done else PageState.PAUSED, step=step, tone="info",
                                 message=message))

    @staticmethod
    def _kept(opened: OpenedRun, held: Trainer) -> Shown:
        """Opening the run this page trains when none of its checkpoints loads: nothing changes (the model this page
        holds is the run's only good copy), and the page says why and what to do."""
        return Shown(values=dict(tone="error", message=(
            f"stored run {opened.record.id} was not reopened: none of its checkpoints loads "
            f"({'; '.join(opened.notes)}); this page keeps the run as it holds it, at step {held.step_count}: "
            "Start continues it, and Save checkpoint writes one that loads")))

    def _shown_only(self, opened: OpenedRun, lead: str) -> Shown:
        """A stored run shown without continuing it: no checkpoint loads, or another process writes it (then it is
        followed)."""
        record, history = opened.record, opened.history
        loop = OwnLoop.of(record, opened.config)
        if opened.writer:  # its points are drawn as that process writes them (`follow`)
            self.following, self.followed_config = RunFollower(self.store, record.id), opened.config
            history, _ = self.following.read()
        self.own_loop = loop
        views = (self.following or RunFollower(self.store, record.id)).read_views(record)
        shown = Shown(label=f"stored run {record.id}", config=opened.config, history=gaps_as_nan(history),
                      layout=None if loop is None else OwnLoop.layout(history), views=views,
                      values=dict(state=PageState.IDLE, step=record.step, tone="info",
                                  message=self._shown_only_message(opened, loop, lead)))
        if opened.writer:  # judged on what it stored so far, not only once new points arrive
            shown.values.update(self.judge_followed() or {})
        return shown

    def _shown_only_message(self, opened: OpenedRun, loop: OwnLoop | None, lead: str) -> str:
        """What the page says of a stored run shown without continuing it (`loop`: the user's loop that wrote it)."""
        record, writer = opened.record, opened.writer
        if loop is not None:
            return loop.followed(lead, writer) if writer else loop.opened(record.status, record.step)
        if writer and trained_by_another_page(self, record.id):
            why = ("another page of this server is training it (another tab, or another user on a class server); "
                   "its new points are drawn here as it writes them, and it is not continued here")
        elif writer:
            why = (f"it is still being trained by another process ({writer}), whose new points are drawn as it "
                   "writes them; it is not continued here")
        elif opened.skipped:
            why = f"none of its checkpoints loads ({'; '.join(opened.notes)})"
        else:
            why = "it has no checkpoint to continue from"
        return (f"{lead}opened stored run {record.id} ({record.status} at step {record.step}): its curves are "
                f"shown; {why}, so Start trains a new run with its settings")

    def follow(self) -> Shown:
        """The points another process wrote to the run this page follows since the last look; when that process
        has stopped writing it, how the run ended (and following stops)."""
        try:
            new, record = self.following.read()
            views = self.following.read_views(record)
        except InvlabError as err:
            self.stop_following()
            return Shown(values=dict(message=str(err), tone="error"))
        shown = Shown(points=new, views=views, values=dict(step=record.step))
        if record.status == RunStatus.RUNNING:
            if new:  # judged again only when points arrived
                shown.values.update(self.judge_followed() or {})
            return shown
        self.stop_following()
        ended = f" ({record.message})" if record.message else ""
        loop = self.shown_loop()
        message = (loop.ended(record.status, record.step, record.message or "") if loop is not None else
                   f"stored run {record.id} is now {record.status} at step {record.step}{ended}; its curves are "
                   "shown, and Start trains a new run with its settings")
        shown.values.update(tone="error" if record.status == RunStatus.FAILED else "info", message=message)
        return shown

    def judge_followed(self) -> dict | None:
        """The message and tone that give the followed run's health verdict (`followed_health`) while it is not ok,
        or say it recovered; None when the verdict did not change."""
        health = self.following.health(self.followed_config)
        if health == self.followed_health:
            return None
        was_bad = self.followed_health is not None and self.followed_health.state not in HEALTHY
        self.followed_health = health
        run_id = self.following.run_id
        if health.state not in HEALTHY:
            return dict(tone=state_tone(health.state, HealthState),
                        message=f"stored run {run_id}, trained by another process, is {health.state}: {health.hint}")
        if was_bad:  # it recovered: the warning goes
            return dict(tone="info", message=f"stored run {run_id} is trained by another process, whose new points "
                                             "are drawn as it writes them; its training looks healthy again")
        return None
