"""Model families and their registry.

Each family module declares its registry entry (`SPEC`, or `SPECS` for several variants): its name, its param
config class, a `build(config, X, y, info: DataInfo, *, generator)` function and what it supports. This package
only collects them. The CLI builds its flags and the dashboard its widgets from the config class; the trainer
builds the model through `build`.
"""
from __future__ import annotations

from . import convolutional, dkp, gwi, invariant, rkhs, svgp
from .base import DataInfo, ModelFamily, Numerics, Prediction, Terms, Tunable
from .registry import REGISTRY, ModelSpec, get_model, model_names, register
from .svgp import SVGP, SVGPConfig

for _family in (svgp, invariant, convolutional, dkp, rkhs, gwi):
    for _spec in getattr(_family, "SPECS", None) or (_family.SPEC,):
        register(_spec)

__all__ = ["ModelSpec", "REGISTRY", "register", "get_model", "model_names", "DataInfo", "ModelFamily", "Numerics",
           "Prediction", "Terms", "Tunable", "SVGP", "SVGPConfig"]
