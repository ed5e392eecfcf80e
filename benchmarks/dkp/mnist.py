"""MNIST (the 10,000 real digits `invlab fetch mnist` caches offline: 7,500 train / 2,500 test) with three
fully-connected layers (two hidden + output; no learned input scale or bias, as in Aitchison, Yang & Ober 2021 Table 2):
DIWP against NNGP and the plain SVGP with the same ReLU kernel — test log-likelihood, accuracy and ELBO per training
point.

    INVLAB_DATA=/tmp/invlab-data python -m invlab fetch mnist   # once
    INVLAB_DATA=/tmp/invlab-data python -m benchmarks.dkp.mnist [--quick] [--steps 3000 --batch-size 256]
"""
from ..common import parse
from .common import common_parser, run_experiment


def main(argv=None):
    args = parse(common_parser(__doc__, steps=3000, samples=1, splits=1, batch_size=256, predict_samples=50), argv)
    no_affine = {"input_scale_bias": False}
    return run_experiment("dkp_mnist", "mnist", args, extra={m: no_affine for m in ("diwp", "nngp", "dkp_svgp")})


if __name__ == "__main__":
    main()
