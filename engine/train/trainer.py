"""The training loop shared by the CLI, notebooks and the dashboard: set-up, the step loop and checkpoints.

A `Trainer` holds its parts as objects: `stepper` (an `OptimiserStep`: the optimiser step itself, its batch and what
it falls back on), `evaluation` (the `EvaluationSubset` it is scored on), `report` (a `TrainerReport`: test metrics,
snapshots, health verdicts, predictions, and the history), `record` (its run in the store, a `StoredRun`: store,
run id, lease, status, heartbeat, checkpoint schedule and pruning), `batches` (the `EpochOrder` it visits its
training points in), `edits` (`LiveEdits`: the one queue of typed edits from another thread), `streams` (its own
`TrainingStreams`), `good` (the `LastGoodState` a step that is not finite goes back to) and `solve` (whether its
L-BFGS solve has converged).

`step()` does one optimiser step; `run(steps, every)` yields `Snapshot`s, plain numpy and floats, safe to hand to
another thread. Changes from another thread are typed edits put on `edits` (`trainer.edits.put(SetValue(...))`),
applied under `lock`, which every step also holds, between two steps. A step whose loss or gradient is not finite
applies no update, leaves the model at its last good state and raises `NonFiniteLossError`; the run can continue from
there. An L-BFGS run stops once its solve has converged (`solve.converged`; the run finishes). Resume is exact, and a
run store keeps checkpoints on a schedule: see `persistence`.
"""
from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path

import torch

from ..errors import NonFiniteLossError
from ..models.base import DataInfo
from ..settings import keep_freed_cpu_memory, resolve_device, resolve_dtype
from .batches import EpochOrder
from .checkpoint import CheckpointError, save_checkpoint
from .config import RunConfig, TrainConfig, more_inducing_than_data
from .evaluation import EvaluationSubset, ReportParts, RunState, Snapshot, StepRate, StepResult, TrainerReport
from .health import kernel_blamed_in_build
from .live import LiveEdits
from .optimisers import make_optimizer
from .persistence import (
    StoredRun,
    data_for_run,
    load_training_state,
    placed_splits,
    trainer_from_checkpoint,
    training_state,
)
from .recovery import LastGoodState, non_finite_error
from .states import RunStatus
from .stepping import OptimiserStep, SolveState, StepData, StepFailed
from .store import RunStore
from .streams import TrainingStreams

__all__ = ["Snapshot", "StepResult", "Trainer", "more_inducing_than_data"]

_clock = time.monotonic


class Trainer:
    """One run's training: `step()`, `run(steps, every)`, `finish()`, checkpoints; its report (`report`: evaluate,
    snapshot, predict), its stored run (`record`) and its live edits (`edits`) are parts.

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
        self.model = self._build_model()
        self.streams = TrainingStreams(self.device)  # training's own copy of torch's global random streams
        self.optimizer_name = self.spec.optimizer if self.tc.optimizer == "auto" else self.tc.optimizer
        self.optimizer = make_optimizer(self.optimizer_name, self.model.parameters(), self.tc.learning_rate)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, self.tc.lr_factor)
        self.lock = threading.RLock()
        self.step_count = 0
        self.status = RunStatus.CREATED
        self.last_parts: dict[str, float] = {}
        notes = [more_inducing_than_data(config.model_params(), ds.num_train), *getattr(ds, "notes", [])]
        self.last_warning: str | None = "; ".join(n for n in notes if n) or None  # the CLI prints it as a note
        self.final_elbo: dict[str, float] | None = None  # `report.full_elbo()` when the run finished
        self.batches = EpochOrder(self.X.shape[0], self.tc.batch_size, self.generator)  # each epoch's minibatches
        self.resume_notes: list[str] = []  # checkpoints `resume` skipped, and why
        self.rate = StepRate()  # steps per second over the last logged steps
        self.evaluation = EvaluationSubset(self.X_test, self.y_test, seed=self.tc.seed, size=self.tc.eval_size)
        self.chance_error = self.evaluation.set_chance_error(ds.task, self.y, getattr(self.model, "y_std", 1.0))
        self.record = StoredRun(store, run_id, config_json=config.to_json(), model=config.model, data_name=ds.name)
        self._assemble_parts()

    def _build_model(self) -> torch.nn.Module:
        """The family's model, built on CPU in float64 (initialisation is cheap and exact there), then moved."""
        ds, config = self.dataset, self.config
        X64 = torch.as_tensor(ds.X_train, dtype=torch.float64)
        with kernel_blamed_in_build(config.model_params(), X64):  # a user's kernel that is not finite is named
            model = self.spec.build(config.model_params(), X64, torch.as_tensor(ds.y_train), DataInfo.of(ds),
                                    generator=self.generator)
        model.jitter = self.tc.jitter
        return model.to(device=self.device, dtype=self.dtype)

    def _assemble_parts(self) -> None:
        """The parts that step, edit and report on the model, each handed what it uses."""
        self.solve = SolveState()  # an L-BFGS solve that has converged (the run stops); a live edit clears it
        self.good = LastGoodState(self.model, self.optimizer)  # what a step that is not finite goes back to
        self.edits = LiveEdits(lock=self.lock, optimizer=self.optimizer, scheduler=self.scheduler, model=self.model,
                               tc=self.tc, good=self.good, solve=self.solve, family=self.spec.name)
        self.stepper = OptimiserStep(model=self.model, optimizer=self.optimizer, optimizer_name=self.optimizer_name,
                                     scheduler=self.scheduler, lock=self.lock, streams=self.streams,
                                     data=StepData(self.X, self.y, self.batches, self.device), good=self.good,
                                     solve=self.solve, edits=self.edits)
        ds = self.dataset
        self.report = TrainerReport(ReportParts(  # test metrics, snapshots, health and predictions; the history
            self.model, self.lock, self.X, self.y, self.evaluation, ds.task, ds.num_classes, ds.X_train.shape[1:],
            self.record, str(self.device), str(self.dtype).replace("torch.", ""), self.optimizer_name), self._now_state)
        self.history = self.report.history  # metric name -> ([step], [value])

    def _now_state(self) -> RunState:
        """The run as its report reads it now."""
        return RunState(self.step_count, self.status, self.last_parts, self.last_warning, self.rate.steps_per_sec,
                        self.edits.current_lr, self.solve.converged if self.optimizer_name == "lbfgs" else None)

    @staticmethod
    def _now() -> float:
        """The clock checkpoint timing reads (a test may replace `_clock`)."""
        return _clock()

    # -- stepping (the step itself is `stepper`'s) --------------------------------------------------------------------
    def _step(self):
        """One optimiser step; returns the loss Terms (tensors, not synced). A live edit refused before it is the
        run's warning; a step that is not finite is said (`NonFiniteLossError`), the model at its last good state."""
        try:
            terms, refused = self.stepper.take(self.step_count, self.last_parts.get("loss"))
        except StepFailed as failed:
            self.step_count = failed.step
            error = non_finite_error(self.model, self.X, self.config.model_params(), failed.terms,
                                     failed.attempted, failed.step, self.edits.current_lr, failed.cause)
            self.last_warning = str(error)
            raise error from failed.cause
        self.last_warning = refused or self.last_warning
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
        """Run `steps` more steps (default: up to the configured total, which a live edit may change while it runs),
        yielding a Snapshot every `every` steps (without a copy of the history when `history` is False: see
        `report.snapshot`).

        `step_gate()`, when given, is entered around each step: a server uses it to take turns with other trainers
        and to pace its steps."""
        end = None if steps is None else self.step_count + int(steps)
        self.final_elbo = None  # the model is about to change; `finish` computes it again
        self.record.claim()  # refused (RunStoreError) while another process trains the run, before anything changes
        self._set_status(RunStatus.RUNNING)
        self.rate.start(self.step_count)
        self.record.start(self.tc, _clock())
        try:
            yield from self._steps(end, every, stop, step_gate or contextlib.nullcontext, history)
        except NonFiniteLossError:
            self._set_status(RunStatus.FAILED, message=self.last_warning)
            self._checkpoint_quietly()  # the good state, so that a resume continues from here
            raise
        except BaseException:  # KeyboardInterrupt included: keep what we have
            self._set_status(RunStatus.INTERRUPTED)
            raise

    def _steps(self, end: int | None, every: int | None, stop, step_gate, history: bool):
        """The loop of `run`: steps until `end` (None: the configured total as it is at each step) or `stop`."""
        while self.step_count < (self.tc.steps if end is None else end):
            if stop is not None and stop.is_set():
                self._set_status(RunStatus.PAUSED)
                self._checkpoint_quietly()  # a paused run continues from where it paused, not an older step
                return
            with step_gate():
                terms = self._step()
            if self.solve.converged:  # the L-BFGS solve is done: more steps would not change it
                self._log(terms)
                self.finish()
                yield self.report.snapshot(views=False, history=history)
                return
            last = self.tc.steps if end is None else end
            self._bookkeeping(terms, last)
            if self.step_count % (every or self.tc.log_every) == 0 or self.step_count == last:
                yield self.report.snapshot(views=False, history=history)
        if self.step_count >= self.tc.steps:  # the configured total, not just this call's share of it
            self.finish()
        else:
            self._set_status(RunStatus.PAUSED)

    def _bookkeeping(self, terms, last: int) -> None:
        """After a step: its metrics logged, an evaluation, a checkpoint or heartbeat, when due."""
        n, tc = self.step_count, self.tc
        if n % tc.log_every == 0 or n == last:
            self._log(terms)
        if tc.eval_every and n % tc.eval_every == 0:
            self.report.evaluate()
        due = self.record.due(n, tc, _clock())
        if due == "checkpoint":
            self.save_checkpoint()
        elif due == "beat":
            self._flush()  # metrics, and a heartbeat that says this process still trains the run

    def _checkpoint_quietly(self) -> None:
        if self.record.store is not None:
            with contextlib.suppress(OSError, CheckpointError):
                self.save_checkpoint()

    # -- the run store and checkpoints (`StoredRun`; resuming in `persistence`) --------------------------------------
    def abandon(self, why: str) -> bool:
        """Mark the run this trainer created `interrupted` if it never trained a step, with `why` and how to train
        its settings again; whether it did. What a page does with the run it built when it closes or builds another."""
        if self.status != RunStatus.CREATED or not self.record.abandon(why):
            return False
        self.status = RunStatus.INTERRUPTED
        return True

    def _set_status(self, status: str, message: str | None = None) -> None:
        self.status = status
        metrics, final = self.report.last_metrics, self.final_elbo
        self.record.write_status(status, self.step_count, message, {
            **{k: metrics.get(k) for k in ("test_error", "test_rmse", "test_nlpd")},
            "elbo": self.last_parts.get("elbo"), "full_elbo": None if final is None else final["elbo"]})

    def _flush(self) -> None:
        self.record.beat(self.step_count, self.last_parts.get("elbo"), self._now())

    def save_checkpoint(self, path: str | Path | None = None) -> Path:
        """Save the state a resume needs (model, optimiser, step, every random stream, the epoch's order); without a
        path, into the run store's directory, keeping the newest `keep_checkpoints`."""
        with self.lock:
            if self.stepper.torn:
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
            self.stepper.torn = False
            self.good.capture(self.step_count)

    @classmethod
    def from_checkpoint(cls, path: str | Path, **kwargs) -> "Trainer":
        """A trainer continuing from the checkpoint at `path`, on the data it was trained on (reloaded from its source
        and checked against the recorded identity), or on `dataset=` if given (same shapes; recorded)."""
        return trainer_from_checkpoint(cls, path, **kwargs)

    def finish(self) -> dict[str, float]:
        """End the run: evaluate on the test set, compute the whole-data ELBO (to the `elbo_precision` standard error
        when set), mark it finished (converged for an L-BFGS solve), save a final checkpoint when stored; returns the
        final test metrics."""
        metrics = self.report.evaluate()
        self.final_elbo = self.report.full_elbo(precision=self.tc.elbo_precision)
        self._set_status(RunStatus.FINISHED, message=f"the L-BFGS solve converged at step {self.step_count}"
                          if self.solve.converged else None)
        if self.record.store is not None:
            self.save_checkpoint()
        return metrics
