"""The likelihood registry: every likelihood p(y | f) a family's `likelihood` setting may name, the built-ins
(invlab.likelihoods.builtin) registered through the same `register` a plugin uses.

A likelihood is registered as a factory `factory(task, num_classes, **own)` returning a `Likelihood` (the class
itself, or a function). Its own keyword arguments become settings of every family that takes a likelihood (svgp,
the convolutional families, the deep kernel processes): a field on the page, a flag of `invlab train`, a dotted
name in sweeps, unless `options` maps them to a setting those families already have (the built-ins' `noise_variance`,
`epsilon`). `tasks` says which tasks it is for ("regression", "classification"), and `two_class` that it takes
exactly two classes; `suits` names the targets `auto` may choose it for ("regression", "two_class", "multi_class").
`resolve_likelihood` reads a config's name, `auto` included, against the data's task.
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
TARGETS = {"regression": "regression", "two_class": "classification", "multi_class": "classification"}
# the family's own likelihoods outside the registry: the targets `auto` may choose them for
FAMILY_SUITS = {"polya_gamma": ("two_class",)}


def register(name: str, *, tasks: tuple[str, ...] = ("classification",), two_class: bool = False,
             suits: tuple[str, ...] = (), options: dict[str, str] | None = None, builtin: bool = False):
    """A decorator registering likelihood factory `factory(task, num_classes, **own)` under `name` for `tasks`
    (`two_class`: it takes exactly two classes). `suits`: the targets `likelihood=auto` may choose it for
    ("regression", "two_class", "multi_class"; none: only when a config names it); a plugin's that suits the data's
    target is chosen ahead of the built-ins. Its own arguments need defaults; they become settings unless `options`
    maps them to existing ones. A name already registered is refused, naming both."""
    tasks, suits = tuple(tasks), tuple(suits)
    if not tasks or any(t not in TASKS for t in tasks):
        raise ConfigError(f"likelihood {name!r}: tasks must be some of {', '.join(TASKS)}, got {tasks!r}")
    unfit = [t for t in suits if TARGETS.get(t) not in tasks or (two_class and t == "multi_class")]
    if unfit:
        raise ConfigError(f"likelihood {name!r}: suits must be some of {', '.join(TARGETS)} that its tasks "
                          f"{tasks!r} (and two_class={bool(two_class)}) allow, got {unfit!r}")
    return REGISTRY.register(name, options=options, builtin=builtin,
                             info={"tasks": tasks, "two_class": bool(two_class), "suits": suits})


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


def resolve_likelihood(name: str, task: str, num_classes: int | None, *, allowed=None, auto=None) -> str:
    """The likelihood `name` stands for on a dataset, checked against the task: the one place `auto` is resolved.

    `allowed` are the names a family offers (its config's choices), in order of preference for `auto`; None: every
    registered likelihood (gaussian, bernoulli, robustmax, softmax, then plugins'); `auto`: the names `auto` chooses
    among, when not all of `allowed`. `auto` is the first of them that suits the data's target (regression, two
    classes or more; `register(suits=...)`), a plugin's ahead of the built-ins; Gaussian (on one-hot targets for
    classes) when none does."""
    choices = preference() if allowed is None else tuple(a for a in allowed if a != "auto")
    if name == "auto":
        return _auto(task, num_classes, choices if auto is None else tuple(auto))
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


def target_of(task: str, num_classes: int | None) -> str:
    """The data's target as `suits` names it: "regression", "two_class" or "multi_class"."""
    if task == "regression":
        return "regression"
    return "two_class" if num_classes == 2 else "multi_class"


def _suits(name: str) -> tuple[str, ...]:
    part = REGISTRY.parts.get(name)
    return part.info.get("suits", ()) if part is not None else FAMILY_SUITS.get(name, ())


def _auto(task: str, num_classes: int | None, choices: tuple[str, ...]) -> str:
    """What `auto` chooses among `choices` (in order) for the data: the first that suits its target and takes its
    number of classes, a plugin's ahead of the built-ins (its author declared it for that target); Gaussian when
    none does."""
    target = target_of(task, num_classes)
    suited = [a for a in choices if target in _suits(a) and _for_task(a, task) and _takes(a, num_classes)]
    plugins = [a for a in suited if a in REGISTRY.parts and not REGISTRY.parts[a].builtin]
    return (plugins or suited or ["gaussian"])[0]


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
           "preference", "target_of", "DEFAULT_PREFERENCE", "FAMILY_TWO_CLASS", "FAMILY_SUITS"]
