"""Diabetes regression (scikit-learn's 442 patients, 10 features): DIWP against NNGP and the plain SVGP with the same
ReLU kernel (Aitchison, Yang & Ober 2021 Table 1 protocol on a UCI-sized set; test log-likelihood in original units and
RMSE).

    python -m benchmarks.dkp.diabetes [--quick] [--steps 2000 --splits 3 --samples 4]
"""
from ..common import parse
from .common import common_parser, run_experiment


def main(argv=None):
    args = parse(common_parser(__doc__, steps=2000, samples=4, splits=3), argv)
    return run_experiment("dkp_diabetes", "diabetes", args)


if __name__ == "__main__":
    main()
