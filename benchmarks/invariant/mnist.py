"""Van der Wilk et al. 2018 sec. 5.2 / Fig. 4: MNIST, 10 classes — RBF vs rotation vs all-affine vs local deformations.

Every model uses the Gaussian likelihood on one-hot targets (as the paper does for multi-class) and the same
number of inducing points; the RBF baseline is the plain SVGP (the invariant model at zero ranges reduces to
it exactly). The invariant models learn their ranges from the defaults (rotation ±5°, other affine ranges
±0.02, deformation strength 0.5 px).

    python -m benchmarks.invariant.mnist                       # all four, one after the other
    python -m benchmarks.invariant.mnist --models rbf,affine   # a subset (e.g. to run two processes side by side)

Needs MNIST (`invlab fetch mnist`). Last line: one JSON object with test error, NLPD, expected calibration
error (ECE, 15 bins) and ELBO per model.
`--rotate 90` rotates every digit by its own angle in [−90°, 90°] (rotated MNIST, 10 classes).
"""
from __future__ import annotations

from ..common import emit
from .common import common_parser, parse_args, train

MODELS = {
    "rbf": ("svgp", {"likelihood": "gaussian"}),
    "rotation": ("invariant", {"augmentation": "rotation"}),
    "affine": ("invariant", {"augmentation": "affine"}),
    "deformation": ("invariant", {"augmentation": "deformation"}),
}


def main(argv=None) -> dict:
    p = common_parser(__doc__, steps=2500)
    p.add_argument("--rotate", type=float, default=0.0, help="rotate each digit by its own angle in [−α, α] (degrees)")
    p.add_argument("--models", default=",".join(MODELS), help=f"comma-separated subset of {', '.join(MODELS)}")
    args = parse_args(p, argv)
    data = {"dataset": "mnist", "subset": args.subset, "test_subset": args.test_subset, "seed": args.seed}
    if args.rotate:
        data["rotate"] = args.rotate
    result = {"experiment": "mnist_10_class", "rotate": args.rotate}
    for name in args.models.split(","):
        family, extra = MODELS[name]
        config = {"num_inducing": args.num_inducing, **extra}
        if family == "invariant":
            config["num_samples"] = args.num_samples
        result[name] = train(name, family, data, config, args)
    emit(result)
    return result


if __name__ == "__main__":
    main()
