"""The training thread's side of a stored run opened on the page (`TrainingSession.open_run`): its settings and curves,
continued from its latest checkpoint, or, while another process still trains it, followed as that process writes it,
with that run's health verdict in the message. Mixed into `TrainingSession`, whose thread runs these methods."""
from __future__ import annotations

import weakref

from invlab.dashboard.session.follow import RunFollower, gaps_as_nan
from invlab.errors import InvlabError
from invlab.train import RunConfig, Trainer
from invlab.train.checkpoint import load_checkpoint
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
    """Opening and following stored runs, for `TrainingSession` (uses its store, limits, outbox and `_set`)."""

    @property
    def run_id(self) -> int | None:
        """The stored run this session shows: the one it trains or opened, or the one another process writes that it
        follows; None before a run is built or without a store."""
        trainer, following = self.trainer, self._following
        if trainer is not None and trainer.run_id is not None:
            return int(trainer.run_id)
        return following.run_id if following is not None else None

    def _claim_or_follow(self, trainer) -> bool:
        """Claim `trainer`'s stored run for this page (`Trainer.claim`); whether it may train. While another page of
        this server trains the run (a second tab on it, or another user of a class server), this page follows that
        run instead, saying so, and False is returned; a refusal for another reason (a process outside this server)
        is raised, with that process named."""
        try:
            trainer.claim()
            return True
        except RunStoreError:
            run_id = trainer.run_id
            if run_id is None or not trained_by_another_page(self, int(run_id)):
                raise
        # its live writer is followed: its points drawn here as that page trains it; the page's message says why in
        # one update (two would show the plain 'opened' message for a moment before it)
        self._open(int(run_id), lead=f"▶ Start did not train run {run_id} here: ")
        return False

    def _open(self, run_id: int, *, lead: str = "") -> None:
        """Show a stored run: its settings and curves; continue from its latest checkpoint if it has one. `lead`
        begins the message that says so when another writer trains the run (why this page follows it).

        Nothing stored is changed by opening: metrics logged after the checkpoint are dropped only when the
        user continues training (they would be replaced by the new steps)."""
        if self.store is None:
            raise InvlabError("this session has no run store to open runs from")
        self._set(state=PageState.BUILDING, message="", tone="info")
        record = self.store.get_run(run_id)
        config = RunConfig.from_json(record.config)
        if self.limits is not None:
            self.limits.check(config)
        history = self.store.metrics(run_id)
        writer = self.store.live_writer(run_id)  # another process trains it: two writers would garble the run
        latest = None if writer else self.store.latest_checkpoint(run_id)
        if latest is None:
            self.config, self.trainer = config, None
            if writer:  # its points are drawn as that process writes them (`_follow`)
                self._following, self.followed_health = RunFollower(self.store, run_id), None
                history, _ = self._following.read()
            self._begin_run(f"stored run {run_id}", config, gaps_as_nan(history))
            self._show_stored_views((self._following or RunFollower(self.store, run_id)).read_views(record))
            if writer and trained_by_another_page(self, run_id):
                why = ("another page of this server is training it (another tab, or another user on a class server); "
                       "its new points are drawn here as it writes them, and it is not continued here")
            elif writer:
                why = (f"it is still being trained by another process ({writer}), whose new points are drawn as it "
                       "writes them; it is not continued here")
            else:
                why = "it has no checkpoint to continue from"
            self._set(state=PageState.IDLE, step=record.step, tone="info",
                      message=f"{lead}opened stored run {run_id} ({record.status} at step {record.step}): "
                              f"its curves are shown; {why}, so Start trains a new run with its settings")
            if writer:  # judged on what it stored so far, not only once new points arrive
                self._judge_followed()
            return
        step, path = latest
        trainer = Trainer(config, store=self.store, run_id=run_id)
        trainer.load_state(load_checkpoint(path, map_location=trainer.device))
        for name, (steps, values) in history.items():
            kept = [i for i, s in enumerate(steps) if s <= step]
            trainer.history[name] = ([steps[i] for i in kept], [values[i] for i in kept])
        if hasattr(trainer.model, "restore_history"):  # e.g. the learned ranges over training
            trainer.model.restore_history(trainer.history, step)
        self.config, self.trainer = config, trainer
        self._truncate_on_start = (run_id, step) if record.step > step else None
        self._begin_run(f"stored run {run_id}", config)
        done = step >= trainer.tc.steps
        message = f"opened stored run {run_id} at step {step}" + ("" if done else "; Start continues it")
        if record.step > step:  # say what continuing costs: the steps after the checkpoint were never saved
            message += (f" — its last checkpoint is at step {step}, so the {record.step - step} steps after it (to "
                        f"step {record.step}) cannot be continued; Start replaces them")
        self._set(state=PageState.FINISHED if done else PageState.PAUSED, step=step, tone="info", message=message)
        self._publish(force_views=True)

    def _follow(self) -> None:
        """Draw the points another process wrote to the run this page follows since the last look; when that
        process has stopped writing it, say how the run ended and stop following."""
        try:
            new, record = self._following.read()
            views = self._following.read_views(record)
        except InvlabError as err:
            self._following = self.followed_health = None
            self._set(message=str(err), tone="error")
            return
        with self._lock:
            for name, (steps, values) in new.items():
                old_steps, old_values = self._outbox[name]
                self._outbox[name] = (old_steps + steps, old_values + values)
        self._show_stored_views(views)
        if record.status != RunStatus.RUNNING:
            self._following = self.followed_health = None
            ended = f" ({record.message})" if record.message else ""
            self._set(step=record.step, tone="error" if record.status == RunStatus.FAILED else "info",
                      message=f"stored run {record.id} is now {record.status} at step {record.step}{ended}; its "
                              "curves are shown, and Start trains a new run with its settings")
        else:
            if new:  # judged again only when points arrived
                self._judge_followed()
            if record.step != self.step:
                self._set(step=record.step)

    def _show_stored_views(self, snapshot) -> None:
        """Hand a stored run's views (a `Snapshot`, or None when none are new) to the page with the next drain."""
        if snapshot is not None:
            with self._lock:
                self._snapshot = snapshot

    def _judge_followed(self) -> None:
        """Put the followed run's health verdict (`followed_health`) in the message while it is not ok."""
        health = self._following.health(self.config)
        if health == self.followed_health:
            return
        was_bad = (self.followed_health is not None
                   and self.followed_health.state not in (HealthState.OK, HealthState.CONVERGED))
        self.followed_health = health
        run_id = self._following.run_id
        if health.state not in (HealthState.OK, HealthState.CONVERGED):
            self._set(tone="error" if health.state == HealthState.COLLAPSED else "warning",
                      message=f"stored run {run_id}, trained by another process, is {health.state}: {health.hint}")
        elif was_bad:  # it recovered: the warning goes
            self._set(tone="info", message=f"stored run {run_id} is trained by another process, whose new points are "
                                           "drawn as it writes them; its training looks healthy again")
