"""The training loop shared by the CLI, notebooks and the dashboard.

The `Trainer` is grouped by job: set-up and the step loop here; evaluation, snapshots and predictions in
`evaluation`; the run store, checkpoints, resume and the data a run knows in `persistence`. Parts it holds as
objects: the test subset it is scored on (`evaluation`, an `EvaluationSubset`), its live edits from another thread
(`edits`, a `LiveEdits` from `live`) and its own random streams (`streams`, a `TrainingStreams` from `streams`).

`Trainer.step()` does one optimiser step; `run(steps, every)` yields `Snapshot`s; `evaluate()` scores a
bounded, fixed test subset; `snapshot()` is plain numpy and floats, safe to hand to another thread.
Parameter writes from another thread go through `set_value` / `freeze` under `lock`, which every step
also holds. A step whose loss or gradient is not finite applies no update, leaves the model at its last
good state and raises `NonFiniteLossError`; the run can continue from there.

When a run finishes, `full_elbo()` estimates the ELBO over the whole training set (variational families only; a
fixed evaluation seed, so runs on the same data compare on common random numbers); it is kept in `final_elbo` and
stored with the run's final figures.

Each snapshot carries the model's `Numerics` (recomputed with the views and at each evaluation, reused in
between) and a `Health` verdict (`invlab.train.health`). An L-BFGS run stops once its solve has converged
(`converged` is set and the run finishes) instead of running out its configured steps.

Resume is exact: a run stopped at any step (mid-epoch included) and resumed from its checkpoint, in another process,
takes the same steps as one never stopped. Everything random a step uses is the trainer's own: its generator
(initialisation, minibatch permutations) and its copy of torch's global CPU stream and, on a GPU, that device's
stream (sampled orbits, Monte-Carlo likelihoods), swapped in for each step and out after it. Evaluations draw from
a seeded stream of their own (the same model scores the same) and views from the process's, so neither changes what
training draws. A checkpoint keeps all of
these and the position in the current epoch. (Trainers stepping at the same moment in threads of one process share
torch's global stream during their steps, so there the draws are not reproducible.)

With a run store, checkpoints are written every `checkpoint_seconds` (by default every 30 s, stretched so that
saving takes at most 2 % of the time) and every `checkpoint_every` steps, and the newest `keep_checkpoints` are kept.
`Trainer.resume` continues from the newest checkpoint that loads, saying which it skipped, or refuses with a
`CheckpointError` and changes nothing; only metrics logged after the checkpoint it continues from are dropped.
"""
from __future__ import annotations

import contextlib
import copy
import math
import threading
import time
from collections import defaultdict
from collections.abc import Callable

import torch

from ..errors import ConfigError, NonFiniteLossError, NumericalError
from ..models.base import DataInfo, Numerics
from ..settings import keep_freed_cpu_memory, resolve_device, resolve_dtype
from .checkpoint import CheckpointError
from .config import RunConfig, TrainConfig, more_inducing_than_data
from .evaluation import EVAL_SEED_OFFSET, EvaluationSubset, Snapshot, StepResult, TrainerEvaluation
from .health import kernel_blamed_in_build, kernel_fault
from .live import EDIT_WAIT_SECONDS, LiveEdits
from .persistence import CHECKPOINT_SHARE, TrainerPersistence, data_for_run
from .states import RunStatus
from .store import HEARTBEAT_SECONDS, RunStore
from .streams import TrainingStreams

__all__ = ["CHECKPOINT_SHARE", "EDIT_WAIT_SECONDS", "EVAL_SEED_OFFSET", "Snapshot", "StepResult", "Trainer",
           "more_inducing_than_data"]

_clock = time.monotonic


class Trainer(TrainerEvaluation, TrainerPersistence):
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
        self._place_data(ds)
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
        self.optimizer = self._make_optimizer()
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, self._lr_factor)
        self.lock = threading.RLock()
        self.edits = LiveEdits(self)  # changes from another thread, applied between steps (see `edit`)
        self.step_count = 0
        self.status = RunStatus.CREATED
        self.history: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
        self.last_parts: dict[str, float] = {}
        self.last_metrics: dict[str, float] = {}
        notes = [more_inducing_than_data(config.model_params(), ds.num_train), *getattr(ds, "notes", [])]
        self.last_warning: str | None = "; ".join(n for n in notes if n) or None  # the CLI prints it as a note
        self.final_elbo: dict[str, float] | None = None  # `full_elbo()` when the run finished
        self._order = torch.empty(0, dtype=torch.long)
        self._cursor = 0
        self._torn = False  # a step was cut off midway (e.g. a second Ctrl-C): the state is not fit to save
        self._next_checkpoint = math.inf  # when a time-based checkpoint is due (`_clock()`), set by `run`
        self._last_beat = -math.inf
        self.resume_notes: list[str] = []  # checkpoints `resume` skipped, and why
        self._rate = (time.perf_counter(), 0)
        self._steps_per_sec = float("nan")
        self.evaluation = EvaluationSubset(self.X_test, self.y_test, seed=self.tc.seed, size=self.tc.eval_size)
        self.chance_error = self.evaluation.set_chance_error(ds.task, self.y, getattr(self.model, "y_std", 1.0))
        self.converged = False  # an L-BFGS solve that has converged (the run stops); a live edit clears it
        self.last_numerics: Numerics | None = None
        self._good = self._capture()
        self.store, self.run_id = store, run_id
        self.lease: str | None = None  # this trainer's claim on its stored run (see `claim`)
        self._created_run = store is not None and run_id is None
        if self._created_run:
            self.run_id = store.create_run(config.to_json(), config.model, ds.name)

    # -- set-up helpers ------------------------------------------------------------------------------------------
    def _place_data(self, ds) -> None:
        """Refuse data the model family cannot train on (ConfigError); put the splits on the run's device and dtype:
        X [N, D] or [N, C, H, W], y [N] (class indices, or standardised targets)."""
        if ds.task not in self.spec.tasks:
            raise ConfigError(f"model {self.spec.name!r} does not support {ds.task} data ({ds.name}); "
                              f"it supports {', '.join(self.spec.tasks)}")
        if self.spec.image_only and not ds.is_image:
            raise ConfigError(f"model {self.spec.name!r} needs image data; {ds.name} is tabular")
        self.X = torch.as_tensor(ds.X_train, dtype=self.dtype, device=self.device)
        self.y = self._labels(ds.y_train)
        self.X_test = torch.as_tensor(ds.X_test, dtype=self.dtype, device=self.device)
        self.y_test = self._labels(ds.y_test)

    @staticmethod
    def _now() -> float:
        """The clock checkpoint timing reads (a test may replace `_clock`)."""
        return _clock()

    def _labels(self, y):
        y = torch.as_tensor(y, device=self.device)
        return y.long() if self.dataset.task == "classification" else y.to(self.dtype)

    def _make_optimizer(self):
        params = [p for p in self.model.parameters()]
        if self.optimizer_name == "lbfgs":
            return torch.optim.LBFGS(params, lr=self.tc.learning_rate, max_iter=20, history_size=20,
                                     line_search_fn="strong_wolfe")
        return torch.optim.Adam(params, lr=self.tc.learning_rate)

    def _lr_factor(self, step: int) -> float:
        total, r = max(self.tc.steps, 1), self.tc.final_lr_ratio
        frac = min(step / total, 1.0)
        if self.tc.schedule == "cosine":
            return r + (1 - r) * 0.5 * (1 + math.cos(math.pi * frac))
        if self.tc.schedule == "exponential":
            return max(r, 1e-12) ** frac
        return 1.0

    def _next_batch(self):
        N, B = self.X.shape[0], self.tc.batch_size
        if B == 0 or B >= N or self.optimizer_name == "lbfgs":
            return self.X, self.y
        if self._cursor + B > len(self._order):
            self._order = torch.randperm(N, generator=self.generator)
            self._cursor = 0
        idx = self._order[self._cursor:self._cursor + B].to(self.device)
        self._cursor += B
        return self.X.index_select(0, idx), self.y.index_select(0, idx)

    # -- good state / recovery --------------------------------------------------------------------------------------
    def _capture(self):
        return ({k: v.detach().clone() for k, v in self.model.state_dict().items()},
                copy.deepcopy(self.optimizer.state_dict()), self.step_count)

    def _restore(self, good) -> None:
        model_state, opt_state, step = good
        self.model.load_state_dict(model_state)
        self.optimizer.load_state_dict(copy.deepcopy(opt_state))
        self.step_count = step

    def _all_finite(self, loss: torch.Tensor | None, with_grads: bool) -> bool:
        checks = [] if loss is None else [torch.isfinite(loss).all()]
        for p in self.model.parameters():
            checks.append(torch.isfinite(p).all())
            if with_grads and p.grad is not None:
                checks.append(torch.isfinite(p.grad).all())
        return bool(torch.stack(checks).all())  # the step's one host sync

    def _fail(self, terms, attempted: int, cause: Exception | None = None) -> None:
        bad = [k for k, v in terms.parts.items() if not bool(torch.isfinite(v).all())] if terms is not None else []
        if not self._all_finite(None, with_grads=False):
            self._restore(self._good)
        self.optimizer.zero_grad(set_to_none=True)
        what = f" ({', '.join(bad)} not finite)" if bad else (f" ({cause})" if cause is not None else "")
        # a user's kernel that is not finite on finite inputs is the cause, not the hyper-parameters: say so
        fault = kernel_fault(self.model, self.X, f"at step {attempted}", self.config.model_params())
        msg = (f"{fault}. No update was applied; the model is at step {self.step_count}, its last good state."
               if fault is not None else
               f"step {attempted} produced a non-finite loss or gradient{what}; no update was applied and the model "
               f"is at step {self.step_count}, its last good state. Lower the learning rate (now {self.current_lr:g}) "
               f"or raise the jitter, then continue.")
        self.last_warning = msg
        error = NonFiniteLossError(msg)
        error.kernel_fault = fault is not None
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
            good = self._capture()
            holder = {}
            counters = self.optimizer.state[self.optimizer.param_groups[0]["params"][0]]  # torch keeps them there
            before = (counters.get("n_iter", 0), counters.get("func_evals", 0), self.last_parts.get("loss"))

            def closure():
                self.optimizer.zero_grad(set_to_none=True)
                terms = self._loss(X, y, attempted)
                terms.loss.backward()
                holder["terms"] = terms
                return terms.loss

            self.optimizer.step(closure)
            terms = holder["terms"]
            if not self._all_finite(terms.loss, with_grads=False):
                self._restore(good)
                self._fail(terms, attempted)
            self.converged = self._solve_converged(counters, before, terms)
        else:
            self.optimizer.zero_grad(set_to_none=True)
            terms = self._loss(X, y, attempted)
            terms.loss.backward()
            if not self._all_finite(terms.loss, with_grads=True):
                self._fail(terms, attempted)
            self.optimizer.step()
        self.scheduler.step()
        self.step_count += 1
        return terms

    def _solve_converged(self, counters, before, terms) -> bool:
        """Whether this L-BFGS step ended its solve on a tolerance: torch stops an inner loop early (fewer iterations
        and evaluations than allowed) only when the gradient, the step or the loss change is below its tolerance.
        A loss that did not change from the last step counts too."""
        group = self.optimizer.param_groups[0]
        iters, evals = counters.get("n_iter", 0) - before[0], counters.get("func_evals", 0) - before[1]
        if iters < group["max_iter"] and evals < group["max_eval"]:
            return True
        previous, loss = before[2], float(terms.loss.detach())
        return previous is not None and abs(loss - previous) <= 1e-12 * max(abs(loss), 1.0)

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
        self._record(parts)
        self._good = self._capture()
        now = time.perf_counter()
        t_prev, s_prev = self._rate
        if self.step_count > s_prev and now > t_prev:
            self._steps_per_sec = (self.step_count - s_prev) / (now - t_prev)
        self._rate = (now, self.step_count)

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
        self._rate = (time.perf_counter(), self.step_count)
        self._next_checkpoint = _clock() + tc.checkpoint_seconds if tc.checkpoint_seconds else math.inf
        self._last_beat = _clock()
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
                if self.store is not None:
                    if tc.checkpoint_every and n % tc.checkpoint_every == 0 or _clock() >= self._next_checkpoint:
                        self.save_checkpoint()
                    elif n % tc.flush_every == 0 or _clock() - self._last_beat >= HEARTBEAT_SECONDS:
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
