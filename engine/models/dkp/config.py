"""Configs and build functions of the deep kernel process families (Aitchison, Yang & Ober 2021), and their registry
entries: `diwp` (the deep inverse Wishart process), `nngp` (its δ → ∞ limit) and `dkp_svgp` (the engine's SVGP with the
NNGP kernel of the same stack, the plain sparse-GP baseline)."""
from __future__ import annotations

import math

import param
import torch

from ... import settings
from ...errors import ConfigError
from ...inducing import InducingPoints, initial_locations
from ...kernels.gram import GRAM_REGISTRY, GramKernel, InputAffine, NNGPKernel, build_gram_kernel, linear_gram
from ...likelihoods import Likelihood, likelihood_for, preference
from ..base import DataInfo
from ..config import InducingParams, LikelihoodParams, VariationalParams
from ..registry import ELBO_TERMS, ModelSpec
from ..svgp import SVGP
from ..words import AITCHISON_2021, ELBO_METRICS, FamilyWords
from .layers import GlobalInducingOutput, InverseWishartLayer, KernelLayer, LinearInputLayer, OmegaInputLayer
from .model import DeepKernelProcess
from .prior import PriorExplorer


# -- configuration -----------------------------------------------------------------------------------------------------
class GramKernelParams(param.Parameterized):
    """The kernel stack on Gram matrices and the learned input scaling."""

    kernel = param.Selector(default="relu", objects=[],
                            doc="Kernel on Gram matrices: relu (arc-cosine, the NNGP of a ReLU layer), sqexp, or any "
                                "registered one.")
    num_layers = param.Integer(default=2, bounds=(1, 8),
                               doc="L, Gram layers including the input layer (L = 2: two hidden layers and an output "
                                   "layer, three fully-connected layers).")
    lengthscale = param.Number(default=1.0, bounds=(1e-3, 1e3), doc="Initial lengthscale of the sqexp kernel.")
    kernel_variance = param.Number(default=1.0, bounds=(1e-4, 1e4), doc="Initial scale σ² of each layer's kernel.")
    input_scale_bias = param.Boolean(default=True, doc="Learn a scale and a bias per input feature.")


GRAM_REGISTRY.attach(GramKernelParams, "kernel")  # registered Gram kernels' names and own options follow the registry


class GramKernelConfig(LikelihoodParams, InducingParams, GramKernelParams):
    """What every deep-kernel family shares: the kernel stack on Gram matrices and the inducing inputs."""

    # groups are listed last-shown first: param shows the last base's parameters first (invlab.models.config)
    num_inducing = param.Integer(default=100, bounds=(2, 5000), doc="Pi, the number of global inducing inputs.")
    learn_inducing = param.Boolean(doc="Optimise the inducing inputs.")
    likelihood = param.Selector(doc="auto: Gaussian for regression, Bernoulli for 2 classes, softmax for more.")


# `auto`'s order of preference among the likelihoods (softmax before robust-max for many classes)
LIKELIHOOD_PREFERENCE = ("gaussian", "bernoulli", "softmax", "robustmax")


class NNGPConfig(GramKernelConfig):
    """The NNGP: deterministic kernel transforms (the DIWP's δ → ∞ limit) with a global-inducing output layer."""

    num_samples = param.Integer(default=4, bounds=(1, 1000), doc="Monte-Carlo samples per training step.")
    num_predict_samples = param.Integer(default=32, bounds=(1, 10000), doc="Samples averaged when predicting.")
    output_precision = param.Number(default=1.0, bounds=(1e-6, 1e6),
                                    doc="Initial precision Λ of the output layer's pseudo-observations v.")
    kl_estimator = param.Selector(default="sampled", objects=["sampled", "closed_form"],
                                  doc="Each layer's log P − log Q: of the sample (sampled), or −KL(Q ‖ P) given the "
                                      "layer below in closed form (the same expectation, less variance).")


class DIWPConfig(NNGPConfig):
    """The deep inverse Wishart process with doubly-stochastic inducing-point inference (Aitchison, Yang & Ober
    2021)."""

    delta = param.Number(default=50.0, bounds=(1e-3, 1e12),
                         doc="Initial δ of every layer: the prior's 'width' (large δ: little variability, → NNGP).")
    gamma = param.Number(default=1.0, bounds=(1e-6, 1e6), doc="Initial γ: extra degrees of freedom of Q over P.")
    learn_delta = param.Boolean(default=True, doc="Learn δ per layer (off: keep the initial value).")
    input_layer = param.Selector(default="auto", objects=["auto", "omega", "gram"],
                                 doc="omega: Ω over the N0 input features (app. F); gram: an inverse Wishart on the "
                                     "inducing points' input Gram (needs Pi < N0); auto: gram when Pi < N0.")


class DKPSVGPConfig(VariationalParams, GramKernelConfig):
    """A plain SVGP whose kernel is the deep kernel stack (the NNGP kernel); num_layers = 1 is a shallow GP."""

    whiten = param.Boolean(doc="Parameterise q(u) through v = L⁻¹u.")


# -- construction ------------------------------------------------------------------------------------------------------
def _likelihood(config: GramKernelConfig, info: DataInfo) -> Likelihood:
    return likelihood_for(config, info, allowed=preference(LIKELIHOOD_PREFERENCE))


def _kernels(config: GramKernelConfig) -> list[GramKernel]:
    return [build_gram_kernel(config.kernel, lengthscale=config.lengthscale, variance=config.kernel_variance,
                              **GRAM_REGISTRY.options_of(config.kernel, config))
            for _ in range(config.num_layers)]


def desired_outputs(Z: torch.Tensor, X: torch.Tensor, y: torch.Tensor, likelihood: Likelihood, task: str,
                    num_classes: int | None) -> torch.Tensor:
    """Initial inducing outputs v [Pi, L]: the target of each inducing input's nearest training input (app. G)."""
    nearest = torch.cdist(Z, X.reshape(X.shape[0], -1)).argmin(1)
    t = y[nearest]
    if task == "regression":
        return t.reshape(-1, 1).to(torch.float64)
    if likelihood.num_latent(num_classes) == 1:  # Bernoulli: a confident latent of the right sign
        return (2.0 * (2.0 * t.to(torch.float64) - 1.0)).reshape(-1, 1)
    onehot = torch.nn.functional.one_hot(t.long(), num_classes).to(torch.float64)
    return 3.0 * (onehot - 1.0 / num_classes)


@torch.no_grad()
def nngp_inducing_kernels(Xi: torch.Tensor, kernels: list[GramKernel], jitter: float) -> list[torch.Tensor]:
    """K_ℓ at the inducing inputs under the NNGP (δ → ∞): [K0 = X̃X̃ᵀ/N0, K(K0), K(K(K0)), …] with jitter."""
    eye = torch.eye(Xi.shape[0], dtype=Xi.dtype)
    out = [linear_gram(Xi, Xi) + jitter * eye]
    for k in kernels[:-1]:
        out.append(k.K(out[-1]) + jitter * eye)
    return out


def build_dkp(config: NNGPConfig, X: torch.Tensor, y: torch.Tensor, info: DataInfo, *,
              generator: torch.Generator | None = None) -> DeepKernelProcess:
    """A DIWP (for a `DIWPConfig`) or an NNGP (for an `NNGPConfig`) for training inputs X [N, ...] and labels y."""
    X = X.reshape(X.shape[0], -1).to(torch.float64)
    N, D = X.shape
    Pi = min(config.num_inducing, N)
    Z = initial_locations(X, Pi, generator)
    affine = InputAffine(D, config.input_scale_bias)
    kernels = _kernels(config)
    likelihood = _likelihood(config, info)
    output = GlobalInducingOutput(Pi, likelihood.num_latent(info.num_classes),
                                  desired_outputs(Z, X, y, likelihood, info.task, info.num_classes),
                                  config.output_precision)
    L = config.num_layers
    jitter = settings.default_jitter()
    if isinstance(config, DIWPConfig):
        mode = config.input_layer
        if mode == "auto":
            mode = "gram" if Pi < D else "omega"
        if mode == "gram" and Pi >= D:
            raise ConfigError(f"input_layer='gram' needs fewer inducing points than input features (X̃_iX̃_iᵀ must be "
                              f"full rank), but num_inducing={Pi} ≥ {D} features; use input_layer='omega' or 'auto'")
        Ks = nngp_inducing_kernels(Z, kernels, jitter)  # V_ℓ = √γ chol(K_ℓ) starts Q at the prior's mean
        iw = lambda K: InverseWishartLayer(Pi, config.delta, config.gamma,  # noqa: E731
                                           math.sqrt(config.gamma) * torch.linalg.cholesky(K), config.learn_delta)
        input_layer = iw(Ks[0]) if mode == "gram" else OmegaInputLayer(D, config.delta, config.gamma,
                                                                       config.learn_delta)
        hidden = [iw(K) for K in Ks[1:]]
    else:
        input_layer, hidden = LinearInputLayer(), [KernelLayer() for _ in range(L - 1)]
    model = DeepKernelProcess(Z, affine, input_layer, hidden, kernels, output, likelihood, N,
                              num_samples=config.num_samples, num_predict_samples=config.num_predict_samples,
                              learn_inducing=config.learn_inducing, task=info.task, num_classes=info.num_classes,
                              jitter=jitter)
    model.set_kl_estimator(config.kl_estimator)
    model.data_info = info
    return model


def build_dkp_svgp(config: DKPSVGPConfig, X: torch.Tensor, y: torch.Tensor, info: DataInfo, *,
                   generator: torch.Generator | None = None) -> SVGP:
    """The engine's SVGP with the NNGP kernel of the same stack (`NNGPKernel`): the plain sparse-GP baseline."""
    X = X.reshape(X.shape[0], -1).to(torch.float64)
    N, D = X.shape
    M = min(config.num_inducing, N)
    kernel = NNGPKernel(D, _kernels(config), config.input_scale_bias)
    likelihood = _likelihood(config, info)
    model = SVGP(kernel, InducingPoints(initial_locations(X, M, generator), learnable=config.learn_inducing),
                 likelihood, N, num_latent=likelihood.num_latent(info.num_classes), whiten=config.whiten,
                 mean_field=config.mean_field, task=info.task, num_classes=info.num_classes)
    model.data_info = info
    return model


# -- registry entries --------------------------------------------------------------------------------------------------
_NOISE_LIVE = (("noise_variance", "likelihood.variance"),)
# the page starts the deep kernel processes on scikit-learn's diabetes regression (Aitchison, Yang & Ober 2021 use UCI
# regression); classifying, they draw num_predict_samples × 256 softmax samples per test point, so 8 samples (not 32)
# keep an evaluation of 200 digits short
_PAGE_DATA = {"dataset": "diabetes"}
SPECS = (
    ModelSpec("diwp", DIWPConfig, build_dkp,
              "Deep inverse Wishart process, doubly-stochastic inducing-point inference (Aitchison et al. 2021)",
              live=_NOISE_LIVE, prior_explorer=PriorExplorer, terms=ELBO_TERMS, metrics=ELBO_METRICS,
              words=FamilyWords("deep inverse Wishart process", "a deep kernel process: each layer's Gram matrix is "
                                "drawn from an inverse Wishart around the previous one", AITCHISON_2021),
              page={"data": dict(_PAGE_DATA), "model": {"num_predict_samples": 8},
                    "train": {"batch_size": 64, "eval_size": 100}}),
    ModelSpec("nngp", NNGPConfig, build_dkp,
              "NNGP: the deep kernel stack as deterministic transforms (the DIWP's δ → ∞ limit)",
              live=_NOISE_LIVE, prior_explorer=PriorExplorer, terms=ELBO_TERMS, metrics=ELBO_METRICS,
              words=FamilyWords("NNGP (deep kernel, no randomness)", "the deep kernel stack as fixed transforms: the "
                                "deep inverse Wishart process as δ → ∞", AITCHISON_2021),
              page={"data": dict(_PAGE_DATA), "model": {"num_predict_samples": 8}, "train": {"eval_size": 200}}),
    ModelSpec("dkp_svgp", DKPSVGPConfig, build_dkp_svgp,
              "Plain SVGP whose kernel is the deep kernel stack (NNGP kernel); the DIWP's SVGP baseline",
              live=_NOISE_LIVE, prior_explorer=PriorExplorer, terms=ELBO_TERMS, metrics=ELBO_METRICS,
              words=FamilyWords("SVGP with a deep (NNGP) kernel", "a sparse variational GP whose kernel is the deep "
                                "kernel stack: the deep kernel process's baseline", AITCHISON_2021),
              page={"data": dict(_PAGE_DATA), "model": {}, "train": {"eval_size": 200}}),
)

__all__ = ["GramKernelParams", "GramKernelConfig", "NNGPConfig", "DIWPConfig", "DKPSVGPConfig", "build_dkp",
           "build_dkp_svgp", "desired_outputs", "nngp_inducing_kernels", "SPECS"]
