"""The training loop shared by the CLI, notebooks and the dashboard: set-up, the step loop and checkpoints.

A `Trainer` holds its parts as objects: `evaluation` (the `EvaluationSubset` it is scored on), `report` (a
`TrainerReport`: test metrics, snapshots, health verdicts, predictions, and the history), `record` (its run in the
store, a `StoredRun`: lease, status, heartbeat, checkpoint schedule and pruning), `batches` (the `EpochOrder` it
visits its training points in), `edits` (`LiveEdits` from another thread), `streams` (its own `TrainingStreams`) and
`good` (the `LastGoodState` a step that is not finite goes back to).

`step()` does one optimiser step; `run(steps, every)` yields `Snapshot`s, plain numpy and floats, safe to hand to
another thread. Parameter writes from another thread go through `set_value` / `freeze` under `lock`, which every
step also holds. A step whose loss or gradient is not finite applies no update, leaves the model at its last good
state and raises `NonFiniteLossError`; the run can continue from there. An L-BFGS run stops once its solve has
converged (`converged` is set and the run finishes). Resume is exact, and a run store keeps checkpoints on a
schedule: see `persistence`.
"""
from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path

import torch

from ..errors import NonFiniteLossError, NumericalError
from ..models.base import DataInfo, Numerics
from ..settings import keep_freed_cpu_memory, resolve_device, resolve_dtype
from .batches import EpochOrder
from .checkpoint import CheckpointError, save_checkpoint
from .config import RunConfig, TrainConfig, more_inducing_than_data
from .evaluation import EvaluationSubset, Snapshot, StepRate, StepResult, TrainerReport
from .health import kernel_blamed_in_build
from .live import LiveEdits
from .optimisers import lbfgs_step, make_optimizer
from .persistence import (
    StoredRun,
    data_for_run,
    load_training_state,
    placed_splits,
    resume_trainer,
    trainer_from_checkpoint,
    training_state,
)
from .recovery import LastGoodState, all_finite, non_finite_error
from .states import RunStatus
from .store import RunStore
from .streams import TrainingStreams

__all__ = ["Snapshot", "StepResult", "Trainer", "more_inducing_than_data"]

_clock = time.monotonic


class Trainer:
    """One run's training: `step()`, `run(steps, every)`, `evaluate()`, `snapshot()`, `predict(X)`, checkpoints.

    `dataset=`: train on this `Dataset` instead of loading the config's data (a hand-built one included); the run's
    config then records its identity."""

    def __init__(self, config: RunConfig, *, store: RunStore | None = None, run_id: int | None = None, dataset=None):
        config = config.validate()
        self.tc: TrainConfig = config.train_config()
        self.spec = config.model_spec()
        self.device = resolve_device(self.tc.device)
        if self.device.type == "cpu":
            keep_freed_cpu_memory()  # large step tensors are reused instead of page-faulted in again every step
        self.dtype = resolve_dtype(self.tc.dtype, self.device)
        self.dataset, config = data_for_run(config, dataset, run_id)
        self.config = config
        ds = self.dataset
        self.X, self.y, self.X_test, self.y_test = placed_splits(ds, self.spec, self.device, self.dtype)
        self.generator = torch.Generator().manual_seed(self.tc.seed)
        torch.manual_seed(self.tc.seed)  # Monte-Carlo likelihoods and samplers draw from the global stream
        # build on CPU in float64 (initialisation is cheap and exact there), then move
        X64 = torch.as_tensor(ds.X_train, dtype=torch.float64)
        with kernel_blamed_in_build(config.model_params(), X64):  # a user's kernel that is not finite is named
            model = self.spec.build(config.model_params(), X64, torch.as_tensor(ds.y_train), DataInfo.of(ds),
                                    generator=self.generator)
        model.jitter = self.tc.jitter
        self.model = model.to(device=self.device, dtype=self.dtype)
        self.streams = TrainingStreams(self.device)  # training's own copy of torch's global random streams
        self.optimizer_name = self.spec.optimizer if self.tc.optimizer == "auto" else self.tc.optimizer
        self.optimizer = make_optimizer(self.optimizer_name, self.model.parameters(), self.tc.learning_rate)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, self.tc.lr_factor)
        self.lock = threading.RLock()
        self.edits = LiveEdits(self)  # changes from another thread, applied between steps (see `edit`)
        self.step_count = 0
        self.status = RunStatus.CREATED
        self.report = TrainerReport(self)  # test metrics, snapshots, health and predictions; it keeps the history
        self.history = self.report.history  # metric name -> ([step], [value])
        self.last_parts: dict[str, float] = {}
        notes = [more_inducing_than_data(config.model_params(), ds.num_train), *getattr(ds, "notes", [])]
        self.last_warning: str | None = "; ".join(n for n in notes if n) or None  # the CLI prints it as a note
        self.final_elbo: dict[str, float] | None = None  # `full_elbo()` when the run finished
        self.batches = EpochOrder(self.X.shape[0], self.tc.batch_size, self.generator)  # each epoch's minibatches
        self._torn = False  # a step was cut off midway (e.g. a second Ctrl-C): the state is not fit to save
        self.resume_notes: list[str] = []  # checkpoints `resume` skipped, and why
        self.rate = StepRate()  # steps per second over the last logged steps
        self.evaluation = EvaluationSubset(self.X_test, self.y_test, seed=self.tc.seed, size=self.tc.eval_size)
        self.chance_error = self.evaluation.set_chance_error(ds.task, self.y, getattr(self.model, "y_std", 1.0))
        self.converged = False  # an L-BFGS solve that has converged (the run stops); a live edit clears it
        self.good = LastGoodState(self.model, self.optimizer)  # what a step that is not finite goes back to
        self.record = StoredRun(store, run_id, config_json=config.to_json(), model=config.model, data_name=ds.name)

    @property
    def store(self) -> RunStore | None:
        """The run store this trainer's run is kept in (None: nowhere)."""
        return self.record.store

    @property
    def run_id(self) -> int | None:
        """The stored run's id (None without a store)."""
        return self.record.run_id

    @property
    def lease(self) -> str | None:
        """This trainer's claim on its stored run (see `claim`), or None."""
        return self.record.lease

    @property
    def last_metrics(self) -> dict[str, float]:
        """The last evaluation's test metrics (`TrainerReport.last_metrics`)."""
        return self.report.last_metrics

    @property
    def last_numerics(self) -> Numerics | None:
        """The model's numerics at the last views or evaluation (`TrainerReport.last_numerics`)."""
        return self.report.last_numerics

    # -- what the trainer says about its model (`TrainerReport`) ------------------------------------------------------
    def evaluate(self) -> dict[str, float]:
        """Test metrics on the evaluation subset, recorded in the history (`TrainerReport.evaluate`)."""
        return self.report.evaluate()

    def full_elbo(self, **options) -> dict[str, float] | None:
        """The ELBO over the whole training set, or None (`TrainerReport.full_elbo`: `batch_size`, `seed`)."""
        return self.report.full_elbo(**options)

    def snapshot(self, views: bool = True, history: bool = True, only=None) -> Snapshot:
        """The run now, as numpy and floats (`TrainerReport.snapshot`)."""
        return self.report.snapshot(views, history, only)

    def health(self, history=None, numerics: Numerics | None = None):
        """The run's `Health` verdict from its history and numerics (`TrainerReport.health`)."""
        return self.report.health(history, numerics)

    def predict(self, X, **options):
        """The predictive at X [N, ...] in the data's own units (`TrainerReport.predict`)."""
        return self.report.predict(X, **options)

    @staticmethod
    def _now() -> float:
        """The clock checkpoint timing reads (a test may replace `_clock`)."""
        return _clock()

    def _next_batch(self):
        if self.batches.whole or self.optimizer_name == "lbfgs":
            return self.X, self.y
        idx = self.batches.next().to(self.device)
        return self.X.index_select(0, idx), self.y.index_select(0, idx)

    # -- a step that goes wrong (`recovery`) -------------------------------------------------------------------------
    def _fail(self, terms, attempted: int, cause: Exception | None = None) -> None:
        if not all_finite(None, self.model.parameters(), with_grads=False):
            self.step_count = self.good.restore()
        self.optimizer.zero_grad(set_to_none=True)
        error = non_finite_error(self.model, self.X, self.config.model_params(), terms, attempted, self.step_count,
                                 self.current_lr, cause)
        self.last_warning = str(error)
        raise error from cause

    def _loss(self, X, y, attempted: int):
        try:
            return self.model.loss((X, y))
        except NumericalError as err:  # e.g. Cholesky of a K_uu that has NaN in it
            self._fail(None, attempted, err)

    # -- live edits from another thread (`LiveEdits`) ----------------------------------------------------------------
    def edit(self, change) -> bool:
        """Apply `change(trainer)` now if no step is running, else just before the next step; True if applied now
        (`LiveEdits.edit`)."""
        return self.edits.edit(change)

    def set_value(self, name: str, value) -> None:
        """Set the learnable named `name` to `value` under the lock, from the next step on (`LiveEdits.set_value`)."""
        self.edits.set_value(name, value)

    def freeze(self, name: str, frozen: bool = True) -> None:
        """Freeze (or free) the learnable named `name` under the lock (`LiveEdits.freeze`)."""
        self.edits.freeze(name, frozen)

    def learnable(self, name: str):
        """The model's learnable value `name` (`LiveEdits.learnable`)."""
        return self.edits.learnable(name)

    def set_learning_rate(self, lr: float) -> None:
        """Set the learning rate `lr` under the lock, at once (`LiveEdits.set_learning_rate`)."""
        self.edits.set_learning_rate(lr)

    # -- stepping -----------------------------------------------------------------------------------------------------
    @property
    def current_lr(self) -> float:
        """The learning rate the optimiser uses at this step (the schedule applied)."""
        return float(self.optimizer.param_groups[0]["lr"])

    def _step(self):
        """One optimiser step under the lock; returns the loss Terms (tensors, not synced)."""
        with self.lock:
            self.edits.apply_pending()
            try:
                with self.streams.inside():
                    return self._step_locked()
            except NonFiniteLossError:
                raise  # the model is at its last good state
            except BaseException as err:
                if not isinstance(err, Exception):  # an interrupt cut the step off: some parameters may have moved
                    self._torn = True
                raise

    def _step_locked(self):
        """The step itself: the lock held, training's random streams in place."""
        attempted = self.step_count + 1
        X, y = self._next_batch()
        if self.optimizer_name == "lbfgs":
            good = LastGoodState(self.model, self.optimizer, self.step_count)

            def closure():
                self.optimizer.zero_grad(set_to_none=True)
                terms = self._loss(X, y, attempted)
                terms.loss.backward()
                return terms

            terms, converged = lbfgs_step(self.optimizer, closure, self.last_parts.get("loss"))
            if not all_finite(terms.loss, self.model.parameters(), with_grads=False):
                self.step_count = good.restore()
                self._fail(terms, attempted)
            self.converged = converged
        else:
            self.optimizer.zero_grad(set_to_none=True)
            terms = self._loss(X, y, attempted)
            terms.loss.backward()
            if not all_finite(terms.loss, self.model.parameters(), with_grads=True):
                self._fail(terms, attempted)
            self.optimizer.step()
        self.scheduler.step()
        self.step_count += 1
        return terms

    def step(self) -> StepResult:
        """One optimiser step under the lock, its metrics logged; returns its `StepResult` (step number, loss, parts,
        seconds)."""
        t0 = time.perf_counter()
        terms = self._step()
        self._log(terms)
        return StepResult(self.step_count, float(terms.loss.detach()), dict(self.last_parts), time.perf_counter() - t0)

    def _log(self, terms) -> None:
        parts = {"loss": float(terms.loss.detach())}
        parts.update({k: float(v.detach()) for k, v in terms.parts.items()})
        self.last_parts = parts
        self.report.record(parts)
        self.good.capture(self.step_count)
        self.rate.tick(self.step_count)

    def run(self, steps: int | None = None, every: int | None = None, stop: threading.Event | None = None,
            step_gate: Callable[[], contextlib.AbstractContextManager] | None = None, history: bool = True):
        """Run `steps` more steps (default: up to the configured total), yielding a Snapshot every `every` steps
        (without a copy of the history when `history` is False: see `snapshot`).

        `step_gate()`, when given, is entered around each step: a server uses it to take turns with other trainers
        and to pace its steps."""
        tc = self.tc
        steps = max(tc.steps - self.step_count, 0) if steps is None else int(steps)
        every = every or tc.log_every
        end = self.step_count + steps
        self.final_elbo = None  # the model is about to change; `finish` computes it again
        self.claim()  # refused (RunStoreError) while another process trains the run, before anything changes
        self._set_status(RunStatus.RUNNING)
        self.rate.start(self.step_count)
        self.record.start(tc, _clock())
        try:
            while self.step_count < end:
                if stop is not None and stop.is_set():
                    self._set_status(RunStatus.PAUSED)
                    if self.store is not None:  # a paused run continues from where it paused, not an older step
                        with contextlib.suppress(OSError, CheckpointError):
                            self.save_checkpoint()
                    break
                if step_gate is None:
                    terms = self._step()
                else:
                    with step_gate():
                        terms = self._step()
                n = self.step_count
                if self.converged:  # the L-BFGS solve is done: more steps would not change it
                    self._log(terms)
                    self.finish()
                    yield self.snapshot(views=False, history=history)
                    return
                if n % tc.log_every == 0 or n == end:
                    self._log(terms)
                if tc.eval_every and n % tc.eval_every == 0:
                    self.evaluate()
                due = self.record.due(n, tc, _clock())
                if due == "checkpoint":
                    self.save_checkpoint()
                elif due == "beat":
                    self._flush()  # metrics, and a heartbeat that says this process still trains the run
                if n % every == 0 or n == end:
                    yield self.snapshot(views=False, history=history)
            else:
                if self.step_count >= tc.steps:  # the configured total, not just this call's share of it
                    self.finish()
                else:
                    self._set_status(RunStatus.PAUSED)
        except NonFiniteLossError:
            self._set_status(RunStatus.FAILED, message=self.last_warning)
            if self.store is not None:  # the good state, so that a resume continues from here
                with contextlib.suppress(OSError, CheckpointError):
                    self.save_checkpoint()
            raise
        except BaseException:  # KeyboardInterrupt included: keep what we have
            self._set_status(RunStatus.INTERRUPTED)
            raise

    # -- the run store and checkpoints (`StoredRun`; resuming in `persistence`) --------------------------------------
    def claim(self) -> None:
        """Take (or renew) this trainer's lease on its stored run (`StoredRun.claim`; `RunStoreError` names the
        process that holds it); nothing without a store."""
        self.record.claim()

    def release(self, status: str = RunStatus.PAUSED) -> None:
        """Give the stored run back, marked `status`, without training it further (a resumed trainer that will not
        run, say in a notebook): another trainer or process may claim it."""
        self.record.release(status)

    def abandon(self, why: str) -> bool:
        """Mark the run this trainer created `interrupted` if it never trained a step, with `why` and how to train
        its settings again; whether it did. What a page does with the run it built when it closes or builds another."""
        if self.status != RunStatus.CREATED or not self.record.abandon(why):
            return False
        self.status = RunStatus.INTERRUPTED
        return True

    def _set_status(self, status: str, message: str | None = None) -> None:
        self.status = status
        metrics, final = self.last_metrics, self.final_elbo
        self.record.write_status(status, self.step_count, message, {
            **{k: metrics.get(k) for k in ("test_error", "test_rmse", "test_nlpd")},
            "elbo": self.last_parts.get("elbo"), "full_elbo": None if final is None else final["elbo"]})

    def _flush(self) -> None:
        self.record.beat(self.step_count, self.last_parts.get("elbo"), self._now())

    def save_checkpoint(self, path: str | Path | None = None) -> Path:
        """Save the state a resume needs (model, optimiser, step, every random stream, the epoch's order); without a
        path, into the run store's directory, keeping the newest `keep_checkpoints`."""
        with self.lock:
            if self._torn:
                raise CheckpointError("a step was cut off midway, so the model may be half-updated; no checkpoint was "
                                      "written (the run can resume from its previous checkpoint)")
            began = self._now()
            path = save_checkpoint(self.record.checkpoint_path(self.step_count) if path is None else path,
                                   **training_state(self))
            self.record.checkpoint_written(self.step_count, path, self.last_parts.get("elbo"), self.tc, began,
                                           self._now())
            return path

    def load_state(self, payload: dict) -> None:
        """Continue from a checkpoint's state (see `save_checkpoint`). The learning rate is the configured one at
        the checkpoint's step of the schedule (a resume may have changed it)."""
        with self.lock:
            load_training_state(self, payload)
            self._torn = False
            self.good.capture(self.step_count)

    @classmethod
    def from_checkpoint(cls, path: str | Path, **kwargs) -> "Trainer":
        """A trainer continuing from the checkpoint at `path`, on the data it was trained on (reloaded from its source
        and checked against the recorded identity), or on `dataset=` if given (same shapes; recorded)."""
        return trainer_from_checkpoint(cls, path, **kwargs)

    @classmethod
    def resume(cls, store: RunStore, run_id: int, dataset=None, train: dict | None = None) -> "Trainer":
        """Continue stored run `run_id` from its newest checkpoint that loads, with `train` settings changed from here
        on; metrics logged after it are dropped (see `persistence.resume_trainer`)."""
        return resume_trainer(cls, store, run_id, dataset, train)

    def finish(self) -> dict[str, float]:
        """End the run: evaluate on the test set, compute the whole-data ELBO, mark it finished (converged for an L-BFGS
        solve), save a final checkpoint when stored; returns the final test metrics."""
        metrics = self.evaluate()
        self.final_elbo = self.full_elbo()
        self._set_status(RunStatus.FINISHED, message=f"the L-BFGS solve converged at step {self.step_count}"
                          if self.converged else None)
        if self.store is not None:
            self.save_checkpoint()
        return metrics
