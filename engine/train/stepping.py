"""One optimiser step of a `Trainer`'s model, apart from the trainer's bookkeeping: `OptimiserStep` (the part a
trainer holds as `trainer.stepper`) applies the live edits waiting for it, draws the step's batch, computes the loss
and its gradient (an L-BFGS solve through its closure) and updates the model, under the trainer's lock and inside
training's own random streams. A step whose loss or gradient is not finite applies no update: the model stays at (or
goes back to) its last good state and `StepFailed` says at which step; the trainer turns it into the error a user
reads (`recovery.non_finite_error`).

`SolveState` holds whether the run's L-BFGS solve has converged: its steps set it, a live edit clears it.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import torch

from ..errors import NumericalError
from .batches import EpochOrder
from .optimisers import lbfgs_step
from .recovery import LastGoodState, all_finite
from .streams import TrainingStreams


@dataclass
class SolveState:
    """Whether the run's L-BFGS solve has converged (the run then stops); a live edit changes the answer, so clears
    it."""
    converged: bool = False


class StepFailed(Exception):
    """Step `attempted`'s loss (`terms`, None when computing it raised `cause`) or gradient was not finite; the model
    is at `step`, its last good state."""

    def __init__(self, attempted: int, step: int, terms=None, cause: Exception | None = None):
        super().__init__(f"step {attempted} was not finite")
        self.attempted, self.step, self.terms, self.cause = attempted, step, terms, cause


@dataclass
class StepData:
    """What a step trains on: the training set (X [N, ...], y [N]) on `device` and the order its minibatches are
    visited in (`batches`; a whole batch for an L-BFGS solve)."""
    X: torch.Tensor
    y: torch.Tensor
    batches: EpochOrder
    device: torch.device


class OptimiserStep:
    """The step itself (see the module's doc). `torn` is set when an interrupt cut a step off midway (some
    parameters may have moved: the state is not fit to save) until a checkpoint's state is loaded."""

    def __init__(self, *, model: torch.nn.Module, optimizer: torch.optim.Optimizer, optimizer_name: str, scheduler,
                 lock: threading.RLock, streams: TrainingStreams, data: StepData, good: LastGoodState,
                 solve: SolveState, edits):
        self.model, self.optimizer, self.optimizer_name, self.scheduler = model, optimizer, optimizer_name, scheduler
        self.lock, self.streams, self.data, self.good, self.solve, self.edits = lock, streams, data, good, solve, edits
        self.torn = False

    def take(self, step: int, last_loss: float | None):
        """Step `step` + 1 under the lock after the live edits waiting for it; returns the loss Terms (tensors, not
        synced) and the message of a live edit refused, if any. Raises `StepFailed`."""
        with self.lock:
            refused = self.edits.apply_pending()
            try:
                with self.streams.inside():
                    return self._take(step, last_loss), refused
            except StepFailed:
                raise  # the model is at its last good state
            except BaseException as err:
                if not isinstance(err, Exception):  # an interrupt cut the step off: some parameters may have moved
                    self.torn = True
                raise

    def _batch(self):
        data = self.data
        if data.batches.whole or self.optimizer_name == "lbfgs":
            return data.X, data.y
        idx = data.batches.next().to(data.device)
        return data.X.index_select(0, idx), data.y.index_select(0, idx)

    def _take(self, step: int, last_loss: float | None):
        X, y = self._batch()
        if self.optimizer_name == "lbfgs":
            good = LastGoodState(self.model, self.optimizer, step)

            def closure():
                self.optimizer.zero_grad(set_to_none=True)
                terms = self._loss(X, y, step)
                terms.loss.backward()
                return terms

            terms, self.solve.converged = lbfgs_step(self.optimizer, closure, last_loss)
            if not all_finite(terms.loss, self.model.parameters(), with_grads=False):
                good.restore()
                self._fail(step, terms)
        else:
            self.optimizer.zero_grad(set_to_none=True)
            terms = self._loss(X, y, step)
            terms.loss.backward()
            if not all_finite(terms.loss, self.model.parameters(), with_grads=True):
                self._fail(step, terms)
            self.optimizer.step()
        self.scheduler.step()
        return terms

    def _loss(self, X, y, step: int):
        try:
            return self.model.loss((X, y))
        except NumericalError as err:  # e.g. Cholesky of a K_uu that has NaN in it
            self._fail(step, None, err)

    def _fail(self, step: int, terms, cause: Exception | None = None) -> None:
        attempted = step + 1
        if not all_finite(None, self.model.parameters(), with_grads=False):
            step = self.good.restore()
            self.scheduler.last_epoch = step  # the schedule goes back with the model
        self.optimizer.zero_grad(set_to_none=True)
        raise StepFailed(attempted, step, terms, cause) from cause


__all__ = ["OptimiserStep", "SolveState", "StepData", "StepFailed"]
