"""A GPyTorch model watched like the lab's own runs: `invlab.train.watch(model, likelihood=...)` snapshots it through
`Watched`, whose views are what the page shows for the lab's families.

- "hyperparameters" (`Scalars`, recorded as metrics too, so they are drawn over training): every lengthscale
  (the mean of an ARD one), outputscale and the likelihood's noise, named by where they sit in the model
  (`covar_module.base_kernel.lengthscale`, `likelihood.noise`).
- "elbo_terms" (`Scalars`): KL(q(u) ‖ p(u)) of an approximate GP's variational strategy.
- "kuu_spectrum" (`Spectrum`): the eigenvalues of K_uu (k_g(Z, Z) for the inter-domain strategy), whose spread says
  how well conditioned it is.
- "inducing" (`ImageGrid`): the inducing patches of a `ConvKernel` model, or the inducing inputs when they are
  images (an `InvariantKernel` with an image `input_shape`, or rows of a square number of values).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from .. import diagnostics as dg
from .kernels import ConvKernel, InvariantKernel

MAX_IMAGES = 32  # inducing inputs drawn, at most (the first ones)


class Watched:
    """A GPyTorch model (`ExactGP` or `ApproximateGP`) and, optionally, its likelihood, as an object `watch` snapshots:
    `diagnostics()` gives the views listed in the module's doc; `parameters()` are the model's."""

    def __init__(self, model, likelihood=None):
        self.model, self.likelihood = model, likelihood

    def parameters(self):
        """The model's parameters (their dtype and device are the run's)."""
        return self.model.parameters()

    @torch.no_grad()
    def diagnostics(self, data=None) -> dict[str, dg.View]:
        """{name: View} of the model now (see the module's doc); `data` is not needed."""
        views: dict[str, dg.View] = {"hyperparameters": dg.Scalars(
            title="Hyperparameters", values=hyperparameters(self.model, self.likelihood),
            description="The kernels' lengthscales (ARD: their mean) and output scales, and the likelihood's noise.")}
        strategy = getattr(self.model, "variational_strategy", None)
        if strategy is not None:
            views["elbo_terms"] = dg.Scalars(title="ELBO terms", values={
                "KL(q(u) ‖ p(u))": float(strategy.kl_divergence().sum())},
                description="The KL divergence the variational ELBO subtracts (in nats).")
            Kuu = inducing_covariance(self.model)
            if Kuu is not None:
                views["kuu_spectrum"] = dg.Spectrum(
                    title=f"K_uu eigenvalues (M = {Kuu.shape[0]})", values=dg.spectrum_of(Kuu.cpu().numpy()),
                    description="A spread over many decades means an ill-conditioned K_uu (inducing inputs too close).")
            grid = inducing_images(self.model)
            if grid is not None:
                views["inducing"] = grid
        return views


def _held(module) -> str | None:
    """The hyperparameter a GPyTorch module holds that the views show: lengthscale, outputscale or noise."""
    from gpytorch.kernels import Kernel, ScaleKernel
    from gpytorch.likelihoods import FixedNoiseGaussianLikelihood, GaussianLikelihood

    if isinstance(module, ScaleKernel):
        return "outputscale"
    if isinstance(module, Kernel) and module.has_lengthscale:
        return "lengthscale"
    if isinstance(module, (GaussianLikelihood, FixedNoiseGaussianLikelihood)):
        return "noise"
    return None


def hyperparameters(model, likelihood=None) -> dict[str, float]:
    """{where it sits: value} of every lengthscale (an ARD one's mean), outputscale and noise of `model` and
    `likelihood`."""
    out: dict[str, float] = {}
    for prefix, root in (("", model), ("likelihood.", likelihood)):
        for name, module in ([] if root is None else root.named_modules()):
            attribute = _held(module)
            value = None if attribute is None else getattr(module, attribute)
            if isinstance(value, torch.Tensor) and value.numel():
                out[f"{prefix}{name + '.' if name else ''}{attribute}"] = float(value.mean())
    return out


def inducing_covariance(model) -> torch.Tensor | None:
    """K_uu [M, M] without jitter: k_g(Z, Z) for the inter-domain strategy, k(Z, Z) for GPyTorch's own; None for a
    strategy without inducing points."""
    from .variational import InterDomainVariationalStrategy, _orbit_kernel

    strategy = model.variational_strategy
    Z = getattr(strategy, "inducing_points", None)
    if Z is None or Z.dim() != 2:
        return None
    if isinstance(strategy, InterDomainVariationalStrategy):
        kernel, scale = _orbit_kernel(model.covar_module)
        K = kernel.base_kernel(Z, Z).to_dense()
        return K if scale is None else scale.outputscale.reshape(()) * K
    return model.covar_module(Z, Z).to_dense()


def inducing_images(model) -> dg.ImageGrid | None:
    """The inducing patches or inducing images as a grid (grey, or colour for three channels), or None when they
    are not images."""
    from .variational import InterDomainVariationalStrategy, _orbit_kernel

    strategy = model.variational_strategy
    Z = getattr(strategy, "inducing_points", None)
    if Z is None or Z.dim() != 2:
        return None
    shape, what = None, "Inducing inputs"
    kernel = _orbit_kernel(model.covar_module)[0] if isinstance(strategy, InterDomainVariationalStrategy) else None
    if isinstance(kernel, ConvKernel):
        shape, what = kernel.conv.patch_shape, "Inducing patches"
    elif isinstance(kernel, InvariantKernel) and kernel.input_shape is not None and len(kernel.input_shape) == 3:
        shape = kernel.input_shape
    elif math.isqrt(Z.shape[-1]) ** 2 == Z.shape[-1] and Z.shape[-1] >= 9:
        side = math.isqrt(Z.shape[-1])
        shape = (1, side, side)
    if shape is None or shape[0] not in (1, 3):
        return None
    Z = Z[:MAX_IMAGES].detach().cpu().double().numpy().reshape(-1, *shape)
    images = Z[:, 0] if shape[0] == 1 else np.moveaxis(Z, 1, -1)
    lo, hi = float(images.min()), float(images.max())
    cols = min(8, images.shape[0])
    rows = -(-images.shape[0] // cols)
    pad = rows * cols - images.shape[0]
    if pad:  # the last row filled with blanks at the lowest value
        images = np.concatenate([images, np.full((pad, *images.shape[1:]), lo)])
    if shape[0] == 3:  # colour: scaled into [0, 1] for drawing
        images = (images - lo) / (hi - lo if hi > lo else 1.0)
        vrange = None
    else:
        vrange = (lo, hi if hi > lo else lo + 1.0)
    return dg.ImageGrid(title=f"{what} ({min(MAX_IMAGES, strategy.inducing_points.shape[0])} of "
                              f"{strategy.inducing_points.shape[0]})",
                        images=images.reshape(rows, cols, *images.shape[1:]), vrange=vrange,
                        description="Where the model's inducing variables sit, drawn as images.")


__all__ = ["MAX_IMAGES", "Watched", "hyperparameters", "inducing_covariance", "inducing_images"]
