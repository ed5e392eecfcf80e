"""Live changes to a training run from another thread (a page's slider, a notebook cell): edits applied between
steps, learnable values set or frozen, the learning rate changed, all under the trainer's lock."""
from __future__ import annotations

import torch

from ..errors import ConfigError
from ..parameters import learnables

EDIT_WAIT_SECONDS = 0.005  # how long a live edit waits for the trainer before it is deferred to the next step


class TrainerEdits:
    """The `Trainer`'s live-edit methods (mixed into `Trainer`)."""

    def edit(self, change) -> bool:
        """Apply `change(trainer)` now if no step is running, else just before the next step; True if applied now.

        A server thread calling this never waits for a step or an evaluation to end (a few milliseconds at most):
        a page stays responsive however slow the model. A deferred change that is refused leaves its message in
        `last_warning`."""
        if self.lock.acquire(timeout=EDIT_WAIT_SECONDS):
            try:
                change(self)
            finally:
                self.lock.release()
            return True
        self._edits.append(change)
        return False

    def _apply_edits(self) -> None:
        """Changes deferred by `edit` (called under the lock, before a step)."""
        while self._edits:
            change = self._edits.popleft()
            try:
                change(self)
            except (ConfigError, ValueError) as err:
                self.last_warning = f"a live change was refused: {err}"

    def set_value(self, name: str, value) -> None:
        """Set the learnable named `name` to `value` under the trainer's lock (applies at the next step; the last good
        state follows)."""
        with self.lock:
            self.learnable(name).assign(value)
            self._good = self._capture()
            self.converged = False  # the solve's answer has changed: it must run again

    def freeze(self, name: str, frozen: bool = True) -> None:
        """Freeze (or, with `frozen=False`, free) the learnable named `name` under the trainer's lock; a value the
        family only ever sets cannot be freed (ConfigError)."""
        with self.lock:
            value = self.learnable(name)
            if not frozen and not isinstance(value.raw, torch.nn.Parameter):
                raise ConfigError(f"{name} is only ever set in the {self.spec.name} family, never learned, so it "
                                  f"cannot be unfrozen")
            value.frozen = frozen
            self.converged = False

    def learnable(self, name):
        """The model's learnable value `name` (a ConfigError listing the names there are if it has none)."""
        table = learnables(self.model)
        if name not in table:
            raise ConfigError(f"no learnable value {name!r}; this model has: {', '.join(table)}")
        return table[name]

    def set_learning_rate(self, lr: float) -> None:
        """Set the learning rate `lr` under the trainer's lock: the optimiser's groups take it at once (scaled by the
        schedule's current factor), and the schedule's base follows."""
        with self.lock:
            self.tc.learning_rate = lr  # validated by param
            for group, base in zip(self.optimizer.param_groups, self.scheduler.base_lrs):
                group["lr"] = lr * self._lr_factor(self.step_count)
            self.scheduler.base_lrs = [lr for _ in self.scheduler.base_lrs]
            self.converged = False

