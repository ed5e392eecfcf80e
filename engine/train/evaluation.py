"""What a `Trainer` says about its model: test metrics, the whole-data ELBO, snapshots for the page and the CLI,
health verdicts, and predictions in the data's own units.

`evaluate()` scores a bounded, fixed test subset (any sampling seeded, so the same model scores the same);
`snapshot()` is plain numpy and floats, safe to hand to another thread; `predict(X)` takes inputs in the data's own
units and returns means and variances in the target's (see `ModelFamily.predict`). When a run finishes,
`full_elbo()` estimates the ELBO over the whole training set (variational families only; a fixed evaluation seed, so
runs on the same data compare on common random numbers), to the training setting `elbo_precision` where it is set
(`invlab.train.precision`); it is kept in `final_elbo` and stored with the run's final figures.
"""
from __future__ import annotations

import dataclasses
import inspect
import math
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Collection

import numpy as np
import torch

from ..data.dataset import check_inputs
from ..diagnostics import PREDICTION_POINTS, View
from ..models.base import ModelFamily, Numerics, seeded
from .health import Health, assess
from .precision import ElboEstimate, precise_elbo

EVAL_SEED_OFFSET = 2  # evaluations draw from a stream seeded with the run's seed + this


@dataclass
class StepResult:
    """One optimiser step's outcome: its number, the loss, the loss's named parts and its wall time in seconds."""
    step: int
    loss: float
    parts: dict[str, float]
    seconds: float


@dataclass
class Snapshot:
    """A picture of a run at one step: everything here is numpy or Python scalars."""

    step: int
    status: str
    parts: dict[str, float]
    metrics: dict[str, float]
    history: dict[str, tuple[np.ndarray, np.ndarray]]
    views: dict[str, View] = field(default_factory=dict)
    numerics: Numerics = field(default_factory=Numerics)
    steps_per_sec: float = float("nan")
    device: str = "cpu"
    dtype: str = "float64"
    run_id: int | None = None
    warning: str | None = None
    health: Health = field(default_factory=Health)


class StepRate:
    """A run's optimiser steps per second between its last two logged steps (`steps_per_sec`, NaN until known)."""

    def __init__(self):
        self.steps_per_sec = float("nan")
        self.start(0)

    def start(self, step: int) -> None:
        """Count from now, at `step` (a run starts or continues)."""
        self._last = (time.perf_counter(), int(step))

    def tick(self, step: int) -> None:
        """The run has reached `step` now: the rate since the last tick (or start)."""
        now = time.perf_counter()
        then, before = self._last
        if step > before and now > then:
            self.steps_per_sec = (step - before) / (now - then)
        self._last = (now, int(step))


def views_of(model, data, only: Collection[str] | None = None) -> dict[str, View]:
    """The views of a model that is not a `ModelFamily` (any object with `diagnostics(data)`): with `only`, just the
    named ones — passed on when its `diagnostics` takes `only` (and so need not compute the rest), else picked out."""
    if only is None:
        return model.diagnostics(data)
    if isinstance(only, str):
        raise TypeError(f"only is a collection of view names, e.g. {{{only!r}}}; got the string {only!r}")
    takes_only = "only" in inspect.signature(model.diagnostics).parameters
    views = model.diagnostics(data, only=only) if takes_only else model.diagnostics(data)
    return {name: view for name, view in views.items() if name in only}


class EvaluationSubset:
    """The fixed, bounded test subset a run is scored on, a part the `Trainer` holds as `evaluation`.

    `indices` [n] (long, on the data's device): at most `size` test points, drawn once from a generator seeded with
    the run's seed + 1, so every evaluation of a run (and of a run resumed in another process) scores the same
    points. `score(model)` draws any sampling from a stream seeded with the run's seed + `EVAL_SEED_OFFSET`, so the
    same model scores the same and training's streams are untouched. `chance_error` is the test error of the best
    constant answer on the subset, in the target's units; `prediction_data()` the points the prediction views show."""

    def __init__(self, X_test: torch.Tensor, y_test: torch.Tensor, *, seed: int, size: int):
        self.X_test, self.y_test, self.seed = X_test, y_test, int(seed)
        self.indices = torch.randperm(len(X_test), generator=torch.Generator().manual_seed(self.seed + 1))[
            :size].to(X_test.device)
        self.chance_error = float("nan")  # set by `set_chance_error` once the model (and its target scale) exists

    def points(self, n: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(X [n, ...], y [n]) of the subset, its first `n` points with `n` given."""
        idx = self.indices if n is None else self.indices[:n]
        return self.X_test.index_select(0, idx), self.y_test.index_select(0, idx)

    def prediction_data(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The test points the views of predictions show: the first PREDICTION_POINTS of the subset."""
        return self.points(PREDICTION_POINTS)

    def score(self, model) -> dict[str, float]:
        """`model.metrics` on the subset, prefixed `test_` (test_error, test_nlpd, test_rmse, ...), sampling seeded."""
        with seeded(self.seed + EVAL_SEED_OFFSET, self.X_test.device):
            metrics = model.metrics(*self.points())
        return {f"test_{k}": v for k, v in metrics.items()}

    def set_chance_error(self, task: str, y_train: torch.Tensor, y_std: float) -> float:
        """1 − the most common class's share on the subset (classification), or the RMSE of the training mean in
        the target's units, `y_std` × that of the standardised targets (regression). Health compares with it."""
        _, y = self.points()
        if y.numel() == 0:
            self.chance_error = float("nan")
        elif task == "classification":
            self.chance_error = 1.0 - float(torch.bincount(y.reshape(-1)).max()) / y.numel()
        else:
            mean = y_train.reshape(-1, *y.shape[1:]).mean(0)
            self.chance_error = float(((y - mean) ** 2).mean().sqrt()) * float(y_std or 1.0)
        return self.chance_error


@dataclass(frozen=True)
class ReportParts:
    """What a `TrainerReport` reads that stays for the whole run: the `model` (read under `lock`), the training set
    (X [N, ...], y [N]) and the `evaluation` subset, the data's `task`, `num_classes` and `input_shape` (a sample's
    shape in its own units), the stored run (`record`, a `persistence.StoredRun`), the device and dtype, and the
    optimiser's name."""
    model: torch.nn.Module
    lock: object
    X: torch.Tensor
    y: torch.Tensor
    evaluation: EvaluationSubset
    task: str
    num_classes: int | None
    input_shape: tuple
    record: object
    device: str
    dtype: str
    optimizer: str


@dataclass(frozen=True)
class RunState:
    """The run now, as its report reads it: the step, status, the last step's loss parts, the last warning, the
    step rate, the learning rate and, for an L-BFGS solve, whether it has converged (None otherwise)."""
    step: int
    status: str
    parts: dict[str, float]
    warning: str | None
    steps_per_sec: float
    learning_rate: float
    converged: bool | None


class TrainerReport:
    """What a `Trainer` says about its model, a part the trainer holds as `report`: test metrics on its
    `EvaluationSubset`, the whole-data ELBO, `Snapshot`s, health verdicts and predictions.

    It keeps the run's history (`history`: metric name -> ([step], [value]), one value per step), its last test
    metrics (`last_metrics`) and its last `Numerics` (`last_numerics`). It reads the run's fixed parts (`parts`, a
    `ReportParts`) and, each time it reports, the run as it is then (`now()`, a `RunState`)."""

    def __init__(self, parts: ReportParts, now: Callable[[], RunState]):
        self.parts, self.now = parts, now
        self.history: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
        self.last_metrics: dict[str, float] = {}
        self.last_numerics: Numerics | None = None
        self.elbo_estimate: ElboEstimate | None = None  # how the last whole-data ELBO was reached, with a precision

    @torch.no_grad()
    def evaluate(self) -> dict[str, float]:
        """Test metrics on the evaluation subset; any sampling is seeded, so the same model scores the same."""
        p = self.parts
        with p.lock:
            metrics = p.evaluation.score(p.model)
            self.last_numerics = p.model.numerics()  # cheap next to the evaluation; health reads it
        self.last_metrics = metrics
        self.record(metrics)
        return metrics

    def full_elbo(self, *, batch_size: int = 1000, seed: int = 0, precision: float = 0.0) -> dict[str, float] | None:
        """The model's ELBO over the whole training set ({"elbo", "expected_log_lik", "kl"}), an unbiased estimate
        with sampling seeded by `seed`; None for a family that is not variational (GWI, RKHS). With `precision` > 0,
        estimated to that Monte-Carlo standard error (`invlab.train.precision.precise_elbo`, kept as
        `elbo_estimate`): the figures gain mc_se, samples, evaluations, exact and bias."""
        p = self.parts
        full_elbo = getattr(p.model, "full_elbo", None)
        self.elbo_estimate = None
        if full_elbo is None:
            return None
        with p.lock:
            if precision > 0:
                self.elbo_estimate = precise_elbo(p.model, p.X, p.y, target_se=precision, batch_size=batch_size,
                                                  seed=seed)
                return self.elbo_estimate.terms()
            return full_elbo(p.X, p.y, batch_size=batch_size, seed=seed)

    def record(self, values: dict[str, float], step: int | None = None) -> None:
        """Append `values` (name -> float) at `step` (default: the run's step now) to the history and buffer them for
        the run store; a value at a step the metric already has (evaluated again at the same step: at the end, or on
        a resume of a finished run) replaces it, as in the store, which keeps one value per (step, name)."""
        step = self.now().step if step is None else step
        for k, v in values.items():
            steps, series = self.history[k]
            if steps and steps[-1] == step:
                series[-1] = v
            else:
                steps.append(step)
                series.append(v)
        record = self.parts.record
        if record.store is not None:
            record.store.metrics.log(record.run_id, step, values)

    def snapshot(self, views: bool = True, history: bool = True, only: Collection[str] | None = None) -> Snapshot:
        """The run now. With `views`, the diagnostics and fresh numerics (the views are also queued in the run store
        as the run's latest, written with its next flush); without, the last numerics (from the last views or
        evaluation) with the current jitter, so a snapshot stays cheap. `only`: None (every view) or the names of the
        views to compute, e.g. those on screen: the others cost nothing, are left out of the snapshot, and keep their
        earlier rows in the store. Without `history` the snapshot's history is empty and nothing of the history is
        copied (a page that already receives every new point as it comes)."""
        p = self.parts
        with p.lock:
            now = self.now()
            numerics = self._numerics(fresh=views)
            diag = self._views(now.step, only) if views else {}
        copied = {k: (np.asarray(s, dtype=np.int64), np.asarray(v, dtype=np.float64))
                  for k, (s, v) in self.history.items()} if history else {}
        return Snapshot(now.step, now.status, dict(now.parts), dict(self.last_metrics), copied, diag, numerics,
                        now.steps_per_sec, p.device, p.dtype, p.record.run_id, now.warning,
                        self.health(copied if history else self.history, numerics, now))

    def _numerics(self, fresh: bool) -> Numerics:
        model = self.parts.model
        if fresh or self.last_numerics is None:
            self.last_numerics = model.numerics()
            return self.last_numerics
        jitter = getattr(model, "last_jitter", float("nan"))
        numerics = self.last_numerics
        if isinstance(jitter, float) and math.isfinite(jitter) and jitter != numerics.jitter:
            numerics = dataclasses.replace(numerics, jitter=jitter)
        return numerics

    def _views(self, step: int, only: Collection[str] | None) -> dict[str, View]:
        p = self.parts
        sample = self.diagnostic_data()
        diag = p.model.diagnostics(sample, test=p.evaluation.prediction_data(), only=only) \
            if isinstance(p.model, ModelFamily) else views_of(p.model, sample, only)
        if p.record.store is not None and p.record.run_id is not None:  # written with the next flush
            p.record.store.views.save(p.record.run_id, step, diag)
        return diag

    def health(self, history=None, numerics: Numerics | None = None, now: RunState | None = None) -> Health:
        """The run's health verdict (`invlab.train.health.assess`) from its history and numerics, at `now` (default:
        the run as it is)."""
        p, now = self.parts, now or self.now()
        if history is None:
            history = {k: (list(s), list(v)) for k, (s, v) in self.history.items()}
        return assess(history, numerics if numerics is not None else self.last_numerics, task=p.task,
                      num_classes=p.num_classes, optimizer=p.optimizer, chance_error=p.evaluation.chance_error,
                      learning_rate=now.learning_rate, converged=now.converged)

    def diagnostic_data(self, n: int = 400) -> tuple[torch.Tensor, torch.Tensor]:
        """The first `n` training points (X [n, ...], y [n]), on which the views are computed."""
        X, y = self.parts.X, self.parts.y
        idx = torch.arange(min(n, X.shape[0]), device=X.device)
        return X.index_select(0, idx), y.index_select(0, idx)

    @torch.no_grad()
    def predict(self, X, **options) -> "Prediction":  # noqa: F821
        """The predictive at X [N, ...] in the data's own units (numpy or torch, any float dtype or device): means,
        variances and `quantile(q)` in the target's units, or class probabilities. Options go to the family."""
        p = self.parts
        X = check_inputs(X, p.input_shape)
        with p.lock:
            return p.model.predict(X, **options)
