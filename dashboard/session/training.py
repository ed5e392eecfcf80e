"""TrainingSession: one daemon thread per browser session around the engine's Trainer.

The thread owns the Trainer: it builds it, steps it, and every `view_interval` seconds takes a
snapshot with diagnostics, only while the page shows them (`views_wanted`), only of the views on screen
(`views_shown`, from `invlab.dashboard.views.watch`) and never spending more than
`VIEW_SHARE` of its time on them (a slow family's views come less often); the history goes out point by point,
never copied whole. It starts with the first command, so a page that never asks for training (a link
preview, a page that never connected) costs no thread; `stop()` never waits unless asked to, and the thread
closes the run store it was given to own when it ends. It never touches Bokeh: new curve points go into an
`Outbox` (`outbox`) that the server thread drains a few times a second (`drain()`), however fast training runs.
Commands (start, pause, step, reset, open a stored run) are queued to the thread; live edits (learning rate, learnable
values, freezing) go to the Trainer, which applies them at once if it is idle, else before its next step (both
`SessionCommands`, in `commands`); a stored run opened or followed is `OpenedRuns`'s (`opened_runs`), which hands
back what to show; the run's curves and views go out through `PageFeed` (`feed`).
A server-wide cap limits how many sessions train at once (a session waiting for a slot is "queued" and says
why), and every step, of a run or a single "+1 Step", is taken in a fair turn and paced (`scheduling`), so one
page's training never holds another page's click behind it; a single step needs no run slot. The test subset is
evaluated by wall time (every `eval_interval` seconds, and once as soon as a run starts), so a slow family shows a
test-error point early and a fast one does not spend its time evaluating.
"""
from __future__ import annotations

import math
import queue
import threading
import time
import traceback

import param

from invlab.dashboard.session.commands import Interruption, SessionCommands
from invlab.dashboard.session.feed import PageFeed
from invlab.dashboard.session.follow import FOLLOW_SECONDS
from invlab.dashboard.session.opened_runs import SESSIONS, OpenedRuns, Shown
from invlab.dashboard.session.outbox import Outbox
from invlab.dashboard.session.scheduling import (
    CoreShare,
    TrainingSlots,
    default_slots,
    lower_training_priority,
    share_the_interpreter,
)
from invlab.dashboard.session.stopping import LIVE, abandon, close_store, mark_interrupted, store_failed
from invlab.dashboard.session.update import Update
from invlab.dashboard.views.watch import ShownViews
from invlab.errors import InvlabError, NonFiniteLossError
from invlab.settings import one_malloc_arena
from invlab.train import RunConfig, RunStore, Trainer
from invlab.train.states import SESSION_STATES, PageState

__all__ = ["SLOTS", "TrainingSession", "TrainingSlots", "Update", "set_training_cap", "threads_per_session"]

SLOTS = default_slots()
VIEW_SHARE = 0.05  # at most this share of the training thread's time goes to computing views while it trains


def threads_per_session() -> int:
    """Intra-op torch threads a training page gets now (`TrainingSlots.threads` of this process's slots)."""
    return SLOTS.threads()


def set_training_cap(cap: int) -> None:
    """Change the cap for sessions created from now on (`invlab serve --max-training N`)."""
    global SLOTS
    SLOTS = TrainingSlots(max(1, int(cap)), SLOTS.max_steps_per_s, SLOTS.cores)


class TrainingSession(param.Parameterized):
    """One browser session's training: a daemon thread around an `invlab.train.Trainer`, driven by commands (start,
    pause, step, reset, open a stored run) and handing batched updates to the page; its state, step and message are
    read-only params. Its parts, which callers reach directly (`session.commands.start()`, `session.opened.run_id`):
    the commands and live edits (`commands`, a `SessionCommands`), the stored runs it opens or follows (`opened`, an
    `OpenedRuns`, whose results the session adopts) and what it publishes for the page (`feed`, a `PageFeed`, into
    the `outbox` the server thread drains)."""
    state = param.Selector(default=PageState.IDLE, objects=list(SESSION_STATES), constant=True)
    step = param.Integer(default=0, constant=True)
    message = param.String(default="", doc="The last warning or error, in words.")
    tone = param.Selector(default="info", objects=["info", "warning", "error"], doc="How the message reads.")

    def __init__(self, config: RunConfig, *, store: RunStore | None = None, view_interval: float = 1.0,
                 eval_interval: float = 2.0, slots: TrainingSlots | None = None, owns_store: bool = False,
                 limits=None, **params):
        super().__init__(**params)
        self.outbox = Outbox()  # what the thread hands the page, batched
        self.config = config
        self.opened = OpenedRuns(store, limits, trainer=lambda: self.trainer)
        self.store = store
        self.owns_store = owns_store  # close the store when the session ends
        self.limits = limits  # an invlab.dashboard.serving.limits.ServerLimits: every model is checked against it first
        self.view_interval = view_interval
        self.eval_interval = eval_interval
        self._slots = slots
        self.trainer: Trainer | None = None
        self.commands = SessionCommands(ensure_thread=self._ensure_thread, trainer=lambda: self.trainer,
                                        config=lambda: self.config, save=self._save, state=lambda: self.state)
        self._runs = 0
        self.steps_done = 0  # total steps taken by this session's thread (for benchmarks)
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._stopped_by: str | None = None  # the server stopping (e.g. "SIGTERM"): the run is left `interrupted`
        self._thread_guard = threading.Lock()
        self._cores = CoreShare()  # this thread's share of the cores, and the gate it steps through
        self.watched = self._cores.watched  # cleared while no browser shows the page: its steps wait (scheduling.py)
        self.views_wanted = True  # the page shows the views now (its Training tab is open); False: none computed
        self.views_cost = 0.0  # seconds the last views took on the training thread
        self.shown = ShownViews()  # which views the page has on screen (`views_shown`), and which are due
        self.feed = PageFeed(self.outbox, self.shown)  # a run's curves, points and views into the outbox

    @property
    def store(self) -> RunStore | None:
        """The run store this session's runs are kept in (None: none; the Runs tab may open one later), handed to the
        part that opens stored runs whenever it changes."""
        return self._store

    @store.setter
    def store(self, store: RunStore | None) -> None:
        self._store = self.opened.store = store

    @property
    def views_shown(self) -> frozenset[str] | None:
        """The names of the views the page has on screen (`invlab.dashboard.views.watch.ViewWatcher`), or None: all.
        Views
        known to the run but not among them are not computed; one coming on screen is computed at the next step."""
        return self.shown.names

    @views_shown.setter
    def views_shown(self, names) -> None:
        self.shown.show(names)

    @property
    def thread(self) -> threading.Thread:
        """The training thread, started on first use (a stopped session's finished thread)."""
        return self._ensure_thread()

    def _ensure_thread(self) -> threading.Thread:
        with self._thread_guard:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="invlab-training", daemon=True)
                if not self._stopped:
                    one_malloc_arena()  # the training thread keeps its freed tensor memory for reuse, as main does
                    self._thread.start()
                    LIVE.add(self)  # a server that stops stops this thread's run first (`stopping`)
            return self._thread

    def stop(self, timeout: float = 10.0, wait: bool = True, why: str | None = None) -> None:
        """End the thread (the browser session is gone). With `wait=False` this returns at once: the thread ends
        after its current step or evaluation and closes the store it owns; a server thread never waits for it.
        `why`: the server itself stops (e.g. "SIGTERM"): a run training now is checkpointed at its next step and
        marked `interrupted`, saying why and how to resume it."""
        self._stopped_by = self._stopped_by or why
        self.commands.end()
        with self._thread_guard:
            self._stopped = True
            thread = self._thread
        if thread is None:  # it never started: nothing runs, only the store is left to close
            self._close_store()
            return
        if wait and threading.current_thread() is not thread:
            thread.join(timeout)

    def _close_store(self) -> None:
        store, self.store = (self.store, None) if self.owns_store else (None, self.store)
        close_store(store)

    # -- the server thread's side -------------------------------------------------------------------------------------
    def drain(self) -> Update:
        """Take what the training thread produced since the last call (new curve points, the latest snapshot, a new
        run's label and config, the tunables) as one `Update`."""
        return self.outbox.drain()

    # -- the training thread -------------------------------------------------------------------------------------------
    def _set(self, **values) -> None:
        with param.edit_constant(self):
            self.param.update(**values)

    def _loop(self) -> None:
        try:
            self._serve_commands()
        finally:
            abandon(self.trainer, "its page was closed before it trained a step")
            self._close_store()

    def _serve_commands(self) -> None:
        self._cores.generation = None  # torch threads are set (per thread under OpenMP) before the first step
        lower_training_priority()  # the server's own priority unless INVLAB_TRAINING_NICE asks for less
        opened = self.opened
        while self.commands.alive:
            try:
                command, arg = self.commands.next(timeout=FOLLOW_SECONDS if opened.following else 0.5)
            except queue.Empty:
                if opened.following:
                    self._adopt(opened.follow())
                continue
            opened.stop_following()  # any command ends following a run another process writes
            built = self.trainer
            try:
                self._do_between_steps()
                if command == "stop":
                    break
                if command == "reset":
                    self._build(arg or self.config)
                elif command == "open":
                    self._set(state=PageState.BUILDING, message="", tone="info")
                    self._adopt(opened.open(arg))
                elif command in ("step", "steps"):
                    self._ensure_trainer()
                    self._train(max_steps=1 if command == "step" else arg)
                elif command == "start":
                    self._ensure_trainer()
                    self._train()
            except NonFiniteLossError as err:
                self._set(state=PageState.PAUSED, message=str(err), tone="error")
                self._publish(force_views=True)
            except InvlabError as err:  # a store that fails under the run is said as such (`stopping`)
                self._set(state=PageState.FAILED if self.trainer is None else PageState.PAUSED,
                          message=store_failed(self.trainer, err) or str(err), tone="error")
            except Exception as err:  # a bug must not take the server down: show it and stay alive
                traceback.print_exc()
                self._set(state=PageState.FAILED, message=f"{type(err).__name__}: {err}", tone="error")
            if self.trainer is not built:  # Reset or Open replaced it
                abandon(built, "its page built another run before this one trained a step")

    def _do_between_steps(self) -> None:
        self.commands.do_between_steps(lambda text: self._set(message=text, tone="error"))

    def _save(self) -> None:
        if self.trainer is None:
            raise InvlabError("nothing to save yet: press Start or Step first")
        path = self.trainer.save_checkpoint()
        self._set(message=f"checkpoint saved: {path}", tone="info")

    def _ensure_trainer(self) -> None:
        if self.trainer is None:
            self._build(self.config)

    def _build(self, config: RunConfig) -> None:
        self._set(state=PageState.BUILDING, message="", tone="info")
        if self.limits is not None:
            self.limits.check(config)  # before any data is read or any model built
        trainer = Trainer(config, store=self.store)  # may raise: the old trainer stays in place
        self.config, self.trainer = config, trainer
        self.opened.continued = None  # an opened run it replaces is not continued
        run_id = trainer.record.run_id
        self._begin_run(f"run {run_id}" if run_id is not None else f"run {self._runs + 1}", config)
        self._set(state=PageState.IDLE, step=0)
        self._publish(force_views=True)

    def _begin_run(self, label: str, config: RunConfig, history: dict | None = None,
                   layout: tuple[str, ...] | None = None) -> None:
        SESSIONS.add(self)  # another page opening this run knows it is trained here
        self._runs += 1
        self.feed.begin_run(label, config, self.trainer, history, layout)

    def _adopt(self, shown: Shown) -> None:
        """Show what opening or following a stored run gave (`OpenedRuns`): a new run's settings, trainer (None:
        shown, not continued) and curves become the session's; a followed run's points and views go to the page."""
        if shown.label is not None:
            self.config, self.trainer = shown.config, shown.trainer
            self._begin_run(shown.label, shown.config, shown.history, shown.layout)
        if shown.points:
            self.outbox.add_points(shown.points)
        self.outbox.show_views(shown.views)
        if shown.values:
            self._set(**shown.values)
        if shown.publish:
            self._publish(force_views=True)

    def _train(self, max_steps: int | None = None) -> None:
        with share_the_interpreter():  # short GIL turns while this thread trains, so a click is answered at once
            self._train_run(max_steps)

    def _train_run(self, max_steps: int | None) -> None:
        trainer = self.trainer
        remaining = max(trainer.tc.steps - trainer.step_count, 0)
        if max_steps is not None:
            remaining = min(remaining, max_steps) or max_steps
        if remaining == 0 or (trainer.solve.converged and max_steps is None):
            self._set(state=PageState.CONVERGED if trainer.solve.converged else PageState.FINISHED)
            return
        slots = self._slots or SLOTS
        single = max_steps is not None  # "+1 Step" (or a re-solve): a few steps in turns, no run slot
        if not single and not slots.wait(self.commands.interrupted, lambda why: self._set(
                state=PageState.QUEUED, tone="warning", message=why)):
            self._set(state=PageState.PAUSED, message="", tone="info")  # paused (or redirected) while it waited
            return
        try:
            followed = self.opened.claim(trainer)  # one writer per run; another page's run is followed
            if followed is not None:
                self._adopt(followed)
                return
            self._set(state=PageState.RUNNING, message=trainer.last_warning or "",
                      tone="warning" if trainer.last_warning else "info")
            self._train_steps(trainer, remaining, max_steps, slots)
            self._run_ended(trainer)
        finally:
            if not single:
                slots.release()

    def _train_steps(self, trainer: Trainer, remaining: int, max_steps: int | None, slots: TrainingSlots) -> None:
        """Train `remaining` steps (of a run, or of `max_steps` single steps), evaluating and publishing as due."""
        stop = Interruption(self.commands, steps_only=max_steps is not None)
        gate = self._cores.step_gate(slots, stop)
        last_views, views_every = 0.0, self.view_interval
        last_eval = -math.inf if not trainer.report.last_metrics else time.perf_counter()
        every = 1 if max_steps is not None else max(1, min(trainer.tc.log_every, 10))
        # a Start runs to the configured total, which a live `steps` edit moves while it runs (`Trainer.run(None)`)
        steps = remaining if max_steps is not None else None
        for snap in trainer.run(steps=steps, every=every, stop=stop, step_gate=gate, history=False):
            self.steps_done = trainer.step_count
            self._do_between_steps()
            now = time.perf_counter()
            if self.eval_interval and now - last_eval >= self.eval_interval and max_steps is None:
                trainer.report.evaluate()
                last_eval = time.perf_counter()
            if trainer.last_warning and trainer.last_warning != self.message:  # e.g. a refused live change
                self._set(step=snap.step, message=trainer.last_warning, tone="warning")
            else:
                self._set(step=snap.step)
            force = self.views_wanted and self.shown.due(now - last_views >= views_every)
            self._publish(force_views=force)
            if force:  # the views' cost is measured and kept to VIEW_SHARE of the training thread's time
                last_views = time.perf_counter()
                self.views_cost = last_views - now
                views_every = max(self.view_interval, self.views_cost / VIEW_SHARE)
            # a closed page ends the loop at the generator's own stop check (paused, checkpointed); a `break` here
            # would close it mid-yield: interrupted, and the steps since its last checkpoint lost

    def _run_ended(self, trainer: Trainer) -> None:
        """After a training loop: the run's state, its views, and `interrupted` when the server stopped it."""
        converged = trainer.solve.converged
        done = converged or trainer.step_count >= trainer.tc.steps
        if self._stopped_by and not done:  # the server stops: the run waits for a resume, and says so
            mark_interrupted(trainer, self._stopped_by)
        self._publish(force_views=True, every_view=True)  # the stored run's views, all of them, as it stops
        self._set(step=trainer.step_count, state=PageState.CONVERGED if converged else PageState.FINISHED if done
                  else PageState.PAUSED)

    def _publish(self, force_views: bool = False, every_view: bool = False) -> None:
        self.feed.publish(self.trainer, force_views, every_view)
