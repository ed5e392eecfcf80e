"""Colour images (van der Wilk, Rasmussen & Hensman 2017 sec. 3.4): colour-patch, multi-channel and additive kernels vs
the grey weighted kernel.

Data: `photo-patches`, 16×16 colour patches cut from scikit-learn's two sample photographs (china, flower), 1,000
for training and 500 for testing, labelled by photograph (the paper used CIFAR-10, which is not available
offline here). Models, all with 3×3 patches and M = 64 inducing patches from the data, Bernoulli likelihood,
Adam (learning rate 0.01, minibatches of 100):
- grey-weighted: the weighted kernel with every colour channel's patches as patches of their own (the
  paper's baseline "weighted": one g for all channels, P = 3·14·14);
- colour-patch: g on 3×3×3 colour patches;
- multi-channel: one g_c per channel sharing the inducing patches, block-diagonal K_uu, mean-field q(u)
  across the channel blocks (the paper's best CIFAR-10 model), and `multi-channel-full` with a full q(u);
- additive: colour patches with k_g = Σ_c σ_c² κ_c (eq. 24–25);
- rbf: an RBF SVGP on whole images, for reference.

    python -m benchmarks.convolutional.photo [--models grey-weighted,colour-patch,multi-channel,additive,rbf]
                                             [--steps 1500]
"""
from __future__ import annotations

from ..common import parse
from .common import finish, parser, run_models, shrink

MODELS = ["grey-weighted", "colour-patch", "multi-channel", "multi-channel-full", "additive", "rbf"]


def main(argv=None):
    p = parser(__doc__, steps=1500, models=["grey-weighted", "colour-patch", "multi-channel", "additive", "rbf"])
    p.add_argument("--M", type=int, default=64)
    args = parse(p, argv)
    data = {"dataset": "photo-patches", "seed": args.seed,
            "source_options": {"num_train": 1000, "num_test": 500, "patch_size": 16}}
    data = shrink(args, data)
    conv = {"patch_size": 3, "num_inducing": args.M}
    runs = {
        "grey-weighted": ("conv-weighted", conv),
        "colour-patch": ("conv-colour", {**conv, "colour": "colour-patch"}),
        "multi-channel": ("conv-colour", {**conv, "colour": "multi-channel", "q_covariance": "mean-field"}),
        "multi-channel-full": ("conv-colour", {**conv, "colour": "multi-channel", "q_covariance": "full"}),
        "additive": ("conv-colour", {**conv, "colour": "additive"}),
        "rbf": ("svgp", {"num_inducing": args.M}),
    }
    finish("photo-patches", run_models(args, runs, data), M=args.M)


if __name__ == "__main__":
    main()
