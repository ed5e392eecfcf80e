"""Live changes to a training run from another thread (a page's slider, a notebook cell): `LiveEdits`, the part of a
`Trainer` that applies edits between steps, sets or freezes learnable values and changes the learning rate, all
under the trainer's lock. The trainer holds one as `trainer.edits`; `Trainer.edit`, `set_value`, `freeze`,
`learnable` and `set_learning_rate` hand over to it."""
from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from ..errors import ConfigError
from ..parameters import learnables

if TYPE_CHECKING:
    from .trainer import Trainer

EDIT_WAIT_SECONDS = 0.005  # how long a live edit waits for the trainer before it is deferred to the next step


class LiveEdits:
    """A trainer's live edits: changes from another thread, applied at once when no step is running or queued for
    the next step (`pending`), so a server thread never waits for a step. Each change runs under the trainer's
    lock, and each setter leaves the trainer's last good state and its solve's `converged` flag consistent."""

    def __init__(self, trainer: "Trainer"):
        self.trainer = trainer
        self.pending: deque[Callable[["Trainer"], None]] = deque()  # waiting for the step in progress to end

    def edit(self, change: Callable[["Trainer"], None]) -> bool:
        """Apply `change(trainer)` now if no step is running, else just before the next step; True if applied now.

        A server thread calling this never waits for a step or an evaluation to end (a few milliseconds at most):
        a page stays responsive however slow the model. A deferred change that is refused leaves its message in
        the trainer's `last_warning`."""
        trainer = self.trainer
        if trainer.lock.acquire(timeout=EDIT_WAIT_SECONDS):
            try:
                change(trainer)
            finally:
                trainer.lock.release()
            return True
        self.pending.append(change)
        return False

    def apply_pending(self) -> None:
        """Run the changes `edit` deferred, oldest first (the trainer calls this under its lock, before a step)."""
        while self.pending:
            change = self.pending.popleft()
            try:
                change(self.trainer)
            except (ConfigError, ValueError) as err:
                self.trainer.last_warning = f"a live change was refused: {err}"

    def learnable(self, name: str):
        """The model's learnable value `name` (a ConfigError listing the names there are if it has none)."""
        table = learnables(self.trainer.model)
        if name not in table:
            raise ConfigError(f"no learnable value {name!r}; this model has: {', '.join(table)}")
        return table[name]

    def set_value(self, name: str, value) -> None:
        """Set the learnable named `name` to `value` (in its own units) under the lock; it applies at the next step,
        and the last good state follows."""
        trainer = self.trainer
        with trainer.lock:
            self.learnable(name).assign(value)
            trainer.good.capture(trainer.step_count)
            trainer.converged = False  # the solve's answer has changed: it must run again

    def freeze(self, name: str, frozen: bool = True) -> None:
        """Freeze (or, with `frozen=False`, free) the learnable named `name` under the lock; a value the family only
        ever sets cannot be freed (ConfigError)."""
        trainer = self.trainer
        with trainer.lock:
            value = self.learnable(name)
            if not frozen and not isinstance(value.raw, torch.nn.Parameter):
                raise ConfigError(f"{name} is only ever set in the {trainer.spec.name} family, never learned, so it "
                                  f"cannot be unfrozen")
            value.frozen = frozen
            trainer.converged = False

    def set_learning_rate(self, lr: float) -> None:
        """Set the learning rate `lr` under the lock: the optimiser's groups take it at once (scaled by the schedule's
        current factor), and the schedule's base follows."""
        trainer = self.trainer
        with trainer.lock:
            trainer.tc.learning_rate = lr  # validated by param
            for group in trainer.optimizer.param_groups:
                group["lr"] = lr * trainer.tc.lr_factor(trainer.step_count)
            trainer.scheduler.base_lrs = [lr for _ in trainer.scheduler.base_lrs]
            trainer.converged = False


__all__ = ["EDIT_WAIT_SECONDS", "LiveEdits"]
