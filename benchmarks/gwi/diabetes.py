"""GWI against the SVGP on `diabetes` regression (Wild, Hu & Sejdinovic 2022 sec. 2): test NLL and RMSE.

Data: scikit-learn's diabetes (442 patients, 10 standardised features), 75/25 train/test split by the data
seed; targets standardised with the training mean and std (metrics are in the original units: RMSE in
disease-progression units, NLPD of the original-unit targets).

Models, each with an RBF kernel — ARD (one lengthscale per feature) and, as a second set of rows, one shared
lengthscale ("iso") — and the same inducing count M:
- `gwi`: 10% of the training set held out for α_T (never trained on); P fitted by the exact marginal
  likelihood on M = c·√N_fit points (c = 2: M = 35), then frozen; Q in SVGP form from the closed form of
  sec. 1.6.1 (λ = 1e-6); Ŵ² with the default `subsample` spectrum, N_S = 100; σ² learned.
- `gwi-evidence` (ARD only): the same with P fitted by the plain evidence from one start (`reference_fit=evidence`),
  which interpolated its M points on some splits; `gwi` uses the default robust fit (several starts, σ² kept off
  zero, the start chosen by its predictive density on M other training points).
- `gwi-paper` (ARD only): the same with the paper's cross spectrum r(X_S, X) k(X, X_S) (N_S = 100 < N_fit).
- `svgp`: the engine's SVGP, whitened, M learnable inducing points from k-means, kernel and noise learned by
  the ELBO, on the whole training set.
All: full-batch Adam, `--steps` steps at learning rate 0.01, float64; seeds 0..S−1 set both the split and the
initialisation. GWI reports the untempered NLPD, the tempered one with α_T ∈ [1e-3, 1] (sec. 2.3), and, for
information, with α_T free in [1e-3, 1e3].

Run `python -m benchmarks.gwi.diabetes [--quick] [--seeds 5] [--steps 2000] [--rows "gwi ARD,svgp ARD"]`; the last
line is one JSON object.
"""
from __future__ import annotations

import math
import statistics

from invlab.data import load
from invlab.models.gwi import GWIConfig, reference_size

from ..common import arguments, emit, parse
from .common import finite, fmt, free_temperature_nlpd, summarise, train

ROWS = ("gwi ARD", "gwi-evidence ARD", "gwi-paper ARD", "svgp ARD", "gwi iso", "svgp iso")
GWI_ROWS = {"gwi": {"spectrum": "subsample"}, "gwi-evidence": {"spectrum": "subsample", "reference_fit": "evidence"},
            "gwi-paper": {"spectrum": "paper"}}
KEYS = ["test_nlpd", "test_nlpd_tempered", "test_nlpd_tempered_free", "test_rmse", "alpha_T", "alpha_T_free", "seconds",
        "reference_noise", "noise_variance"]


def main(argv=None) -> dict:
    parser = arguments(__doc__, quick="2 seeds, 300 steps.")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--inducing-factor", type=float, default=2.0,
                        help="c in M = c·√N (GWI); the SVGP gets the same M.")
    parser.add_argument("--rows", default=",".join(ROWS), help="comma-separated subset of: " + ", ".join(ROWS))
    args = parse(parser, argv)
    seeds, steps = (1, 5) if args.smoke else (2, 300) if args.quick else (args.seeds, args.steps)
    wanted = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = sorted(set(wanted) - set(ROWS))
    if unknown:
        parser.error(f"unknown rows {unknown}; choose from {', '.join(ROWS)}")
    rows: dict[str, list[dict]] = {name: [] for name in ROWS if name in wanted}
    N = load("diabetes", seed=0).X_train.shape[0]
    M = reference_size(N - round(GWIConfig.validation_fraction * N), args.inducing_factor)  # GWI's M; the SVGP's too
    for seed in range(seeds):
        data = {"dataset": "diabetes", "seed": seed}
        tc = {"steps": steps, "batch_size": 0, "learning_rate": 0.01, "seed": seed}
        for ard, tag in ((True, "ARD"), (False, "iso")):
            for name, options in GWI_ROWS.items():
                if f"{name} {tag}" not in rows:
                    continue
                trainer, m, secs = train("gwi", data, {"inducing_factor": args.inducing_factor, **options,
                                                       "num_spectrum": 100, "ard": ard}, tc)
                free, alpha_free = free_temperature_nlpd(trainer)
                rows[f"{name} {tag}"].append({
                    "test_nlpd": m["test_nlpd"], "test_nlpd_tempered": m["test_nlpd_tempered"],
                    "test_nlpd_tempered_free": free, "test_rmse": m["test_rmse"],
                    "alpha_T": float(trainer.model.alpha_T), "alpha_T_free": alpha_free, "seconds": secs,
                    "w2": finite(trainer.last_parts.get("w2")),
                    "reference_noise": trainer.model.reference_info["noise_variance"],
                    "reference_min_lengthscale": float(trainer.model.kernel.lengthscale().min()),
                    "noise_variance": float(trainer.model.likelihood.variance().detach())})
                print(f"seed {seed} {name} {tag} M={M} start={trainer.model.reference_start!r} " + " ".join(
                    f"{k}={v:.4g}" for k, v in rows[f'{name} {tag}'][-1].items() if v is not None), flush=True)
            if f"svgp {tag}" not in rows:
                continue
            trainer, m, secs = train("svgp", data, {"kernel": "rbf", "ard": ard, "num_inducing": M,
                                                    "likelihood": "gaussian"}, tc)
            rows[f"svgp {tag}"].append({"test_nlpd": m["test_nlpd"], "test_rmse": m["test_rmse"], "seconds": secs})
            print(f"seed {seed} svgp {tag} M={M} "
                  + " ".join(f"{k}={v:.4g}" for k, v in rows[f"svgp {tag}"][-1].items()), flush=True)
    summary = {name: summarise(r, KEYS) for name, r in rows.items()}
    print("\n| model | test NLPD | test NLPD tempered (α≤1) | tempered (α free) | test RMSE | α_T | α_T free |")
    print("|---|---|---|---|---|---|---|")
    for name, s in summary.items():
        print(f"| {name} | {fmt(s.get('test_nlpd'))} | {fmt(s.get('test_nlpd_tempered'))} | "
              f"{fmt(s.get('test_nlpd_tempered_free'))} | {fmt(s.get('test_rmse'), 2)} | {fmt(s.get('alpha_T'))} | "
              f"{fmt(s.get('alpha_T_free'))} |")
    pairs = [(g, f"svgp {g.split()[-1]}") for g in rows if g.startswith("gwi") and f"svgp {g.split()[-1]}" in rows]
    versus = {}
    for g, sv in pairs:  # GWI − SVGP test NLPD: the difference of means with its standard error, and paired by split
        a, b = [r["test_nlpd"] for r in rows[g]], [r["test_nlpd"] for r in rows[sv]]
        n = len(a)
        se = math.sqrt(statistics.variance(a) / n + statistics.variance(b) / n) if n > 1 else math.nan
        d = [x - y for x, y in zip(a, b)]
        se_paired = statistics.stdev(d) / math.sqrt(n) if n > 1 else math.nan
        versus[g] = {"nlpd_difference": statistics.fmean(a) - statistics.fmean(b), "se": se,
                     "se_paired": se_paired, "nlpd_ratio": statistics.fmean(a) / statistics.fmean(b),
                     "rmse_ratio": statistics.fmean(r["test_rmse"] for r in rows[g])
                     / statistics.fmean(r["test_rmse"] for r in rows[sv])}
        print(f"{g} − {sv}: NLPD {versus[g]['nlpd_difference']:+.4f} ± {se:.4f} (se; paired se {se_paired:.4f})")
    result = {"benchmark": "gwi_diabetes", "seeds": seeds, "steps": steps, "M": M, "summary": summary,
              "gwi_minus_svgp": versus, "runs": rows}
    return emit(result)


if __name__ == "__main__":
    main()
