"""Shared by the invariant-GP experiments (benchmarks/invariant/): train one configuration through the Trainer,
then score it on the whole training set (an unbiased ELBO estimate) and the whole test set.

Runs are sized for a small CPU; every script takes `--steps`, `--num-inducing`, ... so the paper's sizes can
be asked for on a bigger machine. Progress goes to stderr; each script prints one JSON line last.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch

from engine.train import RunConfig, Trainer

from ..convolutional.common import full_elbo as elbo_terms


def common_parser(description: str, **defaults) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--steps", type=int, default=defaults.get("steps", 2000))
    p.add_argument("--num-inducing", type=int, default=defaults.get("num_inducing", 200))
    p.add_argument("--num-samples", type=int, default=defaults.get("num_samples", 8), help="S per input and step")
    p.add_argument("--batch-size", type=int, default=defaults.get("batch_size", 100))
    p.add_argument("--learning-rate", type=float, default=defaults.get("learning_rate", 0.01))
    p.add_argument("--subset", type=int, default=defaults.get("subset", 0), help="training points kept (0: all)")
    p.add_argument("--test-subset", type=int, default=defaults.get("test_subset", 0))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=int(os.environ.get("INVLAB_THREADS", "1")))
    p.add_argument("--dtype", default="auto", choices=["auto", "float64", "float32"])
    p.add_argument("--quick", action="store_true", help="a tiny run that only checks the script works")
    return p


def quick(args) -> None:
    """Shrink a run to seconds (the figures then mean nothing)."""
    args.steps, args.num_inducing, args.num_samples = min(args.steps, 20), min(args.num_inducing, 20), min(args.num_samples, 3)
    args.batch_size, args.subset, args.test_subset = 32, args.subset or 300, args.test_subset or 100


@torch.no_grad()
def full_elbo(model, X, y, batch_size: int = 200) -> float:
    """Σ_n E_q[log p(y_n | f_n)] − KL over the whole training set, each term estimated from fresh samples."""
    return elbo_terms(model, X, y, batch=batch_size)["elbo"]


def train(label: str, model: str, data: dict, model_config: dict, args, *, log_every: int = 50) -> dict:
    """Train one configuration; returns its figures, the learned ranges and their history."""
    torch.set_num_threads(args.threads)
    config = RunConfig(model=model, data=data, model_config=model_config,
                       train={"steps": args.steps, "batch_size": args.batch_size, "learning_rate": args.learning_rate,
                              "seed": args.seed, "dtype": args.dtype, "log_every": log_every, "eval_every": 0,
                              "eval_size": 200})
    trainer = Trainer(config)
    ds = trainer.dataset
    print(f"[{label}] {model} on {ds.name} ({ds.num_train} train / {ds.num_test} test): {model_config}", file=sys.stderr)
    t0 = time.perf_counter()
    for snap in trainer.run(every=max(log_every, args.steps // 20)):
        ranges = {k: round(v, 3) for k, v in snap.parts.items() if k.startswith("range.")}
        print(f"[{label}] step {snap.step} elbo {snap.parts.get('elbo', float('nan')):.1f} {ranges} "
              f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - t0
    m = trainer.model
    m.eval()
    elbo = full_elbo(m, trainer.X, trainer.y)
    metrics = m.metrics(trainer.X_test, trainer.y_test, batch_size=256)
    out = {"label": label, "model": model, "elbo": elbo, "train_seconds": round(seconds, 1), "steps": args.steps,
           "num_train": ds.num_train, "num_test": ds.num_test, **{f"test_{k}": v for k, v in metrics.items()}}
    history = {k[len("range."):]: (s.tolist(), v.tolist()) for k, (s, v) in trainer.snapshot(views=False).history.items()
               if k.startswith("range.")}
    if history:
        out["ranges"] = {k: v[-1] for k, (s, v) in history.items()}
        out["range_history"] = {k: [[int(a), round(b, 3)] for a, b in zip(s, v)][:: max(1, len(s) // 40)]
                                for k, (s, v) in history.items()}
    print(f"[{label}] ELBO {elbo:.1f} | " + " | ".join(f"{k} {v:.4g}" for k, v in metrics.items()) +
          f" | {seconds:.0f} s", file=sys.stderr, flush=True)
    print(f"[{label}] result {json.dumps(out)}", file=sys.stderr, flush=True)  # kept even if a later model is cut short
    return out


def emit(result: dict) -> None:
    print(json.dumps(result))
