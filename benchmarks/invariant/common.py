"""Shared by the invariant-GP experiments (benchmarks/invariant/): train one configuration through the Trainer,
then score it on the whole training set (an unbiased ELBO estimate) and the whole test set.

Runs are sized for a small CPU; every script takes `--steps`, `--num-inducing`, ... so the paper's sizes can
be asked for on a bigger machine. Progress goes to stderr; each script prints one JSON line last.
"""
from __future__ import annotations

import argparse
import json

import torch

from invlab.likelihoods.calibration import expected_calibration_error
from invlab.train import RunConfig, Trainer

from ..common import arguments, log, parse, timed_run


def common_parser(doc: str, **defaults) -> argparse.ArgumentParser:
    p = arguments(doc, quick="a tiny run that only checks the script works")
    p.add_argument("--steps", type=int, default=defaults.get("steps", 2000))
    p.add_argument("--num-inducing", type=int, default=defaults.get("num_inducing", 200))
    p.add_argument("--num-samples", type=int, default=defaults.get("num_samples", 8), help="S per input and step")
    p.add_argument("--batch-size", type=int, default=defaults.get("batch_size", 100))
    p.add_argument("--learning-rate", type=float, default=defaults.get("learning_rate", 0.01))
    p.add_argument("--subset", type=int, default=defaults.get("subset", 0), help="training points kept (0: all)")
    p.add_argument("--test-subset", type=int, default=defaults.get("test_subset", 0))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", default="auto", choices=["auto", "float64", "float32"])
    return p


def parse_args(p: argparse.ArgumentParser, argv=None) -> argparse.Namespace:
    """Parse the flags; `--quick` shrinks a run to seconds (the figures then mean nothing)."""
    args = parse(p, argv)
    if args.quick:
        args.steps, args.num_inducing = min(args.steps, 20), min(args.num_inducing, 20)
        args.num_samples, args.batch_size = min(args.num_samples, 3), 32
        args.subset, args.test_subset = args.subset or 300, args.test_subset or 100
    return args


@torch.no_grad()
def test_ece(model, X, y, batch_size: int = 256) -> float:
    """Expected calibration error (15 bins) of the model's class probabilities on the whole test set."""
    probs = torch.cat([model.predict(X[s:s + batch_size]).probs for s in range(0, X.shape[0], batch_size)])
    return expected_calibration_error(probs, y)


def train(label: str, model: str, data: dict, model_config: dict, args, *, log_every: int = 50) -> dict:
    """Train one configuration; returns its figures, the learned ranges and their history."""
    config = RunConfig(model=model, data=data, model_config=model_config,
                       train={"steps": args.steps, "batch_size": args.batch_size, "learning_rate": args.learning_rate,
                              "seed": args.seed, "dtype": args.dtype, "log_every": log_every, "eval_every": 0,
                              "eval_size": 200})
    trainer = Trainer(config)
    ds = trainer.dataset
    log(f"[{label}] {model} on {ds.name} ({ds.num_train} train / {ds.num_test} test): {model_config}")
    seconds = timed_run(trainer, label=label, every=max(log_every, args.steps // 20), describe=lambda snap: (
        f"elbo {snap.parts.get('elbo', float('nan')):.1f} "
        f"{ {k: round(v, 3) for k, v in snap.parts.items() if k.startswith('range.')} }"))
    m = trainer.model
    m.eval()
    elbo = m.full_elbo(trainer.X, trainer.y)["elbo"]  # an unbiased estimate, its orbit samples seeded
    metrics = m.metrics(trainer.X_test, trainer.y_test, batch_size=256)
    if m.task == "classification":
        metrics["ece"] = test_ece(m, trainer.X_test, trainer.y_test)
    out = {"label": label, "model": model, "elbo": elbo, "train_seconds": round(seconds, 1), "steps": args.steps,
           "num_train": ds.num_train, "num_test": ds.num_test, **{f"test_{k}": v for k, v in metrics.items()}}
    history = {k[len("range."):]: (s.tolist(), v.tolist())
               for k, (s, v) in trainer.report.snapshot(views=False).history.items() if k.startswith("range.")}
    if history:
        out["ranges"] = {k: v[-1] for k, (s, v) in history.items()}
        out["range_history"] = {k: [[int(a), round(b, 3)] for a, b in zip(s, v)][:: max(1, len(s) // 40)]
                                for k, (s, v) in history.items()}
    log(f"[{label}] ELBO {elbo:.1f} | " + " | ".join(f"{k} {v:.4g}" for k, v in metrics.items())
        + f" | {seconds:.0f} s")
    log(f"[{label}] result {json.dumps(out)}")  # kept even if a later model is cut short
    return out
