"""Van der Wilk et al. 2018 sec. 5.1 / Fig. 3: recover the rotation of a partially rotated MNIST, odd vs even.

Every digit is rotated by its own angle in [−α_true, α_true]; a rotation-only invariant GP (one learned α,
started near 0°) with the Pólya-Gamma logistic bound is trained, and compared with the RBF baseline: the
same model with α frozen at 0 (exactly an RBF SVGP with the same bound; tests/models/test_invariant.py).

    python -m benchmarks.invariant.rotated_mnist --alpha 90
    python -m benchmarks.invariant.rotated_mnist --alpha 180

Needs MNIST (`invlab fetch mnist`). Last line: one JSON object with the learned α over training, test
error and ELBO of both models.
"""
from __future__ import annotations

from ..common import emit
from .common import common_parser, parse_args, train


def main(argv=None) -> dict:
    p = common_parser(__doc__)
    p.add_argument("--alpha", type=float, default=90.0, help="α_true in degrees")
    p.add_argument("--init-alpha", type=float, default=2.0, help="initial learned α in degrees")
    p.add_argument("--skip-baseline", action="store_true")
    args = parse_args(p, argv)
    data = {"dataset": "mnist", "rotate": args.alpha, "odd_even": True, "subset": args.subset,
            "test_subset": args.test_subset, "seed": args.seed}
    base = {"num_inducing": args.num_inducing, "likelihood": "polya_gamma", "augmentation": "rotation"}
    result = {"experiment": "rotated_mnist_odd_even", "alpha_true": args.alpha, "init_alpha": args.init_alpha}
    inv = train("rotation", "invariant", data,
                {**base, "num_samples": args.num_samples, "init_rotation": args.init_alpha}, args)
    result["invariant"] = inv
    result["alpha_learned"] = inv["ranges"]["rotation"]
    result["alpha_history"] = inv["range_history"]["rotation"]
    if not args.skip_baseline:
        result["rbf"] = train("rbf", "invariant", data, {**base, "num_samples": 2, "init_rotation": 0.0,
                                                          "learn_ranges": False}, args)
    emit(result)
    return result


if __name__ == "__main__":
    main()
