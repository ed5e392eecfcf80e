"""Words a student understands: each model family named and explained in a sentence with its paper, the help of the
family selector, why a control does not apply to the current settings, and what a finite orbit is.

Data, not layout: a family's name in words, its sentence and its paper are its registry entry's (`ModelSpec.words`,
`invlab.models.words`), so a family a plugin adds brings its own; one that declares none falls back to its registry
description."""
from __future__ import annotations

from invlab.models import REGISTRY


def family_label(name: str) -> str:
    """The family as the selector lists it: "invariant — invariant GP"."""
    words = getattr(REGISTRY.get(name), "words", None)
    return f"{name} — {words.label}" if words else name


def family_sentence(name: str) -> str:
    """One sentence on a family: what it is and which paper it follows."""
    spec = REGISTRY.get(name)
    words = getattr(spec, "words", None)
    if words is None:
        return f"{name}: {getattr(spec, 'description', '') or 'a model family added by a plugin'}."
    paper = f" ({words.paper})" if words.paper else ""
    return f"{name} — {words.label}: {words.sentence}{paper}."


def family_help(names) -> str:
    """The family selector's hover help: what the choice is, then a sentence per family."""
    return ("Model family: which kind of model is trained. " + " ".join(family_sentence(n) for n in names))


# -- controls that do not apply --------------------------------------------------------------------------------------
COORDINATE_ORBITS = ("permutations", "sign_flips")  # the orbits `orbit_coordinates` restricts


def not_applicable(settings) -> dict[str, str]:
    """Controls that do nothing with the current settings, as {"model.degree": reason, ...}; `settings` is the page's
    `RunSettings`."""
    from invlab import kernels
    from invlab.data.sources import resolve as resolve_source
    from invlab.errors import InvlabError
    from invlab.models import get_model

    out: dict[str, str] = {}
    config = settings.model_config
    kernel = getattr(config, "kernel", None)
    if kernel is not None and kernel in kernels.REGISTRY.parts:
        own = set(kernels.REGISTRY.get(kernel).options.values())
        others = {p for part in kernels.REGISTRY.parts.values() for p in part.options.values()} - own
        for name in sorted(others):
            if name in config.param:
                owner = next(part.name for part in kernels.REGISTRY.parts.values() if name in part.options.values())
                out[f"model.{name}"] = f"only the {owner} kernel has this setting; the kernel is {kernel}"
    if "orbit_coordinates" in config.param:  # the invariant GP's orbits on chosen vector coordinates
        acting = [a for a in (getattr(config, "augmentation", None), getattr(config, "then_augmentation", None))
                  if a in COORDINATE_ORBITS]
        if not acting:
            out["model.orbit_coordinates"] = (f"only the {' and '.join(COORDINATE_ORBITS)} orbits act on chosen "
                                              f"coordinates; the augmentation is {config.augmentation}")
    if "ranges_around_identity" in config.param:  # only the affine augmentation has two-sided ranges to keep so
        acting = (getattr(config, "augmentation", None), getattr(config, "then_augmentation", None))
        if "affine" not in acting:
            out["model.ranges_around_identity"] = ("only the affine augmentation learns ranges with two free ends; "
                                                   f"the augmentation is {config.augmentation}")
    try:
        source = resolve_source(settings.data.dataset)
        if source.kind != "image":
            out["data.rotate"] = (f"rotation turns images; {settings.data.dataset} holds {source.kind}, "
                                  "not images")
        if not source.digit_labels:
            out["data.odd_even"] = (f"odd/even relabels digits; {settings.data.dataset}'s labels are not digits")
        if source.task == "regression":
            out["data.classes"] = f"{settings.data.dataset} is regression data: it has no classes to keep"
    except InvlabError:
        pass
    optimizer = settings.train.optimizer
    if (get_model(settings.model).optimizer if optimizer == "auto" else optimizer) == "lbfgs":
        out["train.learning_rate"] = ("the L-BFGS solver finds its own step length by a line search; the "
                                      "learning rate only scales its first trial step")
    return out


def orbit_words(family: str, augmentation: str, kind: str) -> str:
    """What a run's finite orbit is, and that it has no ranges (Markdown-free text): for a family whose invariance
    has nothing to set."""
    from invlab.transforms import REGISTRY as TRANSFORMS

    if augmentation == "auto":
        augmentation = "rotation" if kind == "image" else "permutations"
    part = TRANSFORMS.parts.get(augmentation)
    what = (part.factory.__doc__ or "").strip().rstrip(".") if part is not None else augmentation
    extra = " — for two inputs, the swap (x1, x2) ↔ (x2, x1)" if augmentation == "permutations" else ""
    return (f"The {family} model sums over a fixed finite orbit, {augmentation}: {what.lower()}{extra}. A finite "
            "orbit is used whole, so there are no ranges to learn or set here.")
