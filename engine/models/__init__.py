"""Model families and their registry.

Each family registers a `ModelSpec`: its name, its param config class, a `build` function and what it
supports. The CLI builds its flags and the dashboard its widgets from the config class; the trainer
builds the model through `build`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import param

from ..errors import ConfigError
from .base import ModelFamily, Numerics, Prediction, Terms, Tunable


@dataclass(frozen=True)
class ModelSpec:
    name: str
    config: type[param.Parameterized]
    build: Callable[..., ModelFamily]  # build(config, X, y, *, task, num_classes, image_shape, y_std, generator)
    description: str = ""
    tasks: tuple[str, ...] = ("regression", "classification")
    optimizer: str = "adam"  # default optimiser: 'adam' or 'lbfgs'
    image_only: bool = False  # needs image inputs [N, C, H, W]
    # config parameter → learnable value it initialises; changing it while training sets the value live
    live: tuple[tuple[str, str], ...] = ()
    # a factory for the family's prior explorer: a param object with `.views() -> dict[str, View]` whose parameters
    # are its controls (the dashboard's prior page); None when the family has none
    prior_explorer: Callable[[], param.Parameterized] | None = None


REGISTRY: dict[str, ModelSpec] = {}


def register(spec: ModelSpec) -> ModelSpec:
    REGISTRY[spec.name] = spec
    return spec


def get_model(name: str) -> ModelSpec:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ConfigError(f"unknown model {name!r}; available: {', '.join(sorted(REGISTRY))}") from None


def model_names() -> list[str]:
    return sorted(REGISTRY)


from .svgp import SVGP, SVGPConfig, build_svgp  # noqa: E402

SVGP_LIVE = (("lengthscale", "kernel.lengthscale"), ("variance", "kernel.variance"), ("noise_variance", "likelihood.variance"))

register(ModelSpec("svgp", SVGPConfig, build_svgp, "Sparse variational GP with a plain kernel (Hensman et al.)",
                   live=SVGP_LIVE))

__all__ = ["ModelSpec", "REGISTRY", "register", "get_model", "model_names", "ModelFamily", "Numerics", "Prediction",
           "Terms", "Tunable", "SVGP", "SVGPConfig", "SVGP_LIVE"]

from .invariant import InvariantConfig, build_invariant  # noqa: E402

register(ModelSpec("invariant", InvariantConfig, build_invariant,
                   "Invariant GP with a learned augmentation distribution (van der Wilk et al. 2018)",
                   live=(("lengthscale", "kernel.base.lengthscale"), ("variance", "kernel.base.variance"),
                         ("noise_variance", "likelihood.variance"))))

from .convolutional import LIVE as _CONV_LIVE, VARIANTS as _CONV_VARIANTS  # noqa: E402

for _name, _config, _build, _description in _CONV_VARIANTS:
    register(ModelSpec(_name, _config, _build, _description, image_only=True, live=_CONV_LIVE[_name]))

from .dkp import DIWPConfig as _DIWPConfig, DKPSVGPConfig as _DKPSVGPConfig, NNGPConfig as _NNGPConfig  # noqa: E402
from .dkp import PriorExplorer as _PriorExplorer  # noqa: E402
from .dkp import build_dkp as _build_dkp, build_dkp_svgp as _build_dkp_svgp  # noqa: E402

register(ModelSpec("diwp", _DIWPConfig, _build_dkp,
                   "Deep inverse Wishart process, doubly-stochastic inducing-point inference (Aitchison et al. 2021)",
                   live=(("noise_variance", "likelihood.variance"),), prior_explorer=_PriorExplorer))
register(ModelSpec("nngp", _NNGPConfig, _build_dkp,
                   "NNGP: the deep kernel stack as deterministic transforms (the DIWP's δ → ∞ limit)",
                   live=(("noise_variance", "likelihood.variance"),), prior_explorer=_PriorExplorer))
register(ModelSpec("dkp_svgp", _DKPSVGPConfig, _build_dkp_svgp,
                   "Plain SVGP whose kernel is the deep kernel stack (NNGP kernel); the DIWP's SVGP baseline",
                   live=(("noise_variance", "likelihood.variance"),), prior_explorer=_PriorExplorer))

from .rkhs import LIVE as _RKHS_LIVE, RKHSConfig, build_rkhs  # noqa: E402

register(ModelSpec("rkhs", RKHSConfig, build_rkhs,
                   "Kernel machine with invariances as linear functionals on an RKHS (Zhang, Lee & Teh 2013)",
                   tasks=("classification", "regression"), optimizer="lbfgs", live=_RKHS_LIVE))

from .gwi import GWIConfig, build_gwi  # noqa: E402

register(ModelSpec("gwi", GWIConfig, build_gwi,
                   "Gaussian Wasserstein inference in function space: SVGP-form Q fitted to a frozen reference GP "
                   "(Wild, Hu & Sejdinovic 2022)", live=(("noise_variance", "likelihood.variance"),)))
