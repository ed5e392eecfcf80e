"""Shared runner of the convolutional-GP experiments (van der Wilk, Rasmussen & Hensman 2017 sec. 3): train one
registered model, score it.

Each experiment script (`rectangles`, `mnist01`, `mnist10`, `photo` in this folder) trains a few models
through the same `Trainer` the CLI and the dashboard use, and reports for each: test error and NLPD on the whole
test set, the ELBO on the whole training set at the end (a sum over batches, not a minibatch estimate), the
training time, and the hyper-parameters that tell the story (e.g. the convolutional vs RBF variance split).
Progress goes to stderr; the scripts print one JSON object as their last line.
"""
from __future__ import annotations

import argparse
import json

import torch

from invlab.covariances import Kff_diag
from invlab.train import RunConfig, Trainer

from ..common import arguments, emit, log, timed_run


def parser(doc: str, steps: int, models: list[str]) -> argparse.ArgumentParser:
    p = arguments(doc, quick="100 steps on a tenth of the data (the figures are rough)")
    p.add_argument("--models", default=",".join(models), help=f"comma-separated subset of {','.join(models)}")
    p.add_argument("--steps", type=int, default=steps, help="optimiser steps per model")
    p.add_argument("--lr", type=float, default=0.01, help="Adam's learning rate")
    p.add_argument("--eval-every", type=int, default=500, help="report test metrics every this many steps")
    p.add_argument("--seed", type=int, default=0)
    return p


def shrink(args, data: dict) -> dict:
    """`--quick` / `--smoke`: fewer steps and a smaller `data` (its `source_options`), returned as a new dict."""
    if not args.quick:
        return data
    options = dict(data.get("source_options") or {})
    fraction = 0.05 if args.smoke else 0.1
    for key in ("num_train", "num_test"):
        if key in options:
            options[key] = max(20, int(options[key] * fraction))
    args.steps = min(args.steps, 2 if args.smoke else 100)
    args.eval_every = min(args.eval_every, args.steps)
    return {**data, "source_options": options}


def adam(args) -> dict:
    """The paper's optimiser settings: Adam on minibatches of 100."""
    return {"steps": args.steps, "batch_size": 100, "learning_rate": args.lr, "seed": args.seed}


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
    log(f"[{label}] {model} on {ds.name}: {ds.num_train} train / {ds.num_test} test, {model_config}, {train}")
    seconds = timed_run(trainer, label=label, every=eval_every, describe=lambda snap: (
        f"ELBO(batch) {snap.parts.get('elbo', float('nan')):.5g} "
        f"{ {k: round(v, 5) for k, v in snap.metrics.items()} }"))
    trainer.model.eval()
    metrics = trainer.model.metrics(trainer.X_test, trainer.y_test, batch_size=250)
    # the ELBO over the whole training set in batches of 500 images (a batch of MNIST patches' K_uf is large)
    result = {"label": label, "model": model, "steps": trainer.step_count, "train_seconds": round(seconds, 1),
              "test_error": metrics.get("error"), "test_nlpd": metrics["nlpd"], "num_train": ds.num_train,
              "num_test": ds.num_test, "model_config": model_config, "train": train,
              **trainer.model.full_elbo(trainer.X, trainer.y, batch_size=500),
              **variance_split(trainer.model, trainer.X),
              "jitter": trainer.model.last_jitter, **(analyse(trainer) if analyse else {})}
    log(f"[{label}] done: {json.dumps(result)}")
    return result


def run_models(args, runs: dict[str, tuple[str, dict]], data: dict, **kwargs) -> list[dict]:
    """Train and score the models `--models` names, one after the other; `runs` maps a label to (family, config)."""
    results = []
    for label in args.models.split(","):
        model, model_config = runs[label]
        results.append(run_model(label, model, data, model_config, adam(args), eval_every=args.eval_every, **kwargs))
    return results


def finish(experiment: str, results: list[dict], **extra) -> None:
    emit({"experiment": experiment, "results": results, **extra})
