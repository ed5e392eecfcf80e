"""Shared runner of the convolutional-GP experiments (paper 001 sec. 3): train one registered model, score it.

Each experiment script (`rectangles`, `mnist01`, `mnist10`, `photo` in this folder) trains a few models
through the same `Trainer` the CLI and the dashboard use, and reports for each: test error and NLPD on the whole
test set, the ELBO on the whole training set at the end (a sum over batches, not a minibatch estimate), the
training time, and the hyper-parameters that tell the story (e.g. the convolutional vs RBF variance split).
Progress goes to stderr; the scripts print one JSON object as their last line.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch

from engine.covariances import Kff_diag
from engine.train import RunConfig, Trainer


def parser(description: str, steps: int, models: list[str]) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--models", default=",".join(models), help=f"comma-separated subset of {','.join(models)}")
    p.add_argument("--steps", type=int, default=steps, help="optimiser steps per model")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (the machine is shared: 1 by default)")
    p.add_argument("--eval-every", type=int, default=500, help="report test metrics every this many steps")
    p.add_argument("--seed", type=int, default=0)
    return p


@torch.no_grad()
def full_elbo(model, X: torch.Tensor, y: torch.Tensor, batch: int = 500) -> dict[str, float]:
    """Σ_n E_q[log p(y_n | f_n)] − KL(q(u) ‖ p(u)) over the whole training set."""
    Luu = model.prior_cholesky()  # a factor (or, for block models, the blocks' factors)
    ell = 0.0
    for a in range(0, X.shape[0], batch):
        ell += float(model.expected_log_lik(X[a:a + batch], model.likelihood.encode(y[a:a + batch]), Luu).sum())
    kl = float(model.kl(Luu))
    return {"elbo": ell - kl, "expected_log_lik": ell, "kl": kl}


@torch.no_grad()
def variance_split(model, X: torch.Tensor) -> dict[str, float]:
    """Mean prior variance of each part of a summed kernel at the data, and each part's σ²."""
    if not hasattr(model.inducing, "blocks"):
        return {}
    rbf, conv = model.kernel.parts
    b_rbf, b_conv = model.inducing.blocks
    v_rbf = float(Kff_diag(b_rbf, rbf, X[:500]).mean())
    v_conv = float(Kff_diag(b_conv, conv, X[:500]).mean())
    return {"prior_var_rbf": v_rbf, "prior_var_conv": v_conv, "conv_share": v_conv / (v_rbf + v_conv),
            "sigma2_rbf": float(rbf.variance()), "sigma2_g": float(conv.base.variance())}


def run_model(label: str, model: str, data: dict, model_config: dict, train: dict, *, eval_every: int,
              analyse=None) -> dict:
    """Train one model and score it on the whole test set; `analyse(trainer)` may add experiment-specific fields."""
    config = RunConfig(model=model, data=data, model_config=model_config,
                       train={"eval_every": eval_every, "eval_size": 1_000_000, **train})
    trainer = Trainer(config)
    ds = trainer.dataset
    print(f"[{label}] {model} on {ds.name}: {ds.num_train} train / {ds.num_test} test, {model_config}, {train}",
          file=sys.stderr, flush=True)
    start = time.perf_counter()
    for snap in trainer.run(every=eval_every):
        print(f"[{label}] step {snap.step}: ELBO(batch) {snap.parts.get('elbo', float('nan')):.5g} "
              f"{ {k: round(v, 5) for k, v in snap.metrics.items()} } {time.perf_counter() - start:.0f} s",
              file=sys.stderr, flush=True)
    seconds = time.perf_counter() - start
    trainer.model.eval()
    metrics = trainer.model.metrics(trainer.X_test, trainer.y_test, batch_size=250)
    result = {"label": label, "model": model, "steps": trainer.step_count, "train_seconds": round(seconds, 1),
              "test_error": metrics.get("error"), "test_nlpd": metrics["nlpd"], "num_train": ds.num_train,
              "num_test": ds.num_test, "model_config": model_config, "train": train,
              **full_elbo(trainer.model, trainer.X, trainer.y), **variance_split(trainer.model, trainer.X),
              "jitter": trainer.model.last_jitter, **(analyse(trainer) if analyse else {})}
    print(f"[{label}] done: {json.dumps(result)}", file=sys.stderr, flush=True)
    return result


def finish(experiment: str, results: list[dict], **extra) -> None:
    print(json.dumps({"experiment": experiment, "results": results, "torch_threads": torch.get_num_threads(),
                      "cpu_count": os.cpu_count(), "load_average_1min": os.getloadavg()[0], **extra}))
