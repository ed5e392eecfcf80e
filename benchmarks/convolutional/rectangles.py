"""Rectangles (van der Wilk, Rasmussen & Hensman 2017 sec. 3.1–3.2): convolutional GPs with 16 inducing patches against
an RBF GP with 1,200.

Data: `rectangles`, 1,200 training and 2,000 test images of 28×28 (outlines of random rectangles, tall vs wide,
sides differing by at least --min-gap pixels: 3 in the Larochelle et al. data the paper uses).
Models, as in the paper: the translation-invariant and the weighted convolutional kernel with 3×3 patches and
M = 16 inducing patches initialised with uniform noise, Adam (learning rate 0.01, minibatches of 100). The
baseline is an RBF SVGP with --rbf-M learnable inducing images (default 400, k-means initialised), trained the
same way; `--rbf-M 1200 --rbf-lbfgs 40` is the paper's baseline (an inducing point at every training image,
L-BFGS on the full batch; about 4 minutes on one core). Bernoulli (probit) likelihood throughout.
Targets: invariant ≤ 3 % error, weighted ≤ 1.5 %.

    python -m benchmarks.convolutional.rectangles [--models invariant,weighted,rbf] [--steps 3000] [--rbf-M 400]
"""
from __future__ import annotations

import numpy as np
import torch

from ..common import parse
from .common import adam, finish, parser, run_model, shrink

MODELS = ["invariant", "weighted", "rbf"]


def rectangle_geometry(images: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Height, width and whether the outline touches the image border, read off the pixels [N, 1, S, S]."""
    on = images[:, 0] > 0.5
    rows, cols = on.any(2), on.any(1)  # [N, S]: rows / columns holding part of the outline
    S = on.shape[-1]
    first = lambda m: m.argmax(1)  # noqa: E731
    last = lambda m: S - 1 - m[:, ::-1].argmax(1)  # noqa: E731
    top, bottom, left, right = first(rows), last(rows), first(cols), last(cols)
    edge = (top == 0) | (left == 0) | (bottom == S - 1) | (right == S - 1)
    return bottom - top + 1, right - left + 1, edge


@torch.no_grad()
def error_breakdown(trainer) -> dict:
    """Where the errors are (van der Wilk, Rasmussen & Hensman 2017 sec. 3.2 blames rectangles along the edge): error
    rates of rectangles that touch the border and of those that do not, and of the most nearly square ones (|height −
    width| ≤ 3, the smallest gap the data allows being 3 by default)."""
    X, y = trainer.X_test, trainer.y_test
    wrong = np.concatenate([(trainer.model.predict(X[a:a + 250]).probs.argmax(-1) != y[a:a + 250].long()).cpu().numpy()
                            for a in range(0, X.shape[0], 250)])
    h, w, edge = rectangle_geometry(X.cpu().numpy())
    near = np.abs(h - w) <= 3
    rate = lambda m: float(wrong[m].mean()) if m.any() else None  # noqa: E731
    return {"errors": int(wrong.sum()), "edge_fraction_of_test": float(edge.mean()),
            "error_edge": rate(edge), "error_interior": rate(~edge), "errors_on_edge": int(wrong[edge].sum()),
            "near_square_fraction_of_test": float(near.mean()), "error_near_square": rate(near),
            "error_interior_not_near_square": rate(~edge & ~near)}


def main(argv=None):
    p = parser(__doc__, steps=3000, models=MODELS)
    p.add_argument("--min-gap", type=int, default=3, help="smallest |height − width| of the rectangles (1 admits "
                                                          "near-squares; 3 is the paper's data)")
    p.add_argument("--rbf-M", type=int, default=400, help="inducing images of the RBF baseline")
    p.add_argument("--rbf-lbfgs", type=int, default=0, help="fit the RBF baseline by this many L-BFGS steps (20 "
                                                             "iterations each, full batch) instead of Adam")
    args = parse(p, argv)
    data = {"dataset": "rectangles", "seed": args.seed, "source_options": {"num_train": 1200, "num_test": 2000,
                                                                               "min_side_gap": args.min_gap}}
    data = shrink(args, data)
    conv = {"patch_size": 3, "num_inducing": 16, "inducing_init": "noise"}
    train = adam(args)
    runs = {
        "invariant": ("conv-invariant", conv, train),
        "weighted": ("conv-weighted", conv, train),
        "rbf": ("svgp", {"num_inducing": args.rbf_M, "learn_inducing": not args.rbf_lbfgs},
                {"steps": args.rbf_lbfgs, "optimizer": "lbfgs", "learning_rate": 1.0, "batch_size": 0,
                 "seed": args.seed} if args.rbf_lbfgs else train),
    }
    results = []
    for label in args.models.split(","):
        model, mc, tr = runs[label]
        every = max(1, args.rbf_lbfgs // 4) if (label == "rbf" and args.rbf_lbfgs) else args.eval_every
        results.append(run_model(label, model, data, mc, tr, eval_every=every, analyse=error_breakdown))
    finish("rectangles", results, targets={"invariant": 0.03, "weighted": 0.015})


if __name__ == "__main__":
    main()
