"""The convolutional GP's own views (van der Wilk, Rasmussen & Hensman, "Convolutional Gaussian Processes", 2017,
arXiv:1709.01894): the inducing patches sorted by their inducing output (Fig. 1), the learned patch weights over
positions (eq. 17–19), the variance split of the weighted convolutional + RBF kernel and the RBF part's inducing images
(sec. 3.3). Each takes the `ConvolutionalGP` whose view it draws; `ConvolutionalGP.own_diagnostics` picks them."""
from __future__ import annotations

import numpy as np

from .. import diagnostics as dg
from ..covariances import Kff_diag
from ..inducing import InducingPatches


def inducing_patch_view(model) -> dg.ImageGrid:
    """Inducing patches sorted by their inducing output mean (van der Wilk, Rasmussen & Hensman 2017 Fig. 1); per
    class when multi-class."""
    inducing, kernel, start = model.conv_parts()
    M = inducing.num_patches
    mu = model.inducing_output_mean()  # [ΣM_b, L]
    blocks = getattr(inducing, "num_outputs", 1)
    score = mu[start:start + blocks * M].reshape(blocks, M, -1).sum(0).cpu().numpy()  # [M, L], channels summed
    C, h, w = inducing.patch_shape
    Z = inducing.Z.detach().cpu().numpy().reshape(M, C, h, w)
    Z = Z[:, 0] if C == 1 else Z.transpose(0, 2, 3, 1)  # [M, h, w(, 3)]
    tint = ""
    if blocks == 3 and C == 1:  # multi-channel colour: one grey patch shared by R, G, B, drawn in its channels
        per_channel = mu[start:start + blocks * M].reshape(blocks, M, -1).abs().sum(-1).cpu().numpy()  # [3, M]
        Z, tint = channel_tinted(Z, per_channel), (
            " Each patch is shared by the red, green and blue channels, each with its own inducing output; it is "
            "drawn in the colours of the channels whose inducing output is largest in size (grey: all alike).")
    if score.shape[1] == 1:  # one latent: all patches, largest output first (top and bottom 16 if many)
        order = np.argsort(-score[:, 0])
        if M > 32:
            order = np.concatenate([order[:16], order[-16:]])
        cols = min(8, len(order))
        rows = -(-len(order) // cols)
        imgs = np.zeros((rows * cols,) + Z.shape[1:])
        imgs[:len(order)] = Z[order]
        title = ("Inducing patches by inducing output (largest first"
                 + (f", then the 16 smallest: {dg.how_many(len(order), M)})" if M > 32
                    else f": {dg.how_many(M, M)})"))
        ranges = [score[order[r * cols:(r + 1) * cols], 0] for r in range(rows)]  # each row's outputs, descending
        top, bottom = model.class_names[:2][::-1] if len(model.class_names or ()) == 2 else ("class 1", "the other")
        return dg.ImageGrid(title=title, images=imgs.reshape((rows, cols) + Z.shape[1:]),
                            row_labels=[f"{row[0]:+.2f} … {row[-1]:+.2f}" for row in ranges],
                            description=f"Patches at the top favour {top} (or large outputs), at the bottom "
                                        f"{bottom}; each row is labelled with the range of its patches' inducing "
                                        "output mean E[g(z)]." + tint)
    cols = min(8, M)
    order = np.argsort(-score, axis=0)[:cols].T  # [L, cols]: each class's strongest patches
    names = model.class_names or [f"class {k}" for k in range(score.shape[1])]
    return dg.ImageGrid(title=f"Inducing patches with the largest inducing output, per class ({cols} of {M} "
                              "each)", images=Z[order],
                        row_labels=list(names)[:score.shape[1]],
                        description="Row k: the patches whose inducing output favours class k most "
                                    "(van der Wilk, Rasmussen & Hensman 2017 Fig. 1)." + tint)


def weight_view(model) -> dg.ImageGrid | None:
    """The learned patch weights v_p over patch positions [C_w, H', W'] of a weighted convolutional kernel (eq. 17–19,
    w_p = s·v_p); None for an unweighted one."""
    _, kernel, _ = model.conv_parts()
    w = kernel.patch_weights()
    if w is None:
        return None
    v = kernel.weights().detach().cpu().numpy().reshape(kernel.weight_shape)  # [C_w, H', W'], w = s·v
    vmax = float(np.abs(v).max()) or 1.0
    labels = ["all channels"] if v.shape[0] == 1 else [["red", "green", "blue"][c] if v.shape[0] == 3 else
                                                        f"channel {c}" for c in range(v.shape[0])]
    s = kernel.weight
    scale = f"1/{round(1 / s)}" if s > 0 and abs(1 / s - round(1 / s)) < 1e-6 else f"{s:.3g}"
    return dg.ImageGrid(title="Learned patch weights v_p over positions", images=v[None], col_labels=labels,
                        vrange=(-vmax, vmax),
                        description=f"v_p for each patch position (red positive, blue negative): where in the "
                                    f"image patch responses count. The kernel weighs patch p by w_p = s·v_p with "
                                    f"the fixed scale s = {scale}, so v_p = 1 everywhere is the plain "
                                    f"convolutional kernel; the hyper-parameter table's \"weights (mean of "
                                    f"{v.size})\" is the mean of this map.")


def variance_split(model, data) -> dg.Scalars:
    """Prior variance of f_conv and of f_rbf at the data, and the kernels' σ² (van der Wilk, Rasmussen & Hensman
    2017 sec. 3.3)."""
    values = {}
    for block, part in zip(model.inducing.blocks, model.kernel.parts):
        conv = isinstance(block, InducingPatches)
        name = "convolutional" if conv else "RBF"
        values[f"σ² of {'k_g' if conv else 'the RBF'}"] = float((part.base if conv else part).variance())
        if data is not None:
            values[f"prior variance of f ({name}), mean over data"] = float(
                Kff_diag(block, part, data[0][:200]).mean())
    if data is not None:
        conv, rbf = (values[f"prior variance of f ({n}), mean over data"] for n in ("convolutional", "RBF"))
        values["convolutional share of the prior variance"] = conv / (conv + rbf)
    return dg.Scalars(title="Variance split: convolutional vs RBF", values=values,
                      description="How much of the prior variance of f each part carries (van der Wilk, "
                                  "Rasmussen & Hensman 2017 sec. 3.3).")


def inducing_image_view(model) -> dg.ImageGrid:
    """The inducing images of the RBF part of a convolutional + RBF sum (sec. 3.3), at most 32."""
    points = next(b for b in model.inducing.blocks if not isinstance(b, InducingPatches))
    Z = points.Z.detach().cpu().numpy()
    return dg.ImageGrid(title=f"Inducing images of the RBF part ({dg.how_many(min(len(Z), 32), len(Z))})",
                        images=dg.image_grid_from_flat(Z, model.image_shape, max_images=32))



def channel_tinted(Z: np.ndarray, strength: np.ndarray) -> np.ndarray:
    """Grey patches Z [M, h, w] shared by the colour channels as RGB [M, h, w, 3]: each patch's values (scaled to
    [0, 1] over all patches) in each channel c, times its channel's `strength` [3, M] (≥ 0) relative to its largest
    (a patch with no strength anywhere is drawn grey)."""
    lo, hi = float(Z.min()), float(Z.max())
    unit = (Z - lo) / (hi - lo) if hi > lo else np.full_like(Z, 0.5)  # [M, h, w]
    top = strength.max(0)  # [M]
    share = np.where(top > 0, strength / np.where(top > 0, top, 1.0), 1.0)  # [3, M]
    return unit[..., None] * share.T[:, None, None, :]  # [M, h, w, 3]
