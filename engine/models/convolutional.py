"""Convolutional GPs with inducing patches (van der Wilk, Rasmussen & Hensman 2017).

The family is the SVGP core with other covariances: the kernels are `OrbitKernel`s summed over patches
(`invlab.kernels.convolutional`) and the inducing variables live in patch space (`invlab.inducing.patches`);
`invlab.covariances.patches` gives their K_uu, K_uf and k_ff. The weighted convolutional + RBF kernel and the
multi-channel kernel have inducing variables in independent blocks (sec. 3.3–3.4, app. C), so K_uu is block
diagonal (`Kuu_blocks`); the SVGP core factorises it block by block and forms q(f) with solves against M×M blocks
only (eq. C.23–C.24, in `conditionals`). q(u) is chosen by `q_covariance` (`variational`):

- `full`:       one Gaussian over all blocks stacked (S is Σ M_b × Σ M_b; posterior correlations across blocks),
- `mean-field`: independent blocks (S block diagonal, the paper's mean-field; equal to `full` with one block),
- `diagonal`:   independent inducing outputs.

What is added here is what is convolutional: the diagnostics (inducing patches by output, patch weights, the
variance split of conv + RBF), the configs and the builders.

Variants (registered in `invlab.models`): translation invariant (eq. 13–16), weighted (eq. 17–19), weighted +
RBF (sec. 3.3), and for colour images colour-patch, multi-channel (eq. 22–23) and additive (eq. 24–25).
"""
from __future__ import annotations

import numpy as np
import param
import torch

from .. import diagnostics as dg
from ..covariances import Kff_diag, Kuu
from ..diagnostics import hyperparameter_values
from ..errors import ConfigError
from ..inducing import (
    InducingBlocks,
    InducingPatches,
    InducingPoints,
    SharedInducingPatches,
    initial_locations,
    initial_patches,
)
from ..kernels import build_kernel, median_distance
from ..kernels.combinators import Sum
from ..kernels.convolutional import Convolutional, MultiChannelConvolutional, WeightedConvolutional, build_patch_kernel
from ..likelihoods import Likelihood, likelihood_for
from .base import DataInfo
from .config import RobustMaxLikelihoodParams, WhitenParams
from .registry import ELBO_TERMS, ModelSpec
from .svgp import SVGP
from .variational import Q_COVARIANCES, BlockVariational  # noqa: F401 (BlockVariational: re-export)


# -- the model -----------------------------------------------------------------------------------------------------
class ConvolutionalGP(SVGP):
    """SVGP with inducing patches and inducing blocks; `prior_cholesky()` factors K_uu block by block."""

    # labels of the live hyper-parameters (`tunables`): the patch kernel k_g, and the whole-image RBF part of +RBF
    tunable_owners = {"kernel.base.": "patch kernel", "kernel.parts.1.base.": "patch kernel",
                      "kernel.parts.0.": "RBF part"}

    def __init__(self, kernel, inducing, likelihood: Likelihood, num_data: int, *, num_latent: int = 1,
                 whiten: bool = True, q_covariance: str = "full", jitter: float | None = None,
                 task: str = "regression", num_classes: int | None = None):
        super().__init__(kernel, inducing, likelihood, num_data, num_latent=num_latent, whiten=whiten,
                         q_covariance=q_covariance, jitter=jitter, task=task, num_classes=num_classes)

    # -- what to look at -----------------------------------------------------------------------------------------------
    @torch.no_grad()
    def inducing_output_mean(self) -> torch.Tensor:
        """E_q[u] [ΣM_b, L] in the units of g (whitened: L_uu m, block by block)."""
        m = self.q.q_mu
        if not self.whiten:
            return m.clone()
        return self.prior_cholesky().matmul(m)

    def _conv_parts(self):
        """(inducing patches, convolutional kernel, row offset of their block in u) of this model."""
        if isinstance(self.inducing, InducingBlocks):
            a = 0
            for b, k in zip(self.inducing.blocks, self.kernel.parts):
                if isinstance(b, InducingPatches):
                    return b, k, a
                a += b.num_inducing
        return self.inducing, self.kernel, 0

    @torch.no_grad()
    def own_diagnostics(self, data=None) -> dict[str, dg.View]:
        """The family's own views: inducing patches as images (sorted by their inducing output, van der Wilk, Rasmussen
        & Hensman, "Convolutional Gaussian Processes", 2017, Fig. 1), the learned patch weights as an image, for a
        sum with an RBF each part's share of the variance and the RBF's inducing images, the eigenvalues of K_uu and
        the hyper-parameters."""
        views: dict[str, dg.View] = {}
        if self.wants("inducing_patches"):
            views["inducing_patches"] = self._inducing_patch_view()
        weights = self._weight_view() if self.wants("patch_weights") else None
        if weights is not None:
            views["patch_weights"] = weights
        if self.wants("variance_split") and isinstance(self.kernel, Sum):
            views["variance_split"] = self._variance_split(data)
        if self.wants("inducing_images") and isinstance(self.kernel, Sum):
            views["inducing_images"] = self._inducing_image_view()
        if self.wants("kuu_spectrum"):
            K = Kuu(self.inducing, self.kernel).cpu().numpy()
            views["kuu_spectrum"] = dg.Spectrum(title="Eigenvalues of K_uu", values=dg.spectrum_of(K),
                                                description="Block-diagonal K_uu: the union of the blocks' spectra. A "
                                                            "wide spread means an ill-conditioned K_uu (more jitter "
                                                            "needed).")
        if self.wants("hyperparameters"):
            views["hyperparameters"] = dg.Scalars(title=dg.hyperparameter_title(self),
                                                  values=hyperparameter_values(self))
        return views

    def _inducing_patch_view(self) -> dg.ImageGrid:
        """Inducing patches sorted by their inducing output mean (van der Wilk, Rasmussen & Hensman 2017 Fig. 1); per
        class when multi-class."""
        inducing, kernel, start = self._conv_parts()
        M = inducing.num_patches
        mu = self.inducing_output_mean()  # [ΣM_b, L]
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
            top, bottom = self.class_names[:2][::-1] if len(self.class_names or ()) == 2 else ("class 1", "the other")
            return dg.ImageGrid(title=title, images=imgs.reshape((rows, cols) + Z.shape[1:]),
                                row_labels=[f"{row[0]:+.2f} … {row[-1]:+.2f}" for row in ranges],
                                description=f"Patches at the top favour {top} (or large outputs), at the bottom "
                                            f"{bottom}; each row is labelled with the range of its patches' inducing "
                                            "output mean E[g(z)]." + tint)
        cols = min(8, M)
        order = np.argsort(-score, axis=0)[:cols].T  # [L, cols]: each class's strongest patches
        names = self.class_names or [f"class {k}" for k in range(score.shape[1])]
        return dg.ImageGrid(title=f"Inducing patches with the largest inducing output, per class ({cols} of {M} "
                                  "each)", images=Z[order],
                            row_labels=list(names)[:score.shape[1]],
                            description="Row k: the patches whose inducing output favours class k most "
                                        "(van der Wilk, Rasmussen & Hensman 2017 Fig. 1)." + tint)

    def _weight_view(self) -> dg.ImageGrid | None:
        _, kernel, _ = self._conv_parts()
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

    def _variance_split(self, data) -> dg.Scalars:
        """Prior variance of f_conv and of f_rbf at the data, and the kernels' σ² (van der Wilk, Rasmussen & Hensman
        2017 sec. 3.3)."""
        values = {}
        for block, part in zip(self.inducing.blocks, self.kernel.parts):
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

    def _inducing_image_view(self) -> dg.ImageGrid:
        points = next(b for b in self.inducing.blocks if not isinstance(b, InducingPatches))
        Z = points.Z.detach().cpu().numpy()
        return dg.ImageGrid(title=f"Inducing images of the RBF part ({dg.how_many(min(len(Z), 32), len(Z))})",
                            images=dg.image_grid_from_flat(Z, self.image_shape, max_images=32))


def channel_tinted(Z: np.ndarray, strength: np.ndarray) -> np.ndarray:
    """Grey patches Z [M, h, w] shared by the colour channels as RGB [M, h, w, 3]: each patch's values (scaled to
    [0, 1] over all patches) in each channel c, times its channel's `strength` [3, M] (≥ 0) relative to its largest
    (a patch with no strength anywhere is drawn grey)."""
    lo, hi = float(Z.min()), float(Z.max())
    unit = (Z - lo) / (hi - lo) if hi > lo else np.full_like(Z, 0.5)  # [M, h, w]
    top = strength.max(0)  # [M]
    share = np.where(top > 0, strength / np.where(top > 0, top, 1.0), 1.0)  # [3, M]
    return unit[..., None] * share.T[:, None, None, :]  # [M, h, w, 3]


# -- configuration --------------------------------------------------------------------------------------------------
class PatchParams(param.Parameterized):
    """The patches, their inducing variables and the patch kernel k_g."""

    patch_size = param.Integer(default=3, bounds=(1, 64), doc="Side h = w of the square patches.")
    stride = param.Integer(default=1, bounds=(1, 64), doc="Step between neighbouring patches, in pixels.")
    num_inducing = param.Integer(default=64, bounds=(1, 5000), doc="Number of inducing patches M.")
    inducing_init = param.Selector(default="data", objects=["data", "noise"],
                                   doc="Start inducing patches at distinct training patches, or at uniform noise.")
    learn_inducing = param.Boolean(default=True, doc="Optimise the inducing patches.")
    patch_kernel = param.Selector(default="rbf", objects=["rbf", "matern52"], doc="Kernel k_g on patches.")
    lengthscale = param.Number(default=None, allow_None=True, bounds=(1e-4, 1e4),
                               doc="Initial lengthscale of k_g; empty = median distance between training patches.")
    variance = param.Number(default=1.0, bounds=(1e-5, 1e4),
                            doc="Initial variance σ² of k_g (patch weights start at 1/P, so f starts near this scale).")
    ard = param.Boolean(default=False, doc="One lengthscale per pixel of a patch.")


class ConvolutionalConfig(WhitenParams, RobustMaxLikelihoodParams, PatchParams):
    """Translation-invariant convolutional GP: f(x) = Σ_p g(x[p]) with inducing patches (van der Wilk, Rasmussen &
    Hensman 2017 sec. 3.1)."""

    # groups are listed last-shown first: param shows the last base's parameters first (invlab.models.config)
    q_covariance = param.Selector(default="full", objects=list(Q_COVARIANCES),
                                  doc="q(u) covariance: full; mean-field = independent blocks (conv vs RBF, or per "
                                      "colour channel; as full with one block); diagonal.")


class WeightedConvolutionalConfig(ConvolutionalConfig):
    """Weighted convolutional GP: f(x) = Σ_p w_p g(x[p]) with learnable patch weights (van der Wilk, Rasmussen & Hensman
    2017 sec. 3.2).

    On colour images every channel of every position is a patch of its own (the paper's grey baseline)."""

    learn_weights = param.Boolean(default=True, doc="Optimise the patch weights w_p.")


class WeightedRBFConfig(WeightedConvolutionalConfig):
    """Weighted convolutional + RBF: f = f_conv + f_rbf with inducing patches and inducing images (sec. 3.3)."""

    num_inducing_rbf = param.Integer(default=64, bounds=(1, 5000), doc="Number of inducing images of the RBF part.")
    rbf_lengthscale = param.Number(default=None, allow_None=True, bounds=(1e-4, 1e4),
                                   doc="Initial RBF lengthscale on whole images; empty = median distance between "
                                       "images.")
    rbf_variance = param.Number(default=0.1, bounds=(1e-5, 1e4), doc="Initial variance of the RBF part.")


class ColourConvolutionalConfig(WeightedConvolutionalConfig):
    """Weighted convolutional GPs for colour images (van der Wilk, Rasmussen & Hensman 2017 sec. 3.4)."""

    colour = param.Selector(default="multi-channel", objects=["colour-patch", "multi-channel", "additive"],
                            doc="colour-patch: g on h×w×C patches; multi-channel: one g_c per channel (shared inducing "
                                "patches, block-diagonal K_uu); additive: g on colour patches with a sum of "
                                "per-channel kernels.")


# -- construction -----------------------------------------------------------------------------------------------------
def _check_images(info: DataInfo, name: str) -> tuple[int, int, int]:
    if info.image_shape is None:
        raise ConfigError(f"model {name!r} needs image data [N, C, H, W]; this dataset is tabular")
    return tuple(info.image_shape)


def _patch_lengthscale(config, U: torch.Tensor, generator) -> float:
    if config.lengthscale is not None:
        return float(config.lengthscale)
    distinct = torch.unique(U.reshape(-1, U.shape[-1])[:20000], dim=0)
    return median_distance(distinct[torch.randperm(distinct.shape[0], generator=generator)[:500]])


def _conv_kernel_and_inducing(config, X, image_shape, generator, *, weighted: bool, colour: str | None = None):
    """The convolutional kernel of a config and its inducing patches, both initialised from the data."""
    C = image_shape[0]
    probe = build_patch_kernel(config.patch_kernel, 1)  # geometry first; k_g is rebuilt below with its size
    if colour == "multi-channel":
        kernel = MultiChannelConvolutional(probe, image_shape, config.patch_size, config.stride)
        patches = lambda x: kernel.channel_patches(x).reshape(x.shape[0], -1, kernel.patch_dim)  # noqa: E731
    else:
        cls = WeightedConvolutional if weighted else Convolutional
        kernel = cls(probe, image_shape, config.patch_size, config.stride, colour_patches=colour is not None)
        patches = kernel.patches
    idx = torch.randperm(X.shape[0], generator=generator)[:500]
    ell = _patch_lengthscale(config, patches(X[idx]), generator)
    kernel.base = build_patch_kernel(config.patch_kernel, kernel.patch_dim, lengthscale=ell, variance=config.variance,
                                     ard=config.ard, channels=C if colour == "additive" else 1)
    # f starts as the mean of the patch responses (GPflow 2's normalisation of the paper's sum); weights v start at 1
    kernel.weight = 1.0 / (kernel.num_positions if colour == "multi-channel" else kernel.num_patches)
    if weighted:
        kernel.weights.frozen = not config.learn_weights
    Z = initial_patches(X, config.num_inducing, patches, generator, init=config.inducing_init)
    if colour == "multi-channel":
        inducing = SharedInducingPatches(Z, C, kernel.patch_shape, learnable=config.learn_inducing)
    else:
        inducing = InducingPatches(Z, kernel.patch_shape, learnable=config.learn_inducing)
    return kernel, inducing


def _model(config, kernel, inducing, X, info: DataInfo) -> ConvolutionalGP:
    likelihood = likelihood_for(config, info)
    model = ConvolutionalGP(kernel, inducing, likelihood, X.shape[0],
                            num_latent=likelihood.num_latent(info.num_classes),
                            whiten=config.whiten, q_covariance=config.q_covariance, task=info.task,
                            num_classes=info.num_classes)
    model.data_info = info
    return model


def build_conv_invariant(config: ConvolutionalConfig, X: torch.Tensor, y: torch.Tensor, info: DataInfo, *,
                         generator: torch.Generator | None = None) -> ConvolutionalGP:
    """Build the translation-invariant convolutional GP (van der Wilk, Rasmussen & Hensman, "Convolutional Gaussian
    Processes", 2017, eq. 10) on images X [N, C, H, W] with inducing patches."""
    image_shape = _check_images(info, "conv-invariant")
    kernel, inducing = _conv_kernel_and_inducing(config, X, image_shape, generator, weighted=False)
    return _model(config, kernel, inducing, X, info)


def build_conv_weighted(config: WeightedConvolutionalConfig, X: torch.Tensor, y: torch.Tensor, info: DataInfo, *,
                        generator: torch.Generator | None = None) -> ConvolutionalGP:
    """Build the weighted convolutional GP, each patch position with a learned weight (van der Wilk, Rasmussen &
    Hensman, 2017, eq. 21)."""
    image_shape = _check_images(info, "conv-weighted")
    kernel, inducing = _conv_kernel_and_inducing(config, X, image_shape, generator, weighted=True)
    return _model(config, kernel, inducing, X, info)


def build_conv_weighted_rbf(config: WeightedRBFConfig, X: torch.Tensor, y: torch.Tensor, info: DataInfo, *,
                            generator: torch.Generator | None = None) -> ConvolutionalGP:
    """Build the sum of a weighted convolutional kernel and an RBF on the whole image, with independent inducing blocks
    (van der Wilk, Rasmussen & Hensman, 2017, sec. 3.3, app. C)."""
    image_shape = _check_images(info, "conv-weighted-rbf")
    conv, patches = _conv_kernel_and_inducing(config, X, image_shape, generator, weighted=True)
    D = X.reshape(X.shape[0], -1).shape[1]
    ell = config.rbf_lengthscale if config.rbf_lengthscale is not None else median_distance(X)
    rbf = build_kernel("rbf", D, lengthscale=ell, variance=config.rbf_variance)
    M = min(config.num_inducing_rbf, X.shape[0])
    images = InducingPoints(initial_locations(X, M, generator), learnable=config.learn_inducing)
    # RBF block first, patches second (van der Wilk, Rasmussen & Hensman 2017 app. C.1)
    return _model(config, Sum([rbf, conv]), InducingBlocks([images, patches]), X, info)


def build_conv_colour(config: ColourConvolutionalConfig, X: torch.Tensor, y: torch.Tensor, info: DataInfo, *,
                      generator: torch.Generator | None = None) -> ConvolutionalGP:
    """Build the colour convolutional GP on images [N, C, H, W]: patches over channels, or one function per channel with
    weights per channel (van der Wilk, Rasmussen & Hensman, 2017, sec. 3.4, eq. 22–23)."""
    image_shape = _check_images(info, "conv-colour")
    kernel, inducing = _conv_kernel_and_inducing(config, X, image_shape, generator, weighted=True, colour=config.colour)
    return _model(config, kernel, inducing, X, info)


# the registry's entries: config parameter → learnable it initialises (`live`: the dashboard applies changes live)
_PATCH_KERNEL_LIVE = (("lengthscale", "kernel.base.lengthscale"), ("variance", "kernel.base.variance"),
                      ("noise_variance", "likelihood.variance"))
SPECS = (
    ModelSpec("conv-invariant", ConvolutionalConfig, build_conv_invariant,
              "Translation-invariant convolutional GP with inducing patches (van der Wilk et al. 2017)",
              image_only=True, live=_PATCH_KERNEL_LIVE, terms=ELBO_TERMS),
    ModelSpec("conv-weighted", WeightedConvolutionalConfig, build_conv_weighted,
              "Weighted convolutional GP: learnable patch weights (van der Wilk et al. 2017)",
              image_only=True, live=_PATCH_KERNEL_LIVE, terms=ELBO_TERMS),
    ModelSpec("conv-weighted-rbf", WeightedRBFConfig, build_conv_weighted_rbf,
              "Weighted convolutional + RBF GP: inducing patches and inducing images, block-diagonal K_uu",
              image_only=True,
              live=(("lengthscale", "kernel.parts.1.base.lengthscale"), ("variance", "kernel.parts.1.base.variance"),
                    ("rbf_lengthscale", "kernel.parts.0.lengthscale"), ("rbf_variance", "kernel.parts.0.variance"),
                    ("noise_variance", "likelihood.variance")), terms=ELBO_TERMS),
    ModelSpec("conv-colour", ColourConvolutionalConfig, build_conv_colour,
              "Convolutional GP for colour images: colour-patch, multi-channel or additive (van der Wilk et al. 2017)",
              image_only=True, live=(("noise_variance", "likelihood.variance"),), terms=ELBO_TERMS),
)
