"""Accuracy and cost of the likelihoods' one-dimensional expectations: the composite Gauss–Legendre rules of
`engine/likelihoods/quadrature.py` against the Gauss–Hermite rules they replaced (64 nodes for P(f_y largest), 20
for Bernoulli), both against scipy `quad` on a randomised grid with σ ratios down to 1e-3 and variances up to 1e4.

Cost: the training-path call (E log p forward and backward) of both rules, interleaved in one process, median ratio;
and a whole SVGP training step (robust-max, K = 10; Bernoulli) with each rule; and a step of the default digits
SVGP with the rule's empty panels left out (the CPU's layout) against every panel (the GPU's). Like the trainer,
the script keeps freed CPU memory for reuse (`invlab.settings.keep_freed_cpu_memory`), without which tensors of a
few hundred kB are page-faulted in afresh on every call and time grows faster than their size.

    python -m benchmarks.invariant.quadrature [--quick]

Last line: one JSON object with the maximum errors before/after and the time ratios.
"""
from __future__ import annotations

import math
import statistics
import time

import numpy as np
import torch
from scipy import integrate, special, stats

from invlab.likelihoods import bernoulli as bernoulli_module
from invlab.likelihoods import robustmax as robustmax_module
from invlab.likelihoods.quadrature import (
    expectation_with_kinks,
    gauss_hermite_expectation,
    hermgauss,
    prob_is_largest,
    prob_is_largest_at,
)
from invlab.models import DataInfo, SVGPConfig
from invlab.models.svgp import build_svgp
from invlab.settings import keep_freed_cpu_memory

from ..common import arguments, emit, log, parse


def hermite_largest_at(mean, var, y, n=64):
    """The replaced rule: Gauss–Hermite nodes scaled by σ_y only."""
    t, w = hermgauss(n, mean)
    std = var.clamp_min(1e-30).sqrt()
    y = y.long().reshape(-1, 1)
    x = mean.gather(1, y) + math.sqrt(2.0) * std.gather(1, y) * t  # [N, n]
    z = (x[:, None, :] - mean[:, :, None]) / std[:, :, None]
    is_y = torch.zeros_like(mean, dtype=torch.bool).scatter_(1, y, True)[:, :, None]
    return (torch.special.ndtr(z).masked_fill(is_y, 1.0).prod(1) * w).sum(-1)


def quad_largest(mu, sd, y):
    others = [j for j in range(len(mu)) if j != y]
    f = lambda x: stats.norm.pdf(x, mu[y], sd[y]) * np.prod([special.ndtr((x - mu[j]) / sd[j]) for j in others])  # noqa: E731
    lo, hi = mu[y] - 12 * sd[y], mu[y] + 12 * sd[y]
    cuts = {mu[y]} | {mu[j] + k * sd[j] for j in others for k in (-8, -2, 0, 2, 8)}
    edges = [lo] + sorted(c for c in cuts if lo < c < hi) + [hi]
    return sum(integrate.quad(f, a, b, epsabs=1e-14, epsrel=1e-12, limit=200)[0] for a, b in zip(edges[:-1], edges[1:]))


def quad_expectation(fn, m, s):
    lo, hi = m - 12 * s, m + 12 * s
    cuts = {0.0, m} | {k * d for k in (1, 4, 16, 64) for d in (-1, 1)}
    edges = [lo] + sorted(c for c in cuts if lo < c < hi) + [hi]
    return sum(integrate.quad(lambda x: stats.norm.pdf(x, m, s) * fn(x), a, b, epsabs=1e-13, epsrel=1e-12,
                              limit=400)[0] for a, b in zip(edges[:-1], edges[1:]))


def accuracy(rows: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    out = {}
    for K in (2, 4, 10):
        mu = rng.normal(0, 1, (rows, K)) * rng.choice([0.3, 1.0, 3.0, 30.0], (rows, 1))
        sd = np.exp(rng.uniform(math.log(1e-3), math.log(1e2), (rows, K)))
        y = rng.integers(0, K, rows)
        ref = np.array([quad_largest(mu[i], sd[i], y[i]) for i in range(rows)])
        m, v, yt = torch.tensor(mu), torch.tensor(sd ** 2), torch.tensor(y)
        before = np.abs(hermite_largest_at(m, v, yt).numpy() - ref).max()
        train = np.abs(prob_is_largest_at(m, v, yt).numpy() - ref).max()
        P = prob_is_largest(m, v).numpy()
        predict = np.abs(P[np.arange(rows), y] - ref).max()
        f32 = np.abs(prob_is_largest_at(m.float(), v.float(), yt).double().numpy() - ref).max()
        out[f"largest_K{K}"] = {"before": before, "training_rule": train, "prediction_rule": predict,
                                "training_rule_float32": f32}
        log(f"P(f_y largest), K = {K}: max error {before:.1e} before, {train:.1e} (training rule), "
            f"{predict:.1e} (prediction rule), {f32:.1e} (float32)")
    mean = rng.normal(0, 1, rows) * rng.choice([0.3, 3.0, 30.0], rows)
    var = np.exp(rng.uniform(math.log(1e-4), math.log(1e4), rows))
    mean[:3], var[:3] = [0.5, -1.0, 0.0], [25.0, 100.0, 1e4]
    for link, (fn_np, fn_t) in {"probit": (special.log_ndtr, torch.special.log_ndtr),
                                "logit": (lambda x: -np.logaddexp(0.0, -x), torch.nn.functional.logsigmoid)}.items():
        ref = np.array([quad_expectation(fn_np, mean[i], math.sqrt(var[i])) for i in range(rows)])
        m, v = torch.tensor(mean), torch.tensor(var)
        err = lambda got: float(np.minimum(np.abs(got - ref), np.abs(got - ref) / np.maximum(np.abs(ref), 1e-300)).max())  # noqa: E731, E501
        before = err(gauss_hermite_expectation(fn_t, m, v, 20).numpy())
        after = err(expectation_with_kinks(fn_t, m, v).numpy())
        f32 = err(expectation_with_kinks(fn_t, m.float(), v.float()).double().numpy())
        out[f"bernoulli_{link}"] = {"before": before, "after": after, "after_float32": f32}
        log(f"Bernoulli {link} E log p (relative, or absolute below 1): max error {before:.1e} before, {after:.1e} "
            f"after, {f32:.1e} (float32)")
    return out


def interleaved(fns, reps):
    times = [[] for _ in fns]
    for _ in range(reps):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def call_cost(reps: int, seed: int = 1) -> dict:
    """Forward and backward of E log p for N = 500 points, old rule against new."""
    rng = np.random.default_rng(seed)
    out = {}
    for dtype in (torch.float64, torch.float32):
        name = str(dtype).removeprefix("torch.")
        for K in (3, 10):
            m = torch.tensor(rng.normal(0, 1, (500, K)), dtype=dtype, requires_grad=True)
            v = torch.tensor(np.exp(rng.uniform(-5, 1, (500, K))), dtype=dtype, requires_grad=True)
            y = torch.tensor(rng.integers(0, K, 500))
            a, b = interleaved([lambda: hermite_largest_at(m, v, y).sum().backward(),
                                lambda: prob_is_largest_at(m, v, y).sum().backward()], reps)
            out[f"robustmax_call_K{K}_{name}"] = b / a
        m = torch.tensor(rng.normal(0, 1, (500, 1)), dtype=dtype, requires_grad=True)
        v = torch.tensor(np.exp(rng.uniform(-5, 1, (500, 1))), dtype=dtype, requires_grad=True)
        a, b = interleaved([lambda: gauss_hermite_expectation(torch.special.log_ndtr, m, v, 20).sum().backward(),
                            lambda: expectation_with_kinks(torch.special.log_ndtr, m, v).sum().backward()], reps)
        out[f"bernoulli_call_{name}"] = b / a
    for k, r in out.items():
        log(f"{k}: new / old time {r:.2f}")
    return out


def step_cost(reps: int, seed: int = 2) -> dict:
    """A whole SVGP training step (M = 100, minibatch 200) with the replaced rule and with the new one."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, K, lik in (("robustmax_K10", 10, "robustmax"), ("bernoulli", 2, "bernoulli")):
        X = torch.randn(200, 5, generator=g, dtype=torch.float64)
        y = torch.randint(0, K, (200,), generator=g)
        model = build_svgp(SVGPConfig(num_inducing=100, likelihood=lik), X, y, DataInfo("classification", K),
                           generator=g)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)

        def step():
            opt.zero_grad()
            model.loss((X, y)).loss.backward()
            opt.step()

        def with_old():
            saved = (robustmax_module.prob_is_largest_at, bernoulli_module.expectation_with_kinks)
            robustmax_module.prob_is_largest_at = lambda m, v, yy, n=None: hermite_largest_at(m, v, yy)
            bernoulli_module.expectation_with_kinks = lambda fn, m, v, n=None: gauss_hermite_expectation(fn, m, v, 20)
            try:
                step()
            finally:
                robustmax_module.prob_is_largest_at, bernoulli_module.expectation_with_kinks = saved

        a, b = interleaved([with_old, step], reps)
        out[f"svgp_step_{name}"] = b / a
        log(f"SVGP training step, {name}: new / old time {b / a:.2f} ({a * 1e3:.1f} ms before)")
    return out


def layout_cost(reps: int, warmup: int) -> dict:
    """`invlab train --model svgp --dataset digits` (robust-max, K = 10), trained `warmup` steps so that its rows are
    a trained model's, then blocks of 10 steps interleaved: the rule's panels of zero width left out (the CPU's
    default) against every row's full set of panels (the GPU's layout)."""
    import functools

    from invlab.train import RunConfig, Trainer

    trainer = Trainer(RunConfig(model="svgp", data={"dataset": "digits"}))
    for _ in trainer.run(steps=warmup, every=warmup):
        pass

    def block(compact):
        saved = robustmax_module.prob_is_largest_at
        robustmax_module.prob_is_largest_at = functools.partial(saved, compact=compact)
        try:
            for _ in trainer.run(steps=10, every=10):
                pass
        finally:
            robustmax_module.prob_is_largest_at = saved

    every, compact = interleaved([lambda: block(False), lambda: block(True)], reps)
    log(f"digits SVGP step after {warmup} steps: {every * 100:.1f} ms with every panel, {compact * 100:.1f} ms "
        f"without the empty ones: compact / every panel {compact / every:.2f}")
    return {"digits_step_compact_over_every_panel": compact / every}


def main(argv=None) -> dict:
    p = arguments(__doc__, quick="fewer grid rows and repetitions")
    args = parse(p, argv)
    keep_freed_cpu_memory()  # as the trainer does
    rows, reps = (4, 1) if args.smoke else (8, 5) if args.quick else (60, 41)
    warmup = 20 if args.smoke else 100 if args.quick else 300
    result = {"experiment": "likelihood_quadrature", "accuracy": accuracy(rows), "time_ratio": {
        **call_cost(reps), **step_cost(reps), **layout_cost(reps, warmup)}}
    return emit(result)


if __name__ == "__main__":
    main()
