"""Live changes to a training run from another thread (a page's slider, a notebook cell): `LiveEdits`, the part of a
`Trainer` (`trainer.edits`) that holds the one queue of typed edits (`edits`) and applies them between steps, under
the trainer's lock. It is handed what it edits: the lock, the optimiser and its schedule, the model whose learnables
it sets or freezes, the train settings, the last good state and the solve's `converged` flag."""
from __future__ import annotations

import threading
from collections import deque

import torch

from ..errors import ConfigError
from ..parameters import learnables
from .config import TrainConfig
from .edits import LIVE_TRAIN_SETTINGS, Edit, Freeze, SetLearningRate, SetTrainSetting, SetValue
from .recovery import LastGoodState
from .stepping import SolveState

EDIT_WAIT_SECONDS = 0.005  # how long a live edit waits for the trainer before it is left to the next step


class LiveEdits:
    """A trainer's live edits: `put(edit)` queues a typed edit and applies the queue at once when no step is running,
    else leaves it for the next step (`apply_pending`, which the step calls under the lock), so a server thread never
    waits for a step. Each edit leaves the last good state and the solve's `converged` flag consistent.

    The step an edit happens at is the schedule's (`scheduler.last_epoch`: one schedule step per optimiser step,
    set again when a checkpoint is loaded)."""

    def __init__(self, *, lock: threading.RLock, optimizer: torch.optim.Optimizer, scheduler, model: torch.nn.Module,
                 tc: TrainConfig, good: LastGoodState, solve: SolveState, family: str):
        self.lock, self.optimizer, self.scheduler, self.model = lock, optimizer, scheduler, model
        self.tc, self.good, self.solve, self.family = tc, good, solve, family
        self.pending: deque[Edit] = deque()  # put, not yet applied (a step was running)
        self.unsaid: str | None = None  # why a held-back edit was refused, until `apply_pending` reports it
        self._apply_edit = {SetLearningRate: self._learning_rate, SetValue: self._value, Freeze: self._freeze,
                            SetTrainSetting: self._train_setting}

    def put(self, edit: Edit) -> bool:
        """Queue `edit`; apply the queue now if no step is running (True), else leave it for the next step (False).

        A name the run does not have is refused at once (ConfigError); so is this edit when applied now. A server
        thread calling this never waits for a step or an evaluation to end (a few milliseconds at most)."""
        self._check(edit)
        self.pending.append(edit)
        if not self.lock.acquire(timeout=EDIT_WAIT_SECONDS):
            return False
        try:
            refusal = self._apply_queue(raise_for=edit)
        finally:
            self.lock.release()
        if refusal is not None:
            raise refusal
        return True

    def apply_pending(self) -> str | None:
        """Apply the queued edits, oldest first, under the lock (the step calls this before it starts); the message
        of the last one refused since the queue was last reported, if any (the trainer shows it as its
        `last_warning`), a held-back edit refused when a later `put` applied the queue included."""
        with self.lock:
            self._apply_queue()
            said, self.unsaid = self.unsaid, None
        return said

    def _apply_queue(self, raise_for: Edit | None = None) -> ConfigError | ValueError | None:
        """Apply the queue; the refusal of `raise_for` (the caller's own edit) is returned for the caller to raise,
        any other's is kept in `unsaid` for the next `apply_pending` to report."""
        own = None
        while self.pending:
            edit = self.pending.popleft()
            try:
                self._apply_edit[type(edit)](edit)
            except (ConfigError, ValueError) as err:
                if edit is raise_for:
                    own = err
                else:
                    self.unsaid = f"a live change was refused: {err}"
        return own

    def _check(self, edit: Edit) -> None:
        if isinstance(edit, (SetValue, Freeze)):
            self.learnable(edit.name)
        elif isinstance(edit, SetTrainSetting) and edit.name not in LIVE_TRAIN_SETTINGS:
            raise ConfigError(f"{edit.name} cannot change while a run trains (only {', '.join(LIVE_TRAIN_SETTINGS)} "
                              "and the learning rate can); Reset builds a new run that takes it")

    def learnable(self, name: str):
        """The model's learnable value `name` (a ConfigError listing the names there are if it has none)."""
        table = learnables(self.model)
        if name not in table:
            raise ConfigError(f"no learnable value {name!r}; this model has: {', '.join(table)}")
        return table[name]

    @property
    def current_lr(self) -> float:
        """The learning rate the optimiser uses at this step (the schedule applied)."""
        return float(self.optimizer.param_groups[0]["lr"])

    def _value(self, edit: SetValue) -> None:
        self.learnable(edit.name).assign(edit.value)
        self.good.capture(self.scheduler.last_epoch)  # a step that goes wrong goes back to the edited value
        self.solve.converged = False  # the solve's answer has changed: it must run again

    def _freeze(self, edit: Freeze) -> None:
        value = self.learnable(edit.name)
        if not edit.frozen and not isinstance(value.raw, torch.nn.Parameter):
            raise ConfigError(f"{edit.name} is only ever set in the {self.family} family, never learned, so it "
                              f"cannot be unfrozen")
        value.frozen = edit.frozen
        self.solve.converged = False

    def _learning_rate(self, edit: SetLearningRate) -> None:
        self.tc.learning_rate = edit.lr  # validated by param
        for group in self.optimizer.param_groups:
            group["lr"] = edit.lr * self.tc.lr_factor(self.scheduler.last_epoch)
        self.scheduler.base_lrs = [edit.lr for _ in self.scheduler.base_lrs]
        self.solve.converged = False

    def _train_setting(self, edit: SetTrainSetting) -> None:
        setattr(self.tc, edit.name, edit.value)  # validated by param


__all__ = ["EDIT_WAIT_SECONDS", "LiveEdits"]
