"""What a sweep's dotted parameter names (`model.init_rotation`, `data.rotate`, `train.steps`) may name and hold: each
is checked against the `param` parameter that declares it (the family's config, `DataConfig` or `TrainConfig`), and a
refusal says what is allowed (`invlab.sweeps.spec` explains the names)."""
from __future__ import annotations

import param

from ..errors import ConfigError
from ..train.config import TrainConfig

GROUPS = {"model": "model_config", "data": "data", "train": "train"}  # a name's first part: the RunConfig field


def allowed(p: param.Parameter) -> str:
    """What a parameter accepts, in words."""
    if isinstance(p, param.Boolean):
        return "true or false"
    if isinstance(p, param.Selector):
        return "one of " + ", ".join(map(str, p.objects))
    if isinstance(p, param.List):
        return "a list" + (f" of {p.item_type.__name__}" if getattr(p, "item_type", None) else "")
    if isinstance(p, param.Number):
        kind = "an integer" if isinstance(p, param.Integer) else "a number"
        lo, hi = p.bounds or (None, None)
        text = kind + (" or null" if p.allow_None else "")
        if lo is not None and hi is not None:
            return f"{text} in [{lo}, {hi}]"
        if lo is not None:
            return f"{text} ≥ {lo}"
        if hi is not None:
            return f"{text} ≤ {hi}"
        return text
    if isinstance(p, param.Dict):
        return "a table (dict)"
    return f"a {type(p).__name__.lower()}"


def _config_class(group: str, family: str | None):
    if group == "train":
        return TrainConfig
    if group == "data":
        from ..data import DataConfig

        return DataConfig
    from ..models import get_model

    return get_model(family).config


def check_value(name: str, value, families: list[str]) -> None:
    """Refuse a value of a dotted parameter that its declaring parameter refuses (for at least one family)."""
    if value is None:
        return
    group, _, rest = name.partition(".")
    if group == "model" and not rest:
        return  # checked by _families
    if group == "data" and rest.startswith("source_options."):
        return  # a source's own options are checked with the source, per run
    owners = [_config_class(group, f) for f in (families if group == "model" else [None])]
    owners = [cls for cls in owners if rest in cls.param]
    errors = []
    for cls in owners:
        p = cls.param[rest]
        try:
            p._validate(value)
            return
        except (ValueError, TypeError):
            errors.append(allowed(p))
    raise ConfigError(f"{name}={value!r} is not allowed: {name} must be {errors[0]}")


def check_name(name: str, families: list[str]) -> None:
    """Refuse a dotted name that no config parameter declares."""
    if not isinstance(name, str) or not name:
        raise ConfigError(f"a swept parameter name must be text like 'model.init_rotation', got {name!r}")
    group, dot, rest = name.partition(".")
    if name == "model":
        return
    if group not in GROUPS or not dot or not rest:
        raise ConfigError(f"unknown swept parameter {name!r}: a name is 'model', 'model.<param>', 'data.<param>' or "
                          "'train.<param>'")
    if name == "train.seed":
        raise ConfigError("train.seed is swept by `seeds` (e.g. seeds = 3 or seeds = [0, 1, 2]), not in vary")
    if group == "data" and rest.startswith("source_options."):
        return
    owners = [_config_class(group, f) for f in (families if group == "model" else [None])]
    if not any(rest in cls.param and rest != "name" for cls in owners):
        known = sorted({p for cls in owners for p in cls.param if p != "name"})
        where = f"the {'/'.join(families)} model" if group == "model" else f"the {group} config"
        raise ConfigError(f"unknown swept parameter {name!r}: {where} has no {rest!r}; known: {', '.join(known)}")
