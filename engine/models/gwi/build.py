"""Building Gaussian Wasserstein inference (Wild, Hu & Sejdinovic 2022) from its settings, and its registry entry.

`build_gwi` follows the paper's two steps (sec. 1.3): split off the validation set (for the tempering α_T, sec. 2.3),
fit and freeze the reference P's kernel by the exact marginal likelihood on M = c·√N training points, then
initialise Q in closed form from P (`approximate.closed_form_init`). Classification fits P to centred one-hot labels
(the regression-on-labels proxy) and uses the robust-max likelihood (sec. 3–4).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.nn import functional as F

from ...errors import ConfigError
from ...kernels import REGISTRY as KERNEL_REGISTRY
from ...kernels import build_kernel, median_distance
from ...likelihoods import Gaussian, RobustMax
from ..base import DataInfo
from ..registry import ModelSpec
from ..words import WILD_2022, FamilyWords, MetricWords
from .approximate import MeanNetwork, closed_form_init
from .config import GWIConfig
from .model import GWI, W2_PARTS
from .reference import fit_reference, fit_reference_robust, reference_size


@dataclass
class ReferenceFit:
    """P's fitted kernel on its M points: the inducing inputs X_Z [M, D], their targets Y_Z [M, J], the fitted
    noise variance, the log marginal likelihood, what the robust fit chose and where it started."""

    kernel: object
    Z: torch.Tensor
    targets: torch.Tensor
    noise: float
    lml: float
    chosen: dict
    start: str


def split_validation(config: GWIConfig, N: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices of the points trained on and of the validation split (`validation_fraction` of N, for α_T)."""
    V = int(round(config.validation_fraction * N))
    if V > 0 and N - V < 2:
        raise ConfigError(f"validation_fraction={config.validation_fraction} leaves fewer than 2 of {N} points to "
                          "train on; lower it")
    perm = torch.randperm(N, generator=generator)
    return perm[V:], perm[:V]


def reference_targets(y: torch.Tensor, info: DataInfo) -> torch.Tensor:
    """What P is fitted to, [N, J]: the targets as a column (regression), or centred one-hot labels (J classes)."""
    N = y.shape[0]
    if info.task != "classification":
        return y.to(torch.float64).reshape(N, 1)
    J = info.num_classes
    if not J or J < 2:
        raise ConfigError(f"GWI classification needs at least 2 classes, got {J}")
    return F.one_hot(y.long(), J).to(torch.float64) - 1.0 / J  # centred one-hot, the regression-on-labels proxy


def fit_reference_kernel(config: GWIConfig, X: torch.Tensor, Y: torch.Tensor,
                         generator: torch.Generator) -> ReferenceFit:
    """P's kernel fitted by the exact marginal likelihood on M = c·√N of the points X [N, D] (targets Y [N, J]),
    then frozen; the robust fit scores its starts on as many other points, held out."""
    N, D = X.shape
    M = reference_size(N, config.inducing_factor)
    order = torch.randperm(N, generator=generator)
    z_index, h_index = order[:M], order[M:2 * M]  # X_Z, and as many other points for the held-out check
    Z = X[z_index]
    ell = config.lengthscale if config.lengthscale is not None else median_distance(X)
    kernel = build_kernel(config.kernel, D, lengthscale=ell, variance=config.variance, ard=config.ard,
                          **KERNEL_REGISTRY.options_of(config.kernel, config))
    if config.reference_fit == "robust":
        held_out = (X[h_index], Y[h_index]) if len(h_index) > 0 else None
        noise, lml, fits = fit_reference_robust(kernel, Z, Y[z_index], config.noise_variance, held_out=held_out,
                                                steps=config.reference_steps)
        chosen = {"held_out_log_density": fits[0].held_out} if fits[0].held_out is not None else {}
        return ReferenceFit(kernel, Z, Y[z_index], noise, lml, chosen, fits[0].start)
    noise, lml = fit_reference(kernel, Z, Y[z_index], config.noise_variance, steps=config.reference_steps)
    return ReferenceFit(kernel, Z, Y[z_index], noise, lml, {}, "given kernel")


def gwi_likelihood(config: GWIConfig, info: DataInfo, noise: float):
    """Robust-max over J classes (sec. 3–4), or the Gaussian starting at P's fitted noise (frozen unless learned)."""
    if info.task == "classification":
        return RobustMax(info.num_classes, config.epsilon, num_points=config.quadrature_points)
    likelihood = Gaussian(max(noise, 2e-6))
    likelihood.variance.frozen = not config.learn_noise
    return likelihood


def build_gwi(config: GWIConfig, X: torch.Tensor, y: torch.Tensor, info: DataInfo, *,
              generator: torch.Generator | None = None) -> GWI:
    """Split off the validation set, fit and freeze P on M = c·√N points, initialise Q in closed form. X [N, ...]."""
    N = X.shape[0]
    X = torch.as_tensor(X, dtype=torch.float64)
    y = torch.as_tensor(y)
    generator = generator if generator is not None else torch.Generator().manual_seed(0)
    fit, val = split_validation(config, N, generator)
    X_fit = X[fit].reshape(len(fit), -1)  # [N_fit, D]
    Y = reference_targets(y[fit], info)  # [N_fit, J]
    J, D = Y.shape[1], X_fit.shape[1]
    ref = fit_reference_kernel(config, X_fit, Y, generator)
    init_sqrt, init_mean = closed_form_init(ref.kernel, ref.Z, X_fit, Y if config.init_mean else None, ref.noise,
                                            config.init_regulariser)
    network = MeanNetwork(D, J, config.network_width, config.network_depth) if config.network_width > 0 else None
    model = GWI(ref.kernel, ref.Z, gwi_likelihood(config, info, ref.noise), N, num_latent=J, task=info.task,
                num_classes=info.num_classes, init_sqrt=init_sqrt, init_mean=init_mean, network=network,
                num_spectrum=config.num_spectrum, spectrum=config.spectrum,
                validation=(X[val], y[val]) if len(val) > 0 else None,
                temperature_bounds=(1e-3, config.max_temperature))
    M = ref.Z.shape[0]
    model.reference_info = {"M": float(M), "noise_variance": ref.noise, "log_marginal_likelihood": ref.lml,
                            **ref.chosen}
    model.reference_start = ref.start
    model.reference_targets = ref.targets.reshape(M, J).clone()  # y_Z [M, J] P was fitted to (not in the state)
    model.data_info = info
    return model


SPEC = ModelSpec("gwi", GWIConfig, build_gwi,
                 "Gaussian Wasserstein inference in function space: SVGP-form Q fitted to a frozen reference GP "
                 "(Wild, Hu & Sejdinovic 2022)", live=(("noise_variance", "likelihood.variance"),),
                 terms=("expected_log_lik", "w2") + W2_PARTS,
                 words=FamilyWords("Gaussian Wasserstein inference", "a sparse GP fitted in function space to a "
                                   "reference GP by the 2-Wasserstein distance", WILD_2022),
                 # diabetes: Wild, Hu & Sejdinovic 2022 use UCI regression
                 page={"data": {"dataset": "diabetes"}, "model": {"inducing_factor": 2.0}, "train": {"eval_size": 200}},
                 # the W2 estimate and its parts have one view of their own ("Parts of the W2 estimate")
                 metrics={"expected_log_lik": MetricWords("expected log-likelihood (nats)", "Expected log-likelihood"),
                          "w2": MetricWords("Ŵ² (squared Wasserstein distance)", "W2 estimate", curve=False),
                          "w2_mean": MetricWords("mean term ‖m_P − m_Q‖²", "W2: mean term", curve=False),
                          "w2_trace_p": MetricWords("trace of C_P", "W2: trace of C_P", curve=False),
                          "w2_trace_q": MetricWords("trace of C_Q", "W2: trace of C_Q", curve=False),
                          "w2_eigen": MetricWords("eigenvalue term Σ√λ", "W2: eigenvalue term", curve=False)})


__all__ = ["build_gwi", "SPEC", "ReferenceFit", "split_validation", "reference_targets", "fit_reference_kernel",
           "gwi_likelihood"]
