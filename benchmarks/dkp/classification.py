"""Tabular classification (wine: 178 wines, 13 features, 3 classes; or breast_cancer: 569 tumours, 30 features):
DIWP against NNGP and the plain SVGP with the same ReLU kernel (test log-likelihood, accuracy, ELBO per point).

    python -m benchmarks.dkp.classification [--dataset wine|breast_cancer] [--quick] [--steps 2000 --splits 3]
"""
from ..common import parse
from .common import common_parser, run_experiment


def main(argv=None):
    p = common_parser(__doc__, steps=2000, samples=4, splits=3)
    p.add_argument("--dataset", default="wine", choices=["wine", "breast_cancer"])
    args = parse(p, argv)
    return run_experiment(f"dkp_{args.dataset}", args.dataset, args)


if __name__ == "__main__":
    main()
