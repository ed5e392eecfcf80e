"""RunSettings: the page's one source of truth — the model family and its data, model and training configs.

Widgets, the URL and the training session all follow this object, never the other way round. The URL
carries only what differs from the page's defaults (the engine's config defaults plus the page's
per-family defaults in `invlab.dashboard.state.defaults`), so a shared link is short and says what is special about
a demo. Switching the family swaps in that family's config; data and training settings the user changed
stay (so two families can be compared on the same data), untouched ones follow the new family's defaults.
"""
from __future__ import annotations

import json
import math
import re
from typing import Callable
from urllib.parse import urlencode

import param

from invlab.dashboard.state.defaults import FAMILY_DEFAULTS, PAGE_TRAIN
from invlab.data import DataConfig
from invlab.data.sources import resolve as resolve_source
from invlab.errors import InvlabError
from invlab.ids import shorten
from invlab.models import get_model, model_names
from invlab.plugins import load_plugins
from invlab.train import RunConfig
from invlab.train.config import DEFAULT_LEARNING_RATE, TrainConfig, config_values

load_plugins()  # installed plugins register their families, kernels and orbits before the page's selectors exist

SECTIONS = ("data", "model", "train")  # URL prefixes: data.<param>, model.<param>, train.<param>
# page-level keys in the URL that are not run settings (theme: the template's light/dark; resume: a page handed over to
# its reload by the theme switch; presenter: larger fonts and lines for a projector)
FLAGS = ("lesson", "teacher", "page", "sweep", "discover", "run", "theme", "resume", "presenter")


def family_defaults(family: str) -> dict[str, dict]:
    """The page's starting values for a family: {'data': …, 'model': …, 'train': …} over the engine's defaults."""
    spec = FAMILY_DEFAULTS.get(family, {})
    out = {section: dict(spec.get(section, {})) for section in SECTIONS}
    out["train"] = {**PAGE_TRAIN, **out["train"]}
    if "learning_rate" not in out["train"]:
        optimizer = out["train"].get("optimizer", "auto")
        optimizer = get_model(family).optimizer if optimizer == "auto" else optimizer
        out["train"]["learning_rate"] = DEFAULT_LEARNING_RATE.get(optimizer, TrainConfig.param.learning_rate.default)
    return out


def coerce(p: param.Parameter, value, name: str):
    """A URL value (parsed by type guessing: '40' → 40, '1e-3' → 0.001, 'true' → True) as parameter `p` wants it."""
    if isinstance(value, str) and "\x00" in value:  # the operating system refuses it in a path (a ValueError deep down)
        raise InvlabError(f"{name}: a NUL byte (%00 in a link) is part of no name or file path; remove it")
    if isinstance(value, str) and isinstance(p, (param.List, param.Dict)) and value.strip():
        try:
            value = json.loads(value)
        except ValueError:
            raise InvlabError(f"{name}: {value!r} is not a list / dict in JSON (e.g. [4, 9])") from None
    if isinstance(p, param.Boolean) and isinstance(value, str):
        if value.lower() not in ("true", "false", "1", "0"):
            raise InvlabError(f"{name}: {value!r} is not true or false")
        return value.lower() in ("true", "1")
    if isinstance(p, param.Integer) and not isinstance(p, param.Boolean):
        if isinstance(value, float) and value.is_integer():
            if abs(value) > 2**53:  # past float's exact whole numbers: refused as written, not as a 300-digit int
                low, high = p.bounds or (None, None)
                raise InvlabError(f"{name}: {value!r} is not a whole number from {low} to {high}")
            return int(value)
        if isinstance(value, str) and value.isascii() and value.lstrip("-").isdigit():  # not "¹": int refuses it
            return int(value)
    if isinstance(p, param.Number) and not isinstance(p, param.Integer):
        if isinstance(value, int) and not isinstance(value, bool):
            return float(value)  # '45' in a link is the angle 45.0
        if isinstance(value, str):
            if value == "" and p.allow_None:
                return None
            try:
                return float(value)
            except ValueError:
                raise InvlabError(f"{name}: {value!r} is not a number") from None
    if (isinstance(p, (param.String, param.Selector)) and isinstance(value, (int, float))
            and not isinstance(value, bool)):
        objects = getattr(p, "objects", None) or []
        if not objects or value not in objects:
            return str(value)
    return value


_LONG_NUMBER = re.compile(r"\d{41,}")  # a value repeated back by param's own message


def _short_number(match: re.Match) -> str:
    return shorten(match.group())


def encode(value) -> str:
    """A value as it appears in the URL (the inverse of Panel's query parsing plus `coerce`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, float):
        return format(value, ".10g")
    if isinstance(value, (list, dict, tuple)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0) or a == b
    return a == b


class RunSettings(param.Parameterized):
    """The family and its configs; `run_config()` is what the next run is built from."""

    model = param.Selector(default="svgp", objects=model_names(), doc="Model family.")
    model_config = param.ClassSelector(class_=param.Parameterized, instantiate=False,
                                       doc="The family's config (replaced when the family changes).")
    lesson = param.String(default="", doc="The lesson this page was opened for (its key), if any.")
    teacher = param.Boolean(default=False, doc="Teacher mode: show only the controls the lesson needs.")

    def __init__(self, config: RunConfig | None = None, **params):
        family = (config.model if config is not None else params.pop("model", None)) or "svgp"
        defaults = family_defaults(family)
        self.data = DataConfig(**{**defaults["data"], **(config.data if config else {})})
        self.train = TrainConfig(**{**defaults["train"], **(config.train if config else {})})
        model_config = get_model(family).config(**{**defaults["model"], **(config.model_config if config else {})})
        self._listeners: list[Callable] = []
        self._switching = False
        self._config_family = family
        super().__init__(model=family, model_config=model_config, **params)
        for obj in (self.data, self.train):
            obj.param.watch(self._relay, [p for p in obj.param if p != "name"])
        self._model_watcher = None
        self._watch_model_config()

    # -- what the next run is built from -------------------------------------------------------------------------
    def run_config(self) -> RunConfig:
        """The run configuration these settings describe (model, data, model config, training)."""
        return RunConfig(model=self.model, data=config_values(self.data), model_config=config_values(self.model_config),
                         train=config_values(self.train))

    def section(self, name: str) -> param.Parameterized:
        """The config object of a section: 'data', 'model' or 'train'."""
        return {"data": self.data, "model": self.model_config, "train": self.train}[name]

    # -- change notification: one stream of events whatever object changed ------------------------------------------
    def on_change(self, fn: Callable) -> None:
        """`fn(events)` after any setting changed (events of the family, data, model or training configs)."""
        self._listeners.append(fn)

    def _relay(self, *events) -> None:
        if self._switching:
            return
        for event in events:
            if event.obj is self.train and event.name == "optimizer":
                self._follow_optimizer_rate(event.old, event.new)
        for fn in list(self._listeners):
            fn(list(events))

    def _follow_optimizer_rate(self, old: str, new: str) -> None:
        """Choosing another optimiser moves the learning rate to its default, unless the user chose a rate."""
        family = get_model(self.model).optimizer
        old, new = (family if o == "auto" else o for o in (old, new))
        if old != new and _same(self.train.learning_rate, DEFAULT_LEARNING_RATE.get(old, math.nan)) \
                and new in DEFAULT_LEARNING_RATE:
            self.train.learning_rate = DEFAULT_LEARNING_RATE[new]

    def _watch_model_config(self) -> None:
        if self._model_watcher is not None:
            self._model_watcher[0].param.unwatch(self._model_watcher[1])
        obj = self.model_config
        self._model_watcher = (obj, obj.param.watch(self._relay, [p for p in obj.param if p != "name"]))

    @param.depends("model", watch=True, on_init=False)
    def _family_changed(self) -> None:
        """Swap in the new family's config; follow the page defaults where the user left them; keep data it can use."""
        old_family = self._config_family
        old_defaults = family_defaults(old_family)
        new_defaults = family_defaults(self.model)
        spec = get_model(self.model)
        self._switching = True
        try:
            self.model_config = spec.config(**new_defaults["model"])
            self._config_family = self.model
            for key, value in new_defaults["train"].items():  # e.g. L-BFGS's learning rate, unless the user chose one
                current = getattr(self.train, key)
                if _same(current, old_defaults["train"].get(key, TrainConfig.param[key].default)):
                    setattr(self.train, key, value)
            untouched = all(_same(value, old_defaults["data"].get(key, DataConfig.param[key].default))
                            for key, value in config_values(self.data).items())
            if untouched or not self._data_suits(spec):  # the family's own showcase, unless the user chose data
                self.data.param.update(**{**{k: DataConfig.param[k].default for k in DataConfig.param if k != "name"},
                                          **new_defaults["data"]})
        finally:
            self._switching = False
        self._watch_model_config()
        for fn in list(self._listeners):
            fn([param.parameterized.Event(what="value", name="model", obj=self, cls=type(self), old=old_family,
                                          new=self.model, type="changed")])

    def _data_suits(self, spec) -> bool:
        try:
            source = resolve_source(self.data.dataset)
        except InvlabError:
            return True  # a user's own directory: let the run say what is wrong with it
        return source.task in spec.tasks and (source.kind == "image" or not spec.image_only)

    # -- the URL: only what differs from the defaults ------------------------------------------------------------------
    def to_query(self) -> dict[str, str]:
        """The settings that differ from the family's defaults, as URL keys → values."""
        defaults = family_defaults(self.model)
        out: dict[str, str] = {}
        if self.model != RunSettings.param.model.default:
            out["model"] = self.model
        for section in SECTIONS:
            obj = self.section(section)
            for key, value in config_values(obj).items():
                default = defaults[section].get(key, obj.param[key].default)
                if not _same(value, default):
                    out[f"{section}.{key}"] = encode(value)
        if self.lesson:
            out["lesson"] = self.lesson
        if self.teacher:
            out["teacher"] = "true"
        return out

    def query_string(self) -> str:
        """The URL query (`?key=value&...`) of the settings that differ from the defaults, or '' for none."""
        query = self.to_query()
        return "?" + urlencode(query) if query else ""

    def apply_query(self, query: dict) -> list[str]:
        """Apply URL values (the family first, then the rest); returns one message per value that was refused."""
        problems = []
        family = query.get("model")
        if family is not None and family != self.model:
            if family in model_names():
                self.model = family
            else:
                problems.append(f"model: unknown family {family!r}; available: {', '.join(model_names())}")
        for key, raw in query.items():
            if key == "model" or key in FLAGS:
                continue
            section, _, name = key.partition(".")
            if section == "prior":
                continue  # the prior page's sliders: the Explorer hands them to its prior explorer
            if section not in SECTIONS or not name:
                problems.append(f"{key}: not a setting (use data.<name>, model.<name> or train.<name>)")
                continue
            obj = self.section(section)
            if name not in obj.param or name == "name":
                problems.append(f"{key}: the {section} settings have no {name!r}")
                continue
            try:
                setattr(obj, name, coerce(obj.param[name], raw, key))
            except (InvlabError, ValueError, TypeError) as err:  # a long value is shown shortened, as written
                problems.append(f"{key}={shorten(repr(raw))} refused: {_LONG_NUMBER.sub(_short_number, str(err))}")
        if "lesson" in query:
            self.lesson = str(query["lesson"])
        if "teacher" in query:
            self.teacher = str(query["teacher"]).lower() in ("true", "1")
        return problems


SHORT_NAMES = {"learning_rate": "lr", "num_inducing": "M", "num_samples": "S", "batch_size": "batch"}


def _text(value) -> str:
    """A setting's value as a legend says it: 0.03, 90, rotation."""
    return format(value, "g") if isinstance(value, float) else encode(value)


def _shown(key: str, value) -> str:
    """A setting as a legend says it: "lr 0.03", "rotate 90", "augmentation rotation"."""
    return f"{SHORT_NAMES.get(key, key.replace('_', ' '))} {_text(value)}"


def _follows_family(section: str, key: str, old: RunConfig, new: RunConfig) -> bool:
    """True when a data / train setting differs only because each run's family has its own page default for it
    (the user touched it in neither run)."""
    part = {"data": "data", "train": "train"}.get(section)
    if part is None or old.model == new.model:
        return False
    def default(family: str):
        obj = DataConfig if part == "data" else TrainConfig
        return family_defaults(family)[part].get(key, obj.param[key].default if key in obj.param else None)
    a, b = getattr(old, section).get(key), getattr(new, section).get(key)
    return _same(a, default(old.model)) and _same(b, default(new.model))


def describe_difference(old: RunConfig, new: RunConfig, limit: int = 3, changes=()) -> str:
    """What `old` was, in the words that tell it apart from `new` (a legend label for a previous run's curves).

    `old` is the run's configuration when it started; `changes` are the settings changed while it ran, as
    (step, "section.key", value) with section data / model / train ("train.learning_rate"): a setting changed
    mid-run is told by its course ("lr 0.03→0.01 at step 120") unless it ended, and stayed all along, equal to the
    new run's value. Settings that only followed each family's defaults are left out."""
    parts = []
    if old.model != new.model:
        parts.append(old.model)
    sections = {"data": "data", "model": "model_config", "train": "train"}
    during: dict[tuple[str, str], list] = {}
    for step, dotted, value in changes:
        section, _, key = dotted.partition(".")
        during.setdefault((sections.get(section, section), key), []).append((step, value))
    for section in ("data", "model_config", "train"):
        a, b = getattr(old, section) or {}, getattr(new, section) or {}
        if section == "model_config" and old.model != new.model:
            continue  # another family: its own settings say little next to its name
        for key in sorted(set(a) | set(b)):
            course = during.get((section, key), [])
            if key not in a or _follows_family(section, key, old, new):
                continue
            if course and not all(_same(v, b.get(key)) for v in [a[key]] + [v for _, v in course]):
                parts.append(_shown(key, a[key]) + "".join(
                    f"→{_text(v)} at step {step}" for step, v in course))
            elif not course and not _same(a.get(key), b.get(key)):
                parts.append(_shown(key, a[key]))
    if not parts:
        return "same settings"
    return ", ".join(parts[:limit]) + (" …" if len(parts) > limit else "")
