"""A sweep: a base run configuration, the values to vary by dotted parameter name, and seeds.

Dotted names address the run configuration (`invlab.train.RunConfig`):

    model                      the model family ("svgp", "invariant", ...)
    model.<param>              a parameter of the family's config (`model.init_rotation`, `model.learn_ranges`)
    data.<param>               a data option (`data.rotate`, `data.subset`); `data.source_options.<option>` for a
                               source's own option (`data.source_options.num_train`)
    train.<param>              a training setting (`train.steps`, `train.learning_rate`); seeds go in `seeds`

`mode = "grid"` runs every combination of the values; `mode = "list"` zips equally long lists (one run per
position). Every point runs once per seed (`train.seed`). A value of None (JSON `null`) leaves the parameter unset:
the base's value, or the family's default.

A spec file is TOML or JSON with the same fields:

    name = "rotation-choice"
    mode = "grid"
    seeds = [0, 1, 2]            # or a count: seeds = 3 means [0, 1, 2]
    [base]
    model = "invariant"
    data = {dataset = "digits", rotate = 90}
    model_config = {learn_ranges = false}
    train = {steps = 300}
    [vary]
    "model.init_rotation" = [0, 45, 90, 135]

`validate()` checks every name and value against the parameters that declare them and builds every planned run's
`RunConfig` before anything runs; a problem is a `ConfigError` naming the dotted parameter and what is allowed.
"""
from __future__ import annotations

import copy
import itertools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError, InvlabError
from ..train.config import RunConfig
from .dotted_names import GROUPS, allowed, check_name, check_value  # noqa: F401 — part of the sweep's face

MODES = ("grid", "list")
MAX_RUNS = 10_000  # runs one sweep may plan: checked from the counts, before any run is expanded


@dataclass
class PlannedRun:
    """One run of a sweep: its key (unique in the sweep, stable across resumes), point, seed and full config."""

    key: str
    point: dict[str, object]
    seed: int
    config: RunConfig


def run_key(point: dict[str, object], seed: int) -> str:
    """`model.init_rotation=15 model.learn_ranges=false seed=0`: stable text for a point and a seed."""
    return " ".join([f"{name}={json.dumps(value, sort_keys=True)}" for name, value in point.items()] + [f"seed={seed}"])


def _families(spec: "SweepSpec") -> list[str]:
    from ..models import model_names

    values = spec.vary.get("model", [spec.base.model])
    names = [v for v in values if v is not None] or [spec.base.model]
    known = model_names()
    bad = [v for v in names if v not in known]
    if bad:
        raise ConfigError(f"model={bad[0]!r} is not a model family; allowed: one of {', '.join(known)}")
    return names


def apply_point(base: RunConfig, point: dict[str, object], seed: int | None = None) -> RunConfig:
    """The base config with a point's values set (None unsets a value) and `train.seed` = seed."""
    config = RunConfig(base.model, copy.deepcopy(base.data), copy.deepcopy(base.model_config),
                       copy.deepcopy(base.train))
    for name, value in point.items():
        group, _, rest = name.partition(".")
        if name == "model":
            if value is not None:
                config.model = value
            continue
        target = getattr(config, GROUPS[group])
        if group == "data" and rest.startswith("source_options."):
            target = target.setdefault("source_options", {})
            rest = rest.split(".", 1)[1]
        if value is None:
            target.pop(rest, None)
        else:
            target[rest] = value
    if seed is not None:
        config.train["seed"] = int(seed)
    return config


def _check_data_and_family(config: RunConfig) -> None:
    """What the trainer would refuse after loading the data, checked without loading it."""
    from ..data import loader
    from ..data.sources import resolve

    data = dict(config.data)
    source = resolve(data.get("dataset", "digits"))
    options = {k: v for k, v in data.items() if k not in ("dataset", "source_options")}
    opts, _ = loader.check_options(source, {**options, **data.get("source_options", {})})
    loader.check_applicable(source, opts)
    spec = config.model_spec()
    if source.task != "auto" and source.task not in spec.tasks:  # 'auto' (a file's) is known after loading
        raise ConfigError(f"model {spec.name!r} does not support {source.task} data ({source.name}); it supports "
                          f"{', '.join(spec.tasks)}")
    if spec.image_only and source.kind != "image":
        raise ConfigError(f"model {spec.name!r} needs image data; {source.name} is {source.kind} data")


# -- the spec ----------------------------------------------------------------------------------------------------------
def _flatten(vary: dict, prefix: str = "") -> dict[str, object]:
    """TOML's `model.init_rotation = [...]` (unquoted) is a nested table; read it as the dotted name."""
    out = {}
    for key, value in vary.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out


def _seeds(value) -> list[int]:
    if isinstance(value, bool) or value is None:
        raise ConfigError(f"seeds must be a count (e.g. 3) or a list of seeds (e.g. [0, 1, 2]), got {value!r}")
    if isinstance(value, int):
        if value < 1:
            raise ConfigError(f"seeds={value}: a sweep needs at least one seed")
        if value > MAX_RUNS:
            raise ConfigError(f"seeds={value} plans {value:,} runs; a sweep may plan at most {MAX_RUNS:,} runs: use "
                              "fewer seeds, or split it into several sweeps")
        return list(range(value))
    if not isinstance(value, (list, tuple)) or not value:
        raise ConfigError(f"seeds must be a count (e.g. 3) or a non-empty list of seeds (e.g. [0, 1, 2]), "
                          f"got {value!r}")
    if not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 2**31 for s in value):
        raise ConfigError(f"seeds must be integers in [0, 2^31), got {list(value)!r}")
    if len(set(value)) != len(value):
        raise ConfigError(f"seeds {list(value)!r} lists a seed twice; give each once")
    return [int(s) for s in value]


@dataclass
class SweepSpec:
    """A base RunConfig, the values to vary (dotted name → list of values), grid or list, and seeds."""

    name: str = "sweep"
    base: RunConfig = field(default_factory=RunConfig)
    vary: dict[str, list] = field(default_factory=dict)
    mode: str = "grid"
    seeds: list[int] = field(default_factory=lambda: [0])

    # -- reading and writing ------------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, d: dict) -> "SweepSpec":
        """A sweep from a table with name, base, vary, mode and seeds (a parsed TOML or JSON file); unknown or missing
        fields raise ConfigError."""
        if not isinstance(d, dict):
            raise ConfigError(f"a sweep is a table with name, base, vary, mode and seeds; got {type(d).__name__}")
        unknown = set(d) - {"name", "base", "vary", "mode", "seeds"}
        if unknown:
            raise ConfigError(f"unknown sweep field(s): {', '.join(sorted(unknown))}; known: name, base, vary, mode, "
                              "seeds")
        base = d.get("base", {})
        if isinstance(base, RunConfig):
            base = json.loads(base.to_json())
        if not isinstance(base, dict):
            raise ConfigError(f"base must be a table (model, data, model_config, train), got {base!r}")
        bad = set(base) - {"model", "data", "model_config", "train"}
        if bad:
            raise ConfigError(f"unknown base field(s): {', '.join(sorted(bad))}; known: model, data, model_config, "
                              "train")
        for part in ("data", "model_config", "train"):
            if not isinstance(base.get(part, {}), dict):
                raise ConfigError(f"base.{part} must be a table of settings, got {base[part]!r}")
        if not isinstance(base.get("model", "svgp"), str):
            raise ConfigError(f"base.model must be a model family name, got {base['model']!r}")
        config = RunConfig(base.get("model", "svgp"), dict(base.get("data", {"dataset": "digits"})),
                           dict(base.get("model_config", {})), dict(base.get("train", {})))
        vary = d.get("vary", {})
        if not isinstance(vary, dict):
            raise ConfigError(f"vary must be a table of dotted names to lists of values, got {vary!r}")
        name = d.get("name", "sweep")
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"name must be non-empty text, got {name!r}")
        spec = cls(name=name, base=config, vary=_flatten(vary), mode=d.get("mode", "grid"),
                   seeds=_seeds(d.get("seeds", [0])))
        return spec

    @classmethod
    def from_file(cls, path: str | Path) -> "SweepSpec":
        """Read a TOML (.toml) or JSON (.json) sweep file; a file that cannot be read is a ConfigError naming it."""
        path = Path(path)
        if not path.exists():
            raise ConfigError(f"sweep file {path} does not exist")
        if path.is_dir():
            raise ConfigError(f"sweep file {path} is a directory; give a .toml or .json sweep file")
        if not path.is_file():
            raise ConfigError(f"sweep file {path} is not a regular file (a FIFO, a socket or a device); give a .toml "
                              "or .json sweep file")
        text = path.read_text(encoding="utf-8", errors="replace")
        suffix = path.suffix.lower()
        if suffix == ".toml":
            import tomllib

            try:
                data = tomllib.loads(text)
            except tomllib.TOMLDecodeError as err:
                raise ConfigError(f"sweep file {path} is not valid TOML: {err}") from None
        elif suffix == ".json":
            try:
                data = json.loads(text)
            except ValueError as err:
                raise ConfigError(f"sweep file {path} is not valid JSON: {err}") from None
        else:
            raise ConfigError(f"sweep file {path}: use a .toml or .json file")
        try:
            return cls.from_dict(data)
        except ConfigError as err:
            raise ConfigError(f"sweep file {path}: {err}") from None

    def to_dict(self) -> dict:
        """The sweep as a plain table, the form `from_dict` reads."""
        return {"name": self.name, "mode": self.mode, "seeds": list(self.seeds),
                "base": json.loads(self.base.to_json()), "vary": {k: list(v) for k, v in self.vary.items()}}

    def to_json(self) -> str:
        """The sweep as JSON (keys sorted), as stored with the sweep."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "SweepSpec":
        """The sweep stored as `to_json` wrote it."""
        return cls.from_dict(json.loads(text))

    # -- checking and planning -------------------------------------------------------------------------------------
    def validate(self) -> "SweepSpec":
        """Check names, values, mode and seeds, and build every planned run's RunConfig; ConfigError otherwise."""
        if self.mode not in MODES:
            raise ConfigError(f"mode={self.mode!r} is not allowed: mode must be one of {', '.join(MODES)}")
        self.seeds = _seeds(self.seeds)
        try:
            self.base.validate()
        except InvlabError as err:
            raise ConfigError(f"base configuration: {_dotted(str(err))}") from None
        families = _families(self)
        for name, values in self.vary.items():
            check_name(name, families)
            if not isinstance(values, (list, tuple)):
                raise ConfigError(f"vary {name!r} must be a list of values, got {values!r}")
            if not values:
                raise ConfigError(f"vary {name!r} has no values: give at least one (an empty list makes an empty "
                                  "sweep)")
            for value in values:
                check_value(name, value, families)
        if self.mode == "list":
            lengths = {name: len(v) for name, v in self.vary.items()}
            if len(set(lengths.values())) > 1:
                raise ConfigError("mode='list' zips the lists, so they must be equally long; got "
                                  + ", ".join(f"{k}: {n}" for k, n in lengths.items()))
        self._check_size()
        keys = set()
        for run in self._plan():
            if run.key in keys:
                raise ConfigError(f"the run {run.key!r} is planned twice; give each value once")
            keys.add(run.key)
            try:
                run.config.validate()
                _check_data_and_family(run.config)
            except InvlabError as err:
                where = " ".join(f"{k}={json.dumps(v)}" for k, v in run.point.items()) or "the base"
                raise ConfigError(f"run {where}: {err}") from None
        return self

    def _check_size(self) -> None:
        """Refuse a sweep of more than MAX_RUNS runs from the counts alone (nothing is expanded)."""
        sizes = [len(v) for v in self.vary.values()]
        if self.mode == "list":
            sizes = sizes[:1]
        total = math.prod(sizes) * len(self.seeds)
        if total > MAX_RUNS:
            shape = " × ".join(map(str, sizes)) + (" values" if sizes else "one point")
            raise ConfigError(f"this sweep plans {total:,} runs ({shape} × {len(self.seeds)} seeds); a sweep may plan "
                              f"at most {MAX_RUNS:,} runs: vary fewer values or seeds, or split it into several "
                              "sweeps")

    def points(self) -> list[dict[str, object]]:
        """The planned points, each a dict of dotted name → value: every combination ('grid') or the lists zipped
        ('list')."""
        names = list(self.vary)
        if not names:
            return [{}]
        if self.mode == "list":
            return [dict(zip(names, values)) for values in zip(*(self.vary[n] for n in names))]
        return [dict(zip(names, values)) for values in itertools.product(*(self.vary[n] for n in names))]

    def _plan(self) -> list[PlannedRun]:
        return [PlannedRun(run_key(point, seed), point, seed, apply_point(self.base, point, seed))
                for point in self.points() for seed in self.seeds]

    def runs(self) -> list[PlannedRun]:
        """Every planned run (points × seeds), validated."""
        self.validate()
        return self._plan()


__all__ = ["SweepSpec", "PlannedRun", "run_key", "apply_point", "allowed"]


_REFUSED = re.compile(r"invalid ([\w -]+?) setting: (\w+) ")


def _dotted(message: str) -> str:
    """A refused setting as the sweep names it: `invalid training setting: steps ...` -> `train.steps ...`."""
    def dotted(match: re.Match) -> str:
        what, name = match.groups()
        group = {"training": "train", "data": "data"}.get(what, "model")
        return f"{group}.{name} "

    return _REFUSED.sub(dotted, message)
