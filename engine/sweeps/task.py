"""One sweep run as a Dask task: train through the `Trainer` on a worker, without a run store, and hand everything
back to the client (which alone writes the store, so workers need no shared disk).

While it trains the task reports progress as Dask events (`Worker.log_event` on the sweep's topic; the client
subscribes, `invlab.sweeps.events.SweepEvent`s as plain dicts): a `started` event, `step` events a few times a second
at most, and nothing else. It returns plain data
(msgpack/pickle-safe): the config, the history per metric, the final figures, the whole-training-set ELBO (the
Trainer's `full_elbo`, a fixed evaluation seed, to the run's `elbo_precision` where set) with how it was estimated
(`elbo_footing`), the learned invariance values, and the checkpoint file as bytes
(a `torch.save` payload in the format of `invlab.train.checkpoint`, loaded with `weights_only=True`).
"""
from __future__ import annotations

import math
import os
import socket
import tempfile
import time
from pathlib import Path

from ..train.states import RunStatus, SweepEventKind
from .events import SweepEvent

STEP_EVENT_SECONDS = 0.5  # at most this often a running task reports a step


def _worker():
    """The Dask worker running this task, or None (run in-process, e.g. serially)."""
    try:
        from distributed import get_worker

        return get_worker()
    except (ImportError, ValueError):
        return None


def _finite(value):
    return None if value is None or not math.isfinite(value) else float(value)


def estimator_of(model) -> str:
    """How the model's ELBO is estimated: 'exact' (no orbit, or a finite orbit summed whole) or 'S samples per
    input' of an orbit or augmentation density (unbiased, eq. 16–21), plus the likelihood's own expectation method
    where it has one. Runs are compared by ELBO only when this agrees."""
    parts = []
    kernel = getattr(model, "kernel", None)
    augmentation = getattr(model, "augmentation", None)
    if augmentation is not None and kernel is not None and hasattr(kernel, "num_samples"):
        S, P = augmentation.num_samples(kernel.num_samples), augmentation.orbit_size
        parts.append("exact" if P is not None and S >= P else f"{S} samples per input")
    else:
        parts.append("exact")
    likelihood = getattr(model, "likelihood", None)
    for attr in ("estimator", "method", "num_gauss_hermite", "num_quadrature", "num_samples"):
        value = getattr(likelihood, attr, None)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            parts.append(f"likelihood {attr}={value}")
            break
    return "; ".join(parts)


def likelihood_of(model) -> str:
    """The likelihood's class name ('' for a family without one), e.g. 'Gaussian', 'PolyaGammaLogistic'."""
    likelihood = getattr(model, "likelihood", None)
    return "" if likelihood is None else type(likelihood).__name__


def invariance_values(model) -> tuple[dict[str, float], bool]:
    """The augmentation's range values (degrees for rotation) and whether any of them was learned."""
    augmentation = getattr(model, "augmentation", None)
    if augmentation is None or not hasattr(augmentation, "range_values"):
        return {}, False
    from ..parameters import learnables

    values = {k: abs(float(v.detach())) if k in getattr(augmentation, "ranges", {}) else float(v.detach())
              for k, v in augmentation.range_values().items()}
    learned = any(not value.frozen for value in learnables(augmentation).values())
    return values, learned


def checkpoint_bytes(trainer) -> bytes:
    """The trainer's checkpoint as the bytes of the file `invlab.train.checkpoint.save_checkpoint` writes."""
    with tempfile.TemporaryDirectory(prefix="invlab-sweep-") as tmp:
        path = trainer.save_checkpoint(Path(tmp) / "checkpoint.pt")
        return path.read_bytes()


def train_run(config_json: str, key: str, topic: str | None = None, *, threads: int | None = 1) -> dict:
    """Train one run of a sweep and return its results (see the module docstring)."""
    import torch

    from ..errors import InvlabError, NonFiniteLossError
    from ..plugins import load_plugins
    from ..train import RunConfig, Trainer

    load_plugins()  # a worker is its own process: installed plugins register their kernels and orbits here too

    if threads:
        torch.set_num_threads(int(threads))
    worker = _worker()
    where = worker.address if worker is not None else f"{socket.gethostname()}:{os.getpid()}"

    def report(kind: SweepEventKind, **fields) -> None:
        if worker is not None and topic:
            worker.log_event(topic, SweepEvent(kind, key=key, worker=where, **fields).to_dict())

    started, cpu = time.perf_counter(), time.process_time()
    config = RunConfig.from_json(config_json)
    steps = int(config.train_config().steps)
    report(SweepEventKind.STARTED, steps=steps)
    result = {"key": key, "config": config_json, "model": config.model, "dataset": config.data.get("dataset", ""),
              "status": RunStatus.FINISHED, "message": None, "worker": where}
    try:
        trainer = Trainer(config)
    except InvlabError as err:
        return {**result, "status": RunStatus.FAILED, "message": str(err), "step": 0, "history": {}, "figures": {},
                "seconds": time.perf_counter() - started}
    result["dataset"] = trainer.dataset.name
    last = 0.0
    try:
        for snap in trainer.run(every=trainer.tc.log_every):
            now = time.perf_counter()
            if now - last >= STEP_EVENT_SECONDS or snap.step >= steps:
                last = now
                report(SweepEventKind.STEP, step=int(snap.step), steps=steps, elbo=_finite(snap.parts.get("elbo")),
                       loss=_finite(snap.parts.get("loss")))
    except NonFiniteLossError as err:
        result.update(status=RunStatus.FAILED, message=str(err))
    result.update(trained(trainer), seconds=time.perf_counter() - started,
                  cpu_seconds=time.process_time() - cpu)  # the whole worker process's CPU time, this task's mostly
    return result


def trained(trainer) -> dict:
    """What a trained run hands back: its step, history per metric, final figures, whole-training-set ELBO, learned
    invariance values, likelihood, estimator, device and checkpoint bytes."""
    history = {name: ([int(s) for s in steps_], [float(v) for v in values])
               for name, (steps_, values) in trainer.history.items()}
    full = trainer.final_elbo  # computed by the trainer when the run finished: whole training set, seed 0
    metrics = trainer.report.last_metrics
    figures = {"elbo": _finite(trainer.last_parts.get("elbo")), "test_error": metrics.get("test_error"),
               "test_rmse": metrics.get("test_rmse"), "test_nlpd": metrics.get("test_nlpd"),
               "full_elbo": None if full is None else float(full["elbo"])}
    ranges, learned = invariance_values(trainer.model)
    return dict(step=int(trainer.step_count), history=history, figures=figures,
                full_elbo=None if full is None else {k: float(v) for k, v in full.items()},
                ranges=ranges, learned=ranges if learned else {}, likelihood=likelihood_of(trainer.model),
                **elbo_footing(trainer), device=str(trainer.device), checkpoint=checkpoint_bytes(trainer))


def elbo_footing(trainer) -> dict:
    """How the run's whole-data ELBO was estimated: `estimator` (one phrase), its Monte-Carlo standard error
    `elbo_mc_se`, `elbo_samples` per input, `elbo_evaluations` (seeds), the measured `elbo_bias` (None each where
    the run had no `elbo_precision`: one evaluation, error unknown) and `input_shape` (one input's, a list of ints)."""
    estimate = trainer.report.elbo_estimate
    footing = {"estimator": estimator_of(trainer.model) if estimate is None else estimate.phrase(),
               "input_shape": [int(n) for n in trainer.report.parts.input_shape]}
    if estimate is None:
        return {**footing, "elbo_mc_se": None, "elbo_samples": None, "elbo_evaluations": None, "elbo_bias": None,
                "elbo_method": None}
    return {**footing, "elbo_mc_se": _finite(estimate.mc_se), "elbo_samples": int(estimate.samples),
            "elbo_evaluations": int(estimate.evaluations), "elbo_bias": _finite(estimate.bias),
            "elbo_method": estimate.method}


__all__ = ["train_run", "trained", "estimator_of", "elbo_footing", "invariance_values"]
