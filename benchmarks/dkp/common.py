"""Shared by the deep-kernel-process experiments (benchmarks/dkp/): DIWP against the NNGP and the plain SVGP
with the same kernel, trained alike on the same splits (Aitchison, Yang & Ober 2021 sec. 7 protocol, at sizes two CPU
cores allow).

Protocol (paper: 8000 Adam steps, 100 inducing points, lr 1e-2 for the first half and 1e-3 for the second, 10
samples per step on small sets and 1 on large ones, 100 samples to evaluate, 20 splits): every model is trained
through the engine's Trainer for `--steps` steps with the same learning-rate drop halfway, then scored on the whole
test set with `--predict-samples` samples, and its ELBO estimated over the whole training set. Differences to
DIWP are paired by split (as the paper's paired t-test); "2se" is two standard errors of the paired difference.
Progress goes to stderr; the script's last line is one JSON object.
"""
from __future__ import annotations

import argparse
import math

import numpy as np
import torch

from invlab.models.dkp import DeepKernelProcess
from invlab.train import RunConfig, Trainer
from invlab.train.edits import SetLearningRate

from ..common import arguments, emit, log, timed_run

MODELS = ("diwp", "nngp", "dkp_svgp")


def common_parser(doc: str, **defaults) -> argparse.ArgumentParser:
    p = arguments(doc, quick="a tiny run that only checks the script works")
    p.add_argument("--steps", type=int, default=defaults.get("steps", 2000))
    p.add_argument("--num-inducing", type=int, default=defaults.get("num_inducing", 100))
    p.add_argument("--num-layers", type=int, default=defaults.get("num_layers", 2),
                   help="Gram layers L (2: two hidden layers + output, the paper's three-layer models)")
    p.add_argument("--kernel", default=defaults.get("kernel", "relu"), choices=["relu", "sqexp"])
    p.add_argument("--samples", type=int, default=defaults.get("samples", 4), help="Monte-Carlo samples per step")
    p.add_argument("--predict-samples", type=int, default=defaults.get("predict_samples", 100))
    p.add_argument("--batch-size", type=int, default=defaults.get("batch_size", 0), help="0: full batch")
    p.add_argument("--learning-rate", type=float, default=defaults.get("learning_rate", 0.01))
    p.add_argument("--delta", type=float, default=defaults.get("delta", 50.0), help="initial δ of the DIWP")
    p.add_argument("--gamma", type=float, default=defaults.get("gamma", 1.0), help="initial γ of the DIWP")
    p.add_argument("--kl-estimator", default="sampled", choices=["sampled", "closed_form"],
                   help="DIWP/NNGP: each layer's log P − log Q of its sample, or −KL in closed form given the layer "
                        "below")
    p.add_argument("--splits", type=int, default=defaults.get("splits", 3), help="train/test splits (data seeds)")
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of " + ", ".join(MODELS))
    return p


def quick(args) -> None:
    """Shrink a run to seconds (the figures then mean nothing)."""
    args.steps, args.num_inducing, args.samples, args.predict_samples = 10, min(args.num_inducing, 10), 1, 4
    args.splits = 1


def model_config(name: str, args, extra: dict | None = None) -> dict:
    cfg = {"num_inducing": args.num_inducing, "num_layers": args.num_layers, "kernel": args.kernel}
    if name != "dkp_svgp":
        cfg.update(num_samples=args.samples, num_predict_samples=args.predict_samples,
                   kl_estimator=getattr(args, "kl_estimator", "sampled"))
    if name == "diwp":
        cfg.update(delta=args.delta, gamma=getattr(args, "gamma", 1.0))
    cfg.update(extra or {})
    return cfg


def train_and_score(name: str, data: dict, args, extra: dict | None = None, *, seed: int = 0) -> dict:
    """Train one model on one split; returns its test log-likelihood, RMSE or accuracy, ELBO per point and time."""
    config = RunConfig(model=name, data=data, model_config=model_config(name, args, extra),
                       train={"steps": args.steps, "batch_size": args.batch_size, "learning_rate": args.learning_rate,
                              "seed": seed, "eval_every": 0, "log_every": 50, "eval_size": 1})
    trainer = Trainer(config)
    half = args.steps // 2
    seconds = timed_run(trainer, steps=half, every=max(1, half))
    trainer.edits.put(SetLearningRate(args.learning_rate / 10))  # the paper's drop from 1e-2 to 1e-3 halfway
    seconds += timed_run(trainer, steps=args.steps - half, every=max(1, args.steps - half))
    model = trainer.model
    model.eval()
    if isinstance(model, DeepKernelProcess):
        model.num_predict_samples = args.predict_samples
    torch.manual_seed(seed + 12345)
    with torch.no_grad():
        pred = model.predict_standardised(trainer.X_test, trainer.y_test)
    ds = trainer.dataset
    # the ELBO over the whole training set, an unbiased estimate for the DKP families (at least 10 upstream samples)
    samples = max(model.num_samples, 10) if isinstance(model, DeepKernelProcess) else None
    terms = model.full_elbo(trainer.X, trainer.y, num_samples=samples)
    n = trainer.X.shape[0]
    out = {"seconds": round(seconds, 1), "elbo_per_point": terms["elbo"] / n}
    if "kl" in terms:
        out["kl_per_point"] = terms["kl"] / n
    ll = pred.log_density
    if ds.task == "regression":
        y_std = float(ds.y_std or 1.0)
        out["test_ll"] = float(ll.mean()) - math.log(y_std)  # density of targets in original units
        out["rmse"] = float(((pred.y_mean.reshape(-1) - trainer.y_test) ** 2).mean().sqrt()) * y_std
    else:
        out["test_ll"] = float(ll.mean())
        out["accuracy"] = float((pred.probs.argmax(-1) == trainer.y_test).double().mean())
    if isinstance(model, DeepKernelProcess) and model.stochastic:
        out["delta"] = [round(float(layer.delta().detach()), 3) for layer in [model.input_layer, *model.hidden]]
    log(f"  {name} split {seed}: " + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                                               for k, v in out.items()))
    return out


def summarise(per_split: dict[str, list[dict]]) -> dict:
    """Mean and standard error per model and metric; paired differences (model − DIWP) with 2 SE."""
    summary: dict[str, dict] = {}
    for name, runs in per_split.items():
        entry = {}
        for key in runs[0]:
            if key == "delta":
                entry[key] = [r[key] for r in runs]
                continue
            values = np.array([r[key] for r in runs], dtype=float)
            entry[key] = round(float(values.mean()), 4)
            if len(values) > 1:
                entry[f"{key}_se"] = round(float(values.std(ddof=1) / math.sqrt(len(values))), 4)
        summary[name] = entry
    if "diwp" in per_split:
        base = per_split["diwp"]
        for name, runs in per_split.items():
            if name == "diwp":
                continue
            diffs = {}
            for key in ("test_ll", "rmse", "accuracy", "elbo_per_point"):
                if key in runs[0]:
                    d = np.array([r[key] - b[key] for r, b in zip(runs, base)])
                    diffs[key] = round(float(d.mean()), 4)
                    if len(d) > 1:
                        diffs[f"{key}_2se"] = round(float(2 * d.std(ddof=1) / math.sqrt(len(d))), 4)
            summary[name]["minus_diwp"] = diffs
    return summary


def run_experiment(benchmark: str, dataset: str, args, data_options: dict | None = None,
                   extra: dict[str, dict] | None = None) -> dict:
    if args.quick:
        quick(args)
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = set(names) - set(MODELS)
    if unknown:
        raise SystemExit(f"unknown model(s) {', '.join(sorted(unknown))}; choose from {', '.join(MODELS)}")
    per_split: dict[str, list[dict]] = {n: [] for n in names}
    for split in range(args.splits):
        data = {"dataset": dataset, "seed": split, **(data_options or {})}
        log(f"{dataset}, split {split + 1}/{args.splits}")
        for name in names:
            per_split[name].append(train_and_score(name, data, args, (extra or {}).get(name), seed=split))
    result = {"benchmark": benchmark, "dataset": dataset, "data_options": data_options or {},
              "sizes": {"steps": args.steps, "num_inducing": args.num_inducing, "num_layers": args.num_layers,
                        "kernel": args.kernel, "samples": args.samples, "predict_samples": args.predict_samples,
                        "batch_size": args.batch_size, "learning_rate": args.learning_rate, "delta_init": args.delta,
                        "gamma_init": args.gamma, "kl_estimator": args.kl_estimator,
                        "splits": args.splits, "quick": bool(args.quick)},
              "results": summarise(per_split)}
    return emit(result)
