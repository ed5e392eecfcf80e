"""Zhang, Lee & Teh 2013, sec. 6.1 / Fig. 1: two moons with 2 labelled points, gradient invariances on all points, ν
swept.

Data: `invlab.data` two-moons (scikit-learn's make_moons on its raw scale, noise 0.1), 200 training points of
which 2 are labelled (one per class, drawn at random) and 198 unlabelled, 1000 test points. Model: Gaussian
kernel σ = 0.25, λ = 1, logistic ℓ₁ and squared ℓ₂ (the paper's), the partial derivatives ∂f/∂x¹, ∂f/∂x² at
all 200 training points as invariance functionals (m = 400), an unpenalised bias, eq. 4 minimised by L-BFGS to
convergence (`RKHSMachine.fit`). ν ∈ {0, 0.01, 0.1, 1}. Each repetition draws new data and new labelled points
(seed r for both); the test error is reported as mean ± sd over repetitions. The paper's second variant
(hinge ℓ₁, ε-insensitive ℓ₂; smoothed here with h = 0.1, ε = 0.01) is reported too.

Solver comparison (seed 0, ν = 1): the default whitened parametrisation against the paper's α with the eq. 11
products, both L-BFGS from zero: iterations, final objective, seconds.

Run `python -m benchmarks.rkhs.two_moons [--quick] [--reps R]`; the last line printed is one JSON object.
"""
from __future__ import annotations

import statistics
import time

import torch

from invlab.data import load
from invlab.models import DataInfo
from invlab.models.rkhs import RKHSConfig, build_rkhs

from ..common import arguments, emit, parse

NUS = (0.0, 0.01, 0.1, 1.0)


def make(seed: int, nu: float, loss: str = "logistic", invariance_loss: str = "squared", whiten: bool = True):
    d = load("two-moons", seed=seed, num_train=200, num_test=1000, noise=0.1)
    cfg = RKHSConfig(kernel="rbf", sigma=0.25, lam=1.0, nu=nu, loss=loss, invariance_loss=invariance_loss,
                     epsilon=0.01, smoothing=0.1, functionals="gradient", labelled=2, semi_supervised=True,
                     max_unlabelled=198, whiten=whiten)
    model = build_rkhs(cfg, torch.as_tensor(d.X_train), torch.as_tensor(d.y_train), DataInfo("classification", 2),
                       generator=torch.Generator().manual_seed(seed))
    return d, model


def run_one(seed: int, nu: float, loss: str, invariance_loss: str) -> tuple[float, int]:
    d, model = make(seed, nu, loss, invariance_loss)
    trace = model.fit(max_iter=3000)
    err = model.metrics(torch.as_tensor(d.X_test), torch.as_tensor(d.y_test))["error"]
    return err, len(trace) - 1


def main(argv=None) -> dict:
    parser = arguments(__doc__, quick="5 repetitions instead of 20")
    parser.add_argument("--reps", type=int, default=None)
    args = parse(parser, argv)
    reps = args.reps or (1 if args.smoke else 5 if args.quick else 20)
    t0 = time.perf_counter()
    out = {"benchmark": "rkhs_two_moons", "repetitions": reps, "sigma": 0.25, "lambda": 1.0, "labelled": 2,
           "unlabelled": 198, "test_points": 1000}
    runs = (("logistic_squared", ("logistic", "squared")), ("hinge_eps", ("smoothed_hinge", "smoothed_eps")))
    for tag, losses in runs:
        rows = {}
        for nu in NUS:
            errs, iters = zip(*(run_one(r, nu, *losses) for r in range(reps)))
            rows[str(nu)] = {"error_mean": statistics.mean(errs),
                             "error_sd": statistics.stdev(errs) if reps > 1 else 0.0,
                             "iterations_median": statistics.median(iters)}
            print(f"{tag:17s} ν = {nu:<5}: test error {100 * rows[str(nu)]['error_mean']:.1f} ± "
                  f"{100 * rows[str(nu)]['error_sd']:.1f}%  (L-BFGS iterations, median {statistics.median(iters):.0f})",
                  flush=True)
        out[tag] = rows
    solver = {}
    for name, whiten in (("whitened", True), ("alpha_eq11", False)):
        _, model = make(0, 1.0, whiten=whiten)
        t = time.perf_counter()
        trace = model.fit(max_iter=20 if args.smoke else 300 if args.quick else 3000)
        solver[name] = {"iterations": len(trace) - 1, "objective": trace[-1]["objective"],
                        "seconds": time.perf_counter() - t, "eq11_products": (not whiten) and model.gram.fast}
        print(f"solver {name:10s}: {len(trace) - 1} iterations, objective {trace[-1]['objective']:.10f}, "
              f"{solver[name]['seconds']:.1f} s", flush=True)
    out["solver_seed0_nu1"] = solver
    out["seconds"] = time.perf_counter() - t0
    return emit(out)


if __name__ == "__main__":
    main()
