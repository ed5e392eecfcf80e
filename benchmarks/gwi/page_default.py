"""The page's default GWI run on `diabetes` (invlab.dashboard.state.defaults), over 5 splits, against the SVGP with the
same M.

The dashboard starts GWI from `invlab.dashboard.state.defaults.page_run_config("gwi")`: diabetes, the engine's GWIConfig
defaults (M = √N_fit = 17, ARD RBF, the robust reference fit), minibatches of 256, 2 000 steps. This script trains
that run through the `Trainer` with the data split and the initialisation seeded by 0..S−1 (the page's own run is
seed 0), scores the whole test set, and trains the engine's SVGP (ARD RBF, M = 17 k-means inducing points, same
batches and steps) on the same split. `--reference-fit evidence` repeats it with the plain evidence fit of P
(one start), which is what the page ran before the robust fit.

    python -m benchmarks.gwi.page_default [--quick] [--seeds 5] [--reference-fit evidence]

NLPD of the original-unit targets, RMSE in disease-progression units; the last line is one JSON object.
"""
from __future__ import annotations

import math
import statistics

from invlab.dashboard.state.defaults import page_run_config

from ..common import arguments, emit, parse
from .common import fmt, summarise, train


def main(argv=None) -> dict:
    parser = arguments(__doc__, quick="2 seeds, 200 steps.")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--reference-fit", default="robust", choices=["robust", "evidence"])
    args = parse(parser, argv)
    page = page_run_config("gwi")
    seeds = 1 if args.smoke else 2 if args.quick else args.seeds
    steps = 5 if args.smoke else 200 if args.quick else page.train["steps"]
    rows: dict[str, list[dict]] = {"gwi (page default)": [], "svgp (same M)": []}
    for seed in range(seeds):
        data = {**page.data, "seed": seed}
        tc = {**page.train, "steps": steps, "seed": seed}
        trainer, m, secs = train("gwi", data, {**page.model_config, "reference_fit": args.reference_fit}, tc)
        model = trainer.model
        M = model.Q.num_inducing
        ell = model.kernel.lengthscale().detach()
        rows["gwi (page default)"].append({
            "test_nlpd": m["test_nlpd"], "test_rmse": m["test_rmse"], "seconds": secs,
            "reference_noise": model.reference_info["noise_variance"], "min_lengthscale": float(ell.min()),
            "max_lengthscale": float(ell.max())})
        print(f"seed {seed} gwi M={M} start={model.reference_start!r} "
              + " ".join(f"{k}={v:.4g}" for k, v in rows["gwi (page default)"][-1].items()), flush=True)
        trainer, m, secs = train("svgp", data, {"kernel": "rbf", "ard": True, "num_inducing": M,
                                                "likelihood": "gaussian"}, tc)
        rows["svgp (same M)"].append({"test_nlpd": m["test_nlpd"], "test_rmse": m["test_rmse"], "seconds": secs})
        print(f"seed {seed} svgp M={M} " + " ".join(f"{k}={v:.4g}" for k, v in rows["svgp (same M)"][-1].items()),
              flush=True)
    keys = ["test_nlpd", "test_rmse", "seconds", "reference_noise", "min_lengthscale", "max_lengthscale"]
    summary = {name: summarise(r, keys) for name, r in rows.items()}
    for name, s in summary.items():
        print(f"| {name} | {fmt(s.get('test_nlpd'))} | {fmt(s.get('test_rmse'), 2)} |")
    a = [r["test_nlpd"] for r in rows["gwi (page default)"]]
    b = [r["test_nlpd"] for r in rows["svgp (same M)"]]
    n = len(a)
    se = math.sqrt(statistics.variance(a) / n + statistics.variance(b) / n) if n > 1 else math.nan
    diff = statistics.fmean(a) - statistics.fmean(b)
    print(f"GWI − SVGP test NLPD: {diff:+.4f} ± {se:.4f} (se)")
    return emit({"benchmark": "gwi_page_default", "seeds": seeds, "steps": steps, "reference_fit": args.reference_fit,
                 "summary": summary, "nlpd_difference": diff, "se": se, "runs": rows})


if __name__ == "__main__":
    main()
