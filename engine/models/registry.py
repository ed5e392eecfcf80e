"""The model registry: one `ModelSpec` per family, declared by the family's own module (`SPEC` or `SPECS`).

`invlab.models` imports the family modules and registers what they declare; the CLI builds its flags and the
dashboard its widgets from a spec's config class, and the trainer builds the model through its `build`. This
module imports no family, so a family module can import `ModelSpec` without importing `invlab.models`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import param

from ..errors import ConfigError
from ..registry import SLUG, PartsView, Registry
from .base import ModelFamily
from .memory import ModelSizes, variational_memory
from .words import FamilyWords, MetricWords, RangeWords


@dataclass(frozen=True)
class ModelSpec:
    """A registered model family: its name, config class, `build(config, X, y, info, *, generator)`, description,
    supported tasks and default optimiser, and everything a page or a server needs to know of it: its words, its
    page defaults, the labels and units of its loss terms and learned ranges, and its memory estimate. A family
    (built in or a plugin's) declares all of it here, so adding one touches no dashboard code."""
    name: str
    config: type[param.Parameterized]
    build: Callable[..., ModelFamily]  # build(config, X, y, info: DataInfo, *, generator=None)
    description: str = ""
    tasks: tuple[str, ...] = ("regression", "classification")
    optimizer: str = "adam"  # default optimiser: 'adam' or 'lbfgs'
    image_only: bool = False  # needs image inputs [N, C, H, W]
    # config parameter → learnable value it initialises; changing it while training sets the value live
    live: tuple[tuple[str, str], ...] = ()
    # a factory for the family's prior explorer: a param object with `.views() -> dict[str, View]` whose parameters
    # are its controls (the dashboard's prior page); None when the family has none
    prior_explorer: Callable[[], param.Parameterized] | None = None
    # the parts of its loss the family logs every step (besides `loss`), so a page lays out their curves before the
    # first step; empty: they are learned from the first step's log
    terms: tuple[str, ...] = ()
    # the family in words (its selector label, a sentence, its paper); None: the page falls back to `description`
    words: FamilyWords | None = None
    # the page's starting values, {"data": {...}, "model": {...}, "train": {...}} over the engine's defaults: sizes a
    # lecturer can watch train on a 2-core laptop (`data["dataset"]` is the family's own data set)
    page: dict = field(default_factory=dict, hash=False, compare=False)
    # logged name → its label, title and units on the page, for the parts of its loss it logs
    metrics: dict[str, MetricWords] = field(default_factory=dict, hash=False, compare=False)
    # learned range name (its metric is `range.<name>`) → what it is and its unit
    ranges: dict[str, RangeWords] = field(default_factory=dict, hash=False, compare=False)
    # memory(model_config: dict, sizes: ModelSizes) -> floats the model holds while training (invlab.models.memory)
    memory: Callable[[dict, ModelSizes], int] = variational_memory


ELBO_TERMS = ("elbo", "expected_log_lik", "kl")  # what a variational family logs every step


# The model families: each part is its spec's `build`, the `ModelSpec` kept in `info["spec"]`; a failed plugin's
# families are rolled back with the other registries (invlab.registry.snapshot).
MODEL_REGISTRY = Registry("model family", contract=("config", "X", "y", "info", "generator"), pattern=SLUG)
REGISTRY = PartsView(MODEL_REGISTRY, "spec")  # name → ModelSpec, as a read-only mapping


def register(spec: ModelSpec) -> ModelSpec:
    """Add a model family; a name already taken by another family is refused, naming both. The built-ins register
    through it (invlab.models), as a plugin's families do."""
    old = MODEL_REGISTRY.parts.get(spec.name)
    if old is not None and old.factory is not spec.build:
        which = "the built-in" if old.builtin else "the"
        raise ConfigError(f"model name {spec.name!r} is taken by {which} model family {old.where}; register "
                          f"{spec.build.__module__}.{spec.build.__qualname__} under another name")
    builtin = spec.build.__module__.startswith("invlab.")
    MODEL_REGISTRY.parts.pop(spec.name, None)  # the same family again (a module imported twice): its newest spec
    MODEL_REGISTRY.register(spec.name, builtin=builtin, info={"spec": spec})(spec.build)
    return spec


def get_model(name: str) -> ModelSpec:
    """The registered model family `name`; an unknown name raises ConfigError listing the available ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ConfigError(f"unknown model {name!r}; available: {', '.join(sorted(REGISTRY))}") from None


def model_names() -> list[str]:
    """The names of the registered model families, sorted."""
    return sorted(REGISTRY)


def metric_words(name: str) -> MetricWords | None:
    """How the page shows a logged loss term `name`: the words of the first registered family that declares it
    (built-ins first, in registration order), or None when none does."""
    return next((spec.metrics[name] for spec in REGISTRY.values() if name in spec.metrics), None)


def range_words(name: str) -> RangeWords | None:
    """What learned range `name` (the metric `range.<name>`; "shear.lo" is the range "shear") is and its unit, from
    the first registered family that declares it, or None when none does."""
    key = name.split(".")[0]
    return next((spec.ranges[key] for spec in REGISTRY.values() if key in spec.ranges), None)
