"""GWI's cost per training step against N at M = √N (Wild, Hu & Sejdinovic 2022 sec. 1.3), beside one exact-GP step.

Claim checked: with M = c·√N inducing points, a GWI step on a fixed minibatch (B points) with a fixed
sub-sample for the spectrum (N_S points) costs O(M³ + B M² + N_S² M + N_S³) = O(N^{3/2}) in N, while one
exact-GP marginal-likelihood step (Cholesky of the N×N K + σ²I, its solves and their gradients) costs O(N³).

Data: synthetic regression, X ~ N(0, I_D) with D = 8, y = sin(x·w) + 0.1 ε (standardised), the same for both
methods at each N. Both use an ARD RBF kernel in float64 and Adam; timed is one optimiser step
(loss, backward, update), the median of `repeats` after `warmup` untimed steps. GWI's build (the reference
fit on M points and the closed-form start, O(N M²)) is timed once and reported separately. The exact GP is
run only where it fits in memory (about 6 N×N float64 matrices must fit in half the available memory) and,
to keep the run bounded, where its predicted time (N³ extrapolation from the previous size) is under
`--max-exact-seconds`; skipped sizes are listed with the reason.

The exponents are least-squares slopes of log(time) against log(N). Target: exponent_gwi ≤ 1.7.

Run `python -m benchmarks.gwi.scaling [--quick] [--threads 1]`; the last line printed is one JSON object.
"""
from __future__ import annotations

import math
import statistics
import time

import numpy as np
import torch

from invlab.kernels import RBF
from invlab.models import DataInfo
from invlab.models.gwi import GWIConfig, build_gwi
from invlab.models.gwi.reference import exact_log_marginal_likelihood
from invlab.parameters import Positive

from ..common import arguments, emit, parse

DTYPE = torch.float64
D = 8


def synthetic(N: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(N, D, generator=g, dtype=DTYPE)
    w = torch.randn(D, generator=g, dtype=DTYPE) / math.sqrt(D)
    y = torch.sin(2.0 * X @ w) + 0.1 * torch.randn(N, generator=g, dtype=DTYPE)
    return X, (y - y.mean()) / y.std()


def median_time(step, repeats: int, warmup: int) -> float:  # the exact GP: too slow to interleave
    for _ in range(warmup):
        step()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def gwi_stepper(X, y, batch: int, num_spectrum: int):
    """Build a GWI model at M = √N (timed) and return (one-step closure, build seconds, M)."""
    t0 = time.perf_counter()
    model = build_gwi(GWIConfig(inducing_factor=1.0, num_spectrum=num_spectrum, reference_steps=30,
                                validation_fraction=0.0), X, y, DataInfo("regression"))
    build = time.perf_counter() - t0
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(1)
    idx = torch.randperm(X.shape[0], generator=g)[:batch]
    xb, yb = X[idx], y[idx]  # one fixed minibatch: the step's cost must not depend on N except through M

    def step():
        opt.zero_grad(set_to_none=True)
        model.loss((xb, yb)).loss.backward()
        opt.step()

    return step, build, model.Q.num_inducing


def interleaved_times(steps: dict, rounds: int, per_round: int = 3) -> dict:
    """Median step time per key, the keys timed in turn in each round, so a burst of load from other processes
    on a shared machine hits every size alike instead of one."""
    times = {k: [] for k in steps}
    for step in steps.values():
        step()  # warm-up
    for r in range(rounds):
        order = list(steps) if r % 2 == 0 else list(reversed(list(steps)))
        for k in order:
            for _ in range(per_round):
                t0 = time.perf_counter()
                steps[k]()
                times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def exact_step_time(X, y, repeats: int, warmup: int) -> float:
    kernel = RBF(D, lengthscale=2.0, variance=1.0, ard=True)
    noise = Positive(0.1, floor=1e-6, name="noise_variance")
    params = [p for p in list(kernel.parameters()) + list(noise.parameters())]
    opt = torch.optim.Adam(params, lr=0.01)
    Y = y[:, None]

    def step():
        opt.zero_grad(set_to_none=True)
        (-exact_log_marginal_likelihood(kernel, X, Y, noise()) / X.shape[0]).backward()
        opt.step()

    return median_time(step, repeats, warmup)


def available_bytes() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 8 << 30


def slope(ns, ts) -> float | None:
    if len(ns) < 2:
        return None
    return float(np.polyfit(np.log(ns), np.log(ts), 1)[0])


def main(argv=None) -> dict:
    parser = arguments(__doc__, quick="N = 500, 1000, 2000 and fewer repeats (under a minute).")
    parser.add_argument("--sizes", type=str, default=None, help="Comma-separated N values (default 1000,4000,16000).")
    parser.add_argument("--batch", type=int, default=256, help="Minibatch size B of the GWI step.")
    parser.add_argument("--num-spectrum", type=int, default=100, help="N_S, the spectrum sub-sample.")
    parser.add_argument("--repeats", type=int, default=None,
                        help="Timed GWI steps per size, in interleaved rounds of 3 (median reported).")
    parser.add_argument("--max-exact-seconds", type=float, default=600.0,
                        help="Skip exact-GP sizes predicted (N³ extrapolation) to take longer per step than this.")
    args = parse(parser, argv)
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else ([200, 400] if args.smoke else
                                                                         [500, 1000, 2000] if args.quick
                                                                         else [1000, 4000, 16000])
    repeats = args.repeats or (3 if args.smoke else 12 if args.quick else 30)
    gwi_t, build_t, exact_t, Ms, skipped, steppers = {}, {}, {}, {}, {}, {}
    gwi_stepper(*synthetic(sizes[0]), args.batch, args.num_spectrum)[0]()  # first-call costs are not N's
    for N in sizes:
        steppers[N], build_t[N], Ms[N] = gwi_stepper(*synthetic(N), args.batch, args.num_spectrum)
    gwi_t = interleaved_times(steppers, rounds=max(1, repeats // 3))
    last_exact = None
    for N in sizes:
        X, y = synthetic(N)
        need = 6 * N * N * 8
        predicted = None if last_exact is None else last_exact[1] * (N / last_exact[0]) ** 3
        if need > available_bytes() // 2:
            skipped[N] = f"needs ~{need / 2**30:.1f} GiB, more than half the available memory"
        elif predicted is not None and predicted > args.max_exact_seconds:
            skipped[N] = f"predicted {predicted:.0f} s per step (N³ from N={last_exact[0]}) > --max-exact-seconds"
        else:
            exact_t[N] = exact_step_time(X, y, repeats=1 if N >= 4000 else 3, warmup=0 if N >= 4000 else 1)
            last_exact = (N, exact_t[N])
    print(f"{'N':>7} {'M':>5} {'GWI step ms':>12} {'GWI build s':>12} {'exact step ms':>14} {'exact/GWI':>10}")
    for N in sizes:
        e = exact_t.get(N)
        ratio = f"{e / gwi_t[N]:10.1f}" if e is not None else f"{'skipped':>10}"
        print(f"{N:>7} {Ms[N]:>5} {1e3 * gwi_t[N]:>12.2f} {build_t[N]:>12.2f} "
              f"{(f'{1e3 * e:14.1f}' if e is not None else f'{chr(8212):>14}')} {ratio}", flush=True)
    for N, why in skipped.items():
        print(f"exact GP skipped at N={N}: {why}")
    result = {
        "benchmark": "gwi_scaling",
        "sizes": sizes, "M": {str(n): m for n, m in Ms.items()}, "batch": args.batch, "num_spectrum": args.num_spectrum,
        "threads": args.threads, "quick": args.quick,
        "gwi_step_seconds": {str(n): t for n, t in gwi_t.items()},
        "gwi_build_seconds": {str(n): t for n, t in build_t.items()},
        "exact_step_seconds": {str(n): t for n, t in exact_t.items()},
        "ratio_exact_over_gwi": {str(n): exact_t[n] / gwi_t[n] for n in exact_t},
        "exponent_gwi": slope(list(gwi_t), list(gwi_t.values())),
        "exponent_gwi_build": slope(list(build_t), list(build_t.values())),
        "exponent_exact": slope(list(exact_t), list(exact_t.values())),
        "target_exponent_gwi": 1.7,
        "exact_skipped": {str(n): why for n, why in skipped.items()},
    }
    result["meets_target"] = result["exponent_gwi"] is not None and result["exponent_gwi"] <= 1.7
    return emit(result)


if __name__ == "__main__":
    main()
