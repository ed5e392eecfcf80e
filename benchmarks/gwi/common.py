"""Shared helpers of the GWI experiments (benchmarks/gwi/diabetes.py, benchmarks/gwi/mnist.py).

Both models are trained through the engine's `Trainer`, the code path of the CLI and the dashboard, on the
same data split; test metrics come from `Trainer.evaluate` on the whole test set.
"""
from __future__ import annotations

import math
import statistics
import time

import torch

from invlab.train import RunConfig, Trainer

from ..common import timed_run


def train(model: str, data: dict, model_config: dict, train_config: dict) -> tuple[Trainer, dict, float]:
    t0 = time.perf_counter()  # the time to build the model counts too
    trainer = Trainer(RunConfig(model=model, data=data, model_config=model_config,
                                train={"eval_every": 0, "eval_size": 1_000_000, **train_config}))
    timed_run(trainer)
    return trainer, dict(trainer.report.last_metrics), time.perf_counter() - t0


@torch.no_grad()
def free_temperature_nlpd(trainer: Trainer) -> tuple[float, float]:
    """Test NLPD with α_T fitted on the validation split without the notes' upper bound α_T ≤ 1 (α ∈ [1e-3, 1e3])."""
    model = trainer.model
    bounds = model.temperature_bounds
    model.temperature_bounds = (1e-3, 1e3)
    try:
        m = model.metrics(trainer.X_test, trainer.y_test)
        alpha = float(model.alpha_T)
    finally:
        model.temperature_bounds = bounds
        model.fit_temperature()
    return m["nlpd_tempered"], alpha


def summarise(rows: list[dict], keys: list[str]) -> dict:
    out = {}
    for k in keys:
        values = [r[k] for r in rows if r.get(k) is not None]
        if values:
            out[k] = {"mean": statistics.fmean(values),
                      "std": statistics.stdev(values) if len(values) > 1 else 0.0, "n": len(values)}
    return out


def fmt(stat: dict | None, digits: int = 3) -> str:
    if not stat:
        return "—"
    if stat["n"] == 1:
        return f"{stat['mean']:.{digits}f}"
    return f"{stat['mean']:.{digits}f} ± {stat['std']:.{digits}f}"


def finite(x) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)
