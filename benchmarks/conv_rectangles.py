"""Rectangles (paper 001 sec. 3.1–3.2): convolutional GPs with 16 inducing patches against an RBF GP with 1,200.

Data: `rectangles`, 1,200 training and 2,000 test images of 28×28 (outlines of random rectangles, tall vs wide).
Models, as in the paper: the translation-invariant and the weighted convolutional kernel with 3×3 patches and
M = 16 inducing patches initialised with uniform noise, Adam (learning rate 0.01, minibatches of 100). The
baseline is an RBF SVGP with --rbf-M learnable inducing images (default 400, k-means initialised), trained the
same way; `--rbf-M 1200 --rbf-lbfgs 40` is the paper's baseline (an inducing point at every training image,
L-BFGS on the full batch), which costs far more CPU time. Bernoulli (probit) likelihood throughout.
Targets (issue 5): invariant ≤ 3 % error, weighted ≤ 1.5 %.

    python -m benchmarks.conv_rectangles [--models invariant,weighted,rbf] [--steps 3000] [--rbf-M 400]
"""
from __future__ import annotations

import torch

from .conv_common import finish, parser, run_model

MODELS = ["invariant", "weighted", "rbf"]


def main(argv=None):
    p = parser(__doc__.split("\n\n")[0], steps=3000, models=MODELS)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--rbf-M", type=int, default=400, help="inducing images of the RBF baseline")
    p.add_argument("--rbf-lbfgs", type=int, default=0, help="fit the RBF baseline by this many L-BFGS steps (20 "
                                                             "iterations each, full batch) instead of Adam")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    data = {"dataset": "rectangles", "seed": args.seed, "source_options": {"num_train": 1200, "num_test": 2000}}
    conv = {"patch_size": 3, "num_inducing": 16, "inducing_init": "noise"}
    train = {"steps": args.steps, "batch_size": 100, "learning_rate": args.lr, "seed": args.seed}
    runs = {
        "invariant": ("conv-invariant", conv, train),
        "weighted": ("conv-weighted", conv, train),
        "rbf": ("svgp", {"num_inducing": args.rbf_M, "learn_inducing": not args.rbf_lbfgs},
                {"steps": args.rbf_lbfgs, "optimizer": "lbfgs", "learning_rate": 1.0, "batch_size": 0, "seed": args.seed}
                if args.rbf_lbfgs else train),
    }
    results = []
    for label in args.models.split(","):
        model, mc, tr = runs[label]
        every = max(1, args.rbf_lbfgs // 4) if (label == "rbf" and args.rbf_lbfgs) else args.eval_every
        results.append(run_model(label, model, data, mc, tr, eval_every=every))
    finish("rectangles", results, targets={"invariant": 0.03, "weighted": 0.015})


if __name__ == "__main__":
    main()
