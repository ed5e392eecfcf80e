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
variance split of conv + RBF; drawn by `convolutional_views`), the configs and the builders.

Variants (registered in `invlab.models`): translation invariant (eq. 13–16), weighted (eq. 17–19), weighted +
RBF (sec. 3.3), and for colour images colour-patch, multi-channel (eq. 22–23) and additive (eq. 24–25).
"""
from __future__ import annotations

import param
import torch

from .. import diagnostics as dg
from ..covariances import Kuu
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
from . import convolutional_views as views_of
from .base import DataInfo
from .config import RobustMaxLikelihoodParams, WhitenParams
from .registry import ELBO_TERMS, ModelSpec
from .svgp import SVGP
from .variational import Q_COVARIANCES, BlockVariational  # noqa: F401 (BlockVariational: re-export)
from .words import ELBO_METRICS, VDW_2017, FamilyWords


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

    def conv_parts(self):
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
            views["inducing_patches"] = views_of.inducing_patch_view(self)
        weights = views_of.weight_view(self) if self.wants("patch_weights") else None
        if weights is not None:
            views["patch_weights"] = weights
        if self.wants("variance_split") and isinstance(self.kernel, Sum):
            views["variance_split"] = views_of.variance_split(self, data)
        if self.wants("inducing_images") and isinstance(self.kernel, Sum):
            views["inducing_images"] = views_of.inducing_image_view(self)
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
# the page's sizes: with an image's identical patches counted once (invlab.covariances.patches.distinct_patches),
# batches of 128 and 500 test images take about 20 ms a step on rectangles (the convolutional families crawled at
# 0.3-0.4 steps/s on a 2-core laptop before, scoring all 2,000 test images)
_CONV_TRAIN = {"batch_size": 128, "eval_size": 500}


def _page(dataset: str, train: dict) -> dict:
    """A convolutional family's page defaults: its own image data set and training sizes."""
    return {"data": {"dataset": dataset}, "model": {}, "train": dict(train)}


SPECS = (
    ModelSpec("conv-invariant", ConvolutionalConfig, build_conv_invariant,
              "Translation-invariant convolutional GP with inducing patches (van der Wilk et al. 2017)",
              image_only=True, live=_PATCH_KERNEL_LIVE, terms=ELBO_TERMS, metrics=ELBO_METRICS,
              words=FamilyWords("convolutional GP", "one function summed over every patch of an image, so a pattern "
                                "counts wherever it appears", VDW_2017), page=_page("rectangles", _CONV_TRAIN)),
    ModelSpec("conv-weighted", WeightedConvolutionalConfig, build_conv_weighted,
              "Weighted convolutional GP: learnable patch weights (van der Wilk et al. 2017)",
              image_only=True, live=_PATCH_KERNEL_LIVE, terms=ELBO_TERMS, metrics=ELBO_METRICS,
              words=FamilyWords("weighted convolutional GP", "the convolutional GP with a learned weight for each "
                                "patch position", VDW_2017), page=_page("rectangles", _CONV_TRAIN)),
    ModelSpec("conv-weighted-rbf", WeightedRBFConfig, build_conv_weighted_rbf,
              "Weighted convolutional + RBF GP: inducing patches and inducing images, block-diagonal K_uu",
              image_only=True,
              live=(("lengthscale", "kernel.parts.1.base.lengthscale"), ("variance", "kernel.parts.1.base.variance"),
                    ("rbf_lengthscale", "kernel.parts.0.lengthscale"), ("rbf_variance", "kernel.parts.0.variance"),
                    ("noise_variance", "likelihood.variance")), terms=ELBO_TERMS, metrics=ELBO_METRICS,
              words=FamilyWords("weighted convolutional + RBF GP", "the weighted convolutional GP plus a whole-image "
                                "RBF part", VDW_2017), page=_page("rectangles", _CONV_TRAIN)),
    ModelSpec("conv-colour", ColourConvolutionalConfig, build_conv_colour,
              "Convolutional GP for colour images: colour-patch, multi-channel or additive (van der Wilk et al. 2017)",
              image_only=True, live=(("noise_variance", "likelihood.variance"),), terms=ELBO_TERMS,
              metrics=ELBO_METRICS,
              words=FamilyWords("convolutional GP for colour images", "the convolutional GP over colour patches, per "
                                "channel or added across channels", VDW_2017),
              # photographs have no repeated patches to count once: smaller batches
              page=_page("photo-patches", {"batch_size": 32, "eval_size": 200})),
)
