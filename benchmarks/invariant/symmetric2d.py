"""Van der Wilk et al. 2018 Fig. 2: regression on `symmetric-2d`, a function with f(x1, x2) = f(x2, x1).

The invariant GP (orbit {identity, swap}, S = P = 2: the exact double-sum kernel) against the plain RBF
SVGP with the same number of inducing points, on the standard data and on `one_sided` data (training points
only from the half x1 ≥ x2, tested on the whole square, where only the invariant model can generalise).

    python -m benchmarks.invariant.symmetric2d

Last line: one JSON object with ELBO and test RMSE / NLPD per model and data variant.
"""
from __future__ import annotations

from ..common import emit
from .common import common_parser, parse_args, train


def main(argv=None) -> dict:
    p = common_parser(__doc__, steps=4000, num_inducing=100, batch_size=0, learning_rate=0.03)
    p.add_argument("--num-train", type=int, default=100)
    args = parse_args(p, argv)
    if args.quick:
        args.subset = args.test_subset = 0
    result = {"experiment": "symmetric_2d", "num_train": args.num_train}
    for variant, one_sided in (("standard", False), ("one_sided", True)):
        data = {"dataset": "symmetric-2d", "seed": args.seed,
                "source_options": {"num_train": args.num_train, "one_sided": one_sided}}
        common = {"num_inducing": args.num_inducing}
        result[variant] = {
            "rbf": train(f"{variant}/rbf", "svgp", data, common, args),
            "invariant": train(f"{variant}/invariant", "invariant", data,
                               {**common, "augmentation": "permutations", "num_samples": 2}, args),
        }
    emit(result)
    return result


if __name__ == "__main__":
    main()
