"""The likelihood registry: every likelihood p(y | f) a family's `likelihood` setting may name, the built-ins
(invlab.likelihoods.builtin) registered through the same `register` a plugin uses.

A likelihood is registered as a factory `factory(task, num_classes, **own)` returning a `Likelihood` (the class
itself, or a function). Its own keyword arguments become settings of every family that takes a likelihood (svgp,
the convolutional families, the deep kernel processes): a field on the page, a flag of `invlab train`, a dotted
name in sweeps, unless `options` maps them to a setting those families already have (the built-ins' `noise_variance`,
`epsilon`). `tasks` says which tasks it is for ("regression", "classification"), and `two_class` that it takes
exactly two classes. `resolve_likelihood` reads a config's name, `auto` included, against the data's task.
"""
from __future__ import annotations

from ..errors import ConfigError
from ..registry import Registry

# the contract: the data's task ("regression" or "classification") and its number of classes (None for regression)
REGISTRY = Registry("likelihood", contract=("task", "num_classes"), extra=("auto",))
# the classification likelihoods some family builds itself (outside the registry) that take exactly two classes
FAMILY_TWO_CLASS = ("polya_gamma",)
# `auto`'s order of preference when a family gives no `allowed`
DEFAULT_PREFERENCE = ("gaussian", "bernoulli", "robustmax", "softmax")
TASKS = ("regression", "classification")


def register(name: str, *, tasks: tuple[str, ...] = ("classification",), two_class: bool = False,
             options: dict[str, str] | None = None, builtin: bool = False):
    """A decorator registering likelihood factory `factory(task, num_classes, **own)` under `name` for `tasks`
    (`two_class`: it takes exactly two classes). Its own arguments need defaults; they become settings unless
    `options` maps them to existing ones. A name already registered is refused, naming both."""
    tasks = tuple(tasks)
    if not tasks or any(t not in TASKS for t in tasks):
        raise ConfigError(f"likelihood {name!r}: tasks must be some of {', '.join(TASKS)}, got {tasks!r}")
    return REGISTRY.register(name, options=options, builtin=builtin,
                             info={"tasks": tasks, "two_class": bool(two_class)})


def likelihood_names() -> list[str]:
    """The registered likelihoods' names, built-ins first, then plugins' in the order they registered."""
    return list(REGISTRY.parts)


def preference(order: tuple[str, ...] = DEFAULT_PREFERENCE) -> tuple[str, ...]:
    """`order` followed by every other registered likelihood: the names a family offers, in `auto`'s order."""
    return tuple(order) + tuple(name for name in REGISTRY.parts if name not in order)


def _takes(name: str, num_classes: int | None) -> bool:
    part = REGISTRY.parts.get(name)
    two = part.info.get("two_class", False) if part is not None else name in FAMILY_TWO_CLASS
    return num_classes == 2 or not two


def _for_task(name: str, task: str) -> bool:
    return task in _tasks_of(name)


def resolve_likelihood(name: str, task: str, num_classes: int | None, *, allowed=None) -> str:
    """The likelihood `name` stands for on a dataset, checked against the task: the one place `auto` is resolved.

    `allowed` are the names a family offers (its config's choices), in order of preference for `auto`; None: every
    registered likelihood (gaussian, bernoulli, robustmax, softmax, then plugins'). `auto` is Gaussian for
    regression; for classification it is the first allowed built-in classification likelihood that takes this many
    classes (Bernoulli or Pólya-Gamma only take two), and Gaussian on one-hot targets when none does."""
    choices = preference() if allowed is None else tuple(a for a in allowed if a != "auto")
    if name == "auto":
        if task == "regression":
            return "gaussian"
        return next((a for a in choices if a != "gaussian" and _builtin_or_family(a) and _for_task(a, task)
                     and _takes(a, num_classes)), "gaussian")
    if name not in choices:
        raise ConfigError(f"unknown likelihood {name!r}; choose one of {', '.join(('auto',) + choices)}")
    if not _for_task(name, task):
        fits = [a for a in choices if _for_task(a, task)]
        raise ConfigError(f"likelihood={name!r} is for {' and '.join(_tasks_of(name))}; this dataset is a {task} "
                          f"task: use {' or '.join(repr(a) for a in fits)}")
    if task == "classification" and not _takes(name, num_classes):
        others = [a for a in choices if a != "gaussian" and _for_task(a, task) and _takes(a, num_classes)]
        raise ConfigError(f"likelihood={name!r} needs 2 classes but the dataset has {num_classes}; use "
                          f"{' or '.join(repr(a) for a in others or ['gaussian'])} (or the odd_even / classes data "
                          "options)")
    return name


def _builtin_or_family(name: str) -> bool:
    """`auto` never picks a plugin's likelihood: a plugin's is used when a config names it."""
    part = REGISTRY.parts.get(name)
    return part is None or part.builtin


def _tasks_of(name: str) -> tuple[str, ...]:
    """The tasks likelihood `name` is for; a family's own (outside the registry, e.g. polya_gamma): classification."""
    part = REGISTRY.parts.get(name)
    return part.info.get("tasks", ("classification",)) if part is not None else ("classification",)


def build_likelihood(name: str, task: str, num_classes: int | None, *, allowed=None, **options):
    """The likelihood a config names for a dataset's task (`auto` resolved by `resolve_likelihood`), built by its
    registered factory with those of `options` that are its own (noise_variance, epsilon, a plugin's own
    settings); the others are ignored, so a config's settings can be passed as they are."""
    name = resolve_likelihood(name, task, num_classes, allowed=allowed)
    return REGISTRY.build(name, task, num_classes, **options)


def likelihood_for(config, info, *, allowed=None):
    """The likelihood `config.likelihood` names for the data `info` describes (its `task` and `num_classes`),
    built with the config's own values of the likelihood's settings."""
    name = resolve_likelihood(config.likelihood, info.task, info.num_classes, allowed=allowed)
    return REGISTRY.build(name, info.task, info.num_classes, **REGISTRY.options_of(name, config))


__all__ = ["REGISTRY", "register", "resolve_likelihood", "build_likelihood", "likelihood_for", "likelihood_names",
           "preference", "DEFAULT_PREFERENCE", "FAMILY_TWO_CLASS"]
