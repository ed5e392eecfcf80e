"""TrainingSession: one daemon thread per browser session around the engine's Trainer.

The thread owns the Trainer: it builds it, steps it, and every `view_interval` seconds takes a
snapshot with diagnostics. It never touches Bokeh: new curve points go into an outbox that the
server thread drains a few times a second (`drain()`), however fast training runs. Commands (start,
pause, step, reset, open a stored run) are queued to the thread; live edits (learning rate, learnable
values, freezing) go straight to the Trainer under its lock. A server-wide semaphore caps how many
sessions train at once; a session waiting for a slot is "queued".
"""
from __future__ import annotations

import os
import queue
import threading
import time
import traceback
from collections import defaultdict
from dataclasses import dataclass, field

import param
import torch

from engine.errors import InvlabError, NonFiniteLossError
from engine.train import RunConfig, RunStore, Trainer


def _default_cap() -> int:
    try:
        return max(1, int(os.environ.get("INVLAB_MAX_TRAINING", os.cpu_count() or 1)))
    except ValueError:
        return os.cpu_count() or 1


class TrainingSlots:
    """The server-wide cap on concurrently training sessions."""

    def __init__(self, cap: int):
        self.cap = cap
        self._sem = threading.BoundedSemaphore(cap)

    def acquire(self, timeout: float) -> bool:
        return self._sem.acquire(timeout=timeout)

    def release(self) -> None:
        self._sem.release()


SLOTS = TrainingSlots(_default_cap())


def threads_per_session() -> int:
    """Intra-op threads for one training thread: the cores shared by the sessions allowed to train at once.

    torch's OpenMP threads slow down by orders of magnitude when more of them compete for the cores than
    there are cores, so each training thread takes its share (`INVLAB_TORCH_THREADS` overrides)."""
    value = os.environ.get("INVLAB_TORCH_THREADS")
    if value:
        return max(1, int(value))
    return max(1, (os.cpu_count() or 1) // SLOTS.cap)


def set_training_cap(cap: int) -> None:
    """Change the cap for sessions created from now on (`invlab serve --max-training N`)."""
    global SLOTS
    SLOTS = TrainingSlots(max(1, int(cap)))


@dataclass
class Update:
    """What the server thread takes from the session at each tick."""

    points: dict[str, tuple[list, list]] = field(default_factory=dict)  # metric → (steps, values), new only
    snapshot: object | None = None  # a Snapshot with views, when a new one is ready
    new_run: bool = False  # the trainer was replaced (reset / open): archive the curves first
    run_label: str = ""


class TrainingSession(param.Parameterized):
    state = param.Selector(default="idle", objects=["idle", "building", "queued", "running", "paused", "finished",
                                                     "failed"], constant=True)
    step = param.Integer(default=0, constant=True)
    message = param.String(default="", doc="The last warning or error, in words.")

    def __init__(self, config: RunConfig, *, store: RunStore | None = None, view_interval: float = 1.0,
                 slots: TrainingSlots | None = None, **params):
        super().__init__(**params)
        self.config = config
        self.store = store
        self.view_interval = view_interval
        self._slots = slots
        self.trainer: Trainer | None = None
        self._commands: queue.Queue = queue.Queue()
        self._pause = threading.Event()
        self._alive = True
        self._lock = threading.Lock()  # guards the outbox
        self._outbox: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
        self._cursor: dict[str, int] = {}
        self._snapshot = None
        self._new_run = False
        self._run_label = ""
        self._runs = 0
        self.steps_done = 0  # total steps taken by this session's thread (for benchmarks)
        self.thread = threading.Thread(target=self._loop, name="invlab-training", daemon=True)
        self.thread.start()

    # -- commands (any thread) -----------------------------------------------------------------------------------
    def start(self) -> None:
        self._pause.clear()
        self._commands.put(("start", None))

    def pause(self) -> None:
        self._pause.set()

    def step_once(self) -> None:
        self._pause.set()
        self._commands.put(("step", None))

    def resolve(self, steps: int) -> None:
        """Run `steps` more steps, even past the configured count (a finished solve re-solving after a live edit)."""
        self._pause.set()
        self._commands.put(("steps", int(steps)))

    def reset(self, config: RunConfig | None = None) -> None:
        """Build a fresh model (from `config` if given); the old run's curves stay for comparison."""
        self._pause.set()
        self._commands.put(("reset", config))

    def open_run(self, run_id: int) -> None:
        self._pause.set()
        self._commands.put(("open", int(run_id)))

    def save_checkpoint(self) -> str:
        if self.trainer is None:
            raise InvlabError("nothing to save yet: press Start or Step first")
        return str(self.trainer.save_checkpoint())

    def stop(self, timeout: float = 10.0) -> None:
        """End the thread (the browser session is gone)."""
        self._alive = False
        self._pause.set()
        self._commands.put(("stop", None))
        if threading.current_thread() is not self.thread:
            self.thread.join(timeout)

    # -- live edits -------------------------------------------------------------------------------------------------
    def set_learning_rate(self, lr: float) -> None:
        self.config.train["learning_rate"] = lr
        if self.trainer is not None:
            self.trainer.set_learning_rate(lr)

    def set_value(self, name: str, value) -> None:
        if self.trainer is not None:
            self.trainer.set_value(name, value)

    def freeze(self, name: str, frozen: bool) -> None:
        if self.trainer is not None:
            self.trainer.freeze(name, frozen)

    # -- the server thread's side -------------------------------------------------------------------------------------
    def drain(self) -> Update:
        with self._lock:
            update = Update({k: v for k, v in self._outbox.items() if v[0]}, self._snapshot, self._new_run,
                            self._run_label)
            self._outbox = defaultdict(lambda: ([], []))
            self._snapshot, self._new_run = None, False
        return update

    # -- the training thread ----------------------------------------------------------------------------------------------
    def _set(self, **values) -> None:
        with param.edit_constant(self):
            self.param.update(**values)

    def _loop(self) -> None:
        torch.set_num_threads(threads_per_session())  # per-thread setting under OpenMP
        while self._alive:
            try:
                command, arg = self._commands.get(timeout=0.5)
            except queue.Empty:
                continue
            try:
                if command == "stop":
                    break
                if command == "reset":
                    self._build(arg or self.config)
                elif command == "open":
                    self._open(arg)
                elif command in ("step", "steps"):
                    self._ensure_trainer()
                    self._train(max_steps=1 if command == "step" else arg)
                elif command == "start":
                    self._ensure_trainer()
                    self._train()
            except NonFiniteLossError as err:
                self._set(state="paused", message=str(err))
                self._publish(force_views=True)
            except InvlabError as err:
                self._set(state="failed" if self.trainer is None else "paused", message=str(err))
            except Exception as err:  # a bug must not take the server down: show it and stay alive
                traceback.print_exc()
                self._set(state="failed", message=f"{type(err).__name__}: {err}")

    def _ensure_trainer(self) -> None:
        if self.trainer is None:
            self._build(self.config)

    def _build(self, config: RunConfig) -> None:
        self._set(state="building", message="")
        trainer = Trainer(config, store=self.store)  # may raise: the old trainer stays in place
        self.config, self.trainer = config, trainer
        self._begin_run(f"run {trainer.run_id}" if trainer.run_id is not None else f"run {self._runs + 1}")
        self._set(state="idle", step=0)
        self._publish(force_views=True)

    def _open(self, run_id: int) -> None:
        if self.store is None:
            raise InvlabError("this session has no run store to open runs from")
        self._set(state="building", message="")
        trainer = Trainer.resume(self.store, run_id)
        self.config, self.trainer = trainer.config, trainer
        self._begin_run(f"run {run_id}")
        self._set(state="paused", step=trainer.step_count, message=f"opened stored run {run_id} at step {trainer.step_count}")
        self._publish(force_views=True)

    def _begin_run(self, label: str) -> None:
        self._runs += 1
        with self._lock:
            self._outbox = defaultdict(lambda: ([], []))
            self._cursor = {}
            self._new_run, self._run_label = True, label

    def _train(self, max_steps: int | None = None) -> None:
        trainer = self.trainer
        remaining = max(trainer.tc.steps - trainer.step_count, 0)
        if max_steps is not None:
            remaining = min(remaining, max_steps) or max_steps
        if remaining == 0:
            self._set(state="finished")
            return
        slots = self._slots or SLOTS
        self._set(state="queued")
        while not slots.acquire(timeout=0.2):
            if self._pause.is_set() and max_steps is None or not self._alive:
                self._set(state="paused")
                return
        try:
            self._set(state="running", message=trainer.last_warning or "")
            stop = threading.Event() if max_steps is not None else self._pause
            last_views = 0.0
            every = max(1, min(trainer.tc.log_every, 10))
            for snap in trainer.run(steps=remaining, every=every, stop=stop):
                self.steps_done = trainer.step_count
                self._set(step=snap.step)
                now = time.perf_counter()
                force = now - last_views >= self.view_interval
                self._publish(force_views=force)
                if force:
                    last_views = now
                if not self._alive:
                    break
            done = trainer.step_count >= trainer.tc.steps
            self._set(step=trainer.step_count, state="finished" if done else "paused")
            self._publish(force_views=True)
        finally:
            slots.release()

    def _publish(self, force_views: bool = False) -> None:
        """Copy new history points (and, when due, a snapshot with views) into the outbox."""
        trainer = self.trainer
        if trainer is None:
            return
        snapshot = trainer.snapshot(views=True) if force_views else None
        with self._lock:
            for metric, (steps, values) in list(trainer.history.items()):
                start = self._cursor.get(metric, 0)
                if len(steps) > start:
                    out_s, out_v = self._outbox[metric]
                    out_s.extend(steps[start:])
                    out_v.extend(values[start:])
                    self._cursor[metric] = len(steps)
            if snapshot is not None:
                self._snapshot = snapshot
