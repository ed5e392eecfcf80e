"""Registries of named parts (kernels, augmentations / orbits, likelihoods, ...): one `Registry` per kind, filled
through its `register` decorator by the built-ins and by a user's code or plugin alike.

A registry also keeps the config selectors that choose among its parts in step: `attach(ConfigClass, "kernel")`
makes the selector's choices the registered names (now and for every later registration, in the class and its
subclasses), and adds each part's own constructor options to the config class as param parameters, so they get
widgets, flags and sweep names like any other setting. An option is named after the constructor argument
(`alpha`), or `<part>_<argument>` (`rq_alpha`) where that name is already taken by another setting.

Registrations can be undone as a whole: `snapshot()` records every registry and every registration table (a plain
dict declared with `table`, e.g. the model families, covariances, data readers), and its `restore()` puts them back
as they were, choices and options of the attached configs included. The plugin loader uses it so that a plugin
that fails half-way leaves nothing registered.
"""
from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable

import param

from .errors import ConfigError

_current_origin: list[str] = []  # the plugin being loaded (set by invlab.plugins while it imports a module)
_refused: list[str] = []  # sentences: a plugin's parts left out because no route could reach their names
_TABLES: list[dict] = []  # the registration tables declared with `table`
_REGISTRIES: list["Registry"] = []  # every `Registry` made


def table(entries: dict) -> dict:
    """Declare the dict `entries` a registration table (returned as is): `snapshot()` records it, so what a failed
    plugin added to it is rolled back."""
    _TABLES.append(entries)
    return entries


@dataclass
class Part:
    """One registered part: its `name`, the `factory` that builds it (a class or function), its own options
    (constructor argument → the config parameter that holds it), where it came from, and whether it is built in."""

    name: str
    factory: Callable
    options: dict[str, str] = field(default_factory=dict)
    declared: dict[str, param.Parameter] = field(default_factory=dict)  # options new to the config, by argument
    origin: str = ""
    builtin: bool = False
    inputs: tuple[str, ...] = ("image", "vector")  # the kinds of input it applies to (augmentations)
    info: dict = field(default_factory=dict)  # what a kind records of its parts (a likelihood's tasks, ...)

    @property
    def where(self) -> str:
        """`module.qualname` of the factory."""
        return f"{self.factory.__module__}.{getattr(self.factory, '__qualname__', self.factory)}"


def option_parameter(name: str, default, owner: str) -> param.Parameter:
    """A param parameter for constructor argument `name` of part `owner`, typed by its default value."""
    doc = f"{owner}: constructor argument {name!r}."
    if isinstance(default, bool):
        return param.Boolean(default=default, doc=doc)
    if isinstance(default, int):
        return param.Integer(default=default, doc=doc)
    if isinstance(default, float):
        return param.Number(default=default, doc=doc)
    if default is None:
        return param.Parameter(default=None, doc=doc)
    return param.String(default=str(default), doc=doc)


def _own_arguments(factory: Callable, contract: tuple[str, ...]) -> dict[str, object]:
    """The keyword arguments of `factory` beyond the contract's, with their defaults (each needs one)."""
    target = factory.__init__ if inspect.isclass(factory) else factory
    out = {}
    for i, (name, p) in enumerate(inspect.signature(target).parameters.items()):
        if inspect.isclass(factory) and i == 0:
            continue  # self
        if name in contract or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        if p.default is p.empty:
            raise ConfigError(f"{factory.__qualname__}: constructor argument {name!r} needs a default value to "
                              "become a setting; give it one")
        out[name] = p.default
    return out


def _subclasses(cls: type) -> list[type]:
    out, todo = [], [cls]
    while todo:
        c = todo.pop()
        out.append(c)
        todo.extend(c.__subclasses__())
    return out


WORD = r"[A-Za-z_][A-Za-z0-9_]*"  # a part's name: a word of letters, digits and underscores
SLUG = r"[a-z0-9][a-z0-9_-]*"  # or, for data sets, lower case with hyphens ("two-moons")


class Registry:
    """Named parts of one kind (`kind`: 'kernel', 'augmentation', 'likelihood', 'data set', ...). `contract` names
    the constructor arguments every part takes (the rest are its own options); `extra` are selector choices that are
    not parts (e.g. 'auto'); `pattern` is what a name must look like (`WORD` by default, or `SLUG`); `unreachable`,
    given a new name, says why no route (a flag, `load(name)`, a link) would reach it, or returns None."""

    def __init__(self, kind: str, contract: tuple[str, ...], extra: tuple[str, ...] = (), pattern: str = WORD,
                 unreachable: Callable[[str], str | None] | None = None):
        self.kind, self.contract, self.extra, self.pattern = kind, contract, extra, pattern
        self.unreachable = unreachable
        self.parts: dict[str, Part] = {}
        self._owners: list[tuple[type[param.Parameterized], str]] = []
        _REGISTRIES.append(self)

    # -- registering --------------------------------------------------------------------------------------------
    def register(self, name: str, *, options: dict[str, str] | None = None, builtin: bool = False,
                 inputs: tuple[str, ...] | None = None, info: dict | None = None):
        """A decorator that registers a class or factory under `name`. Its own constructor arguments (beyond the
        contract's) become config options; `options` maps arguments to settings the config already has instead
        (`{"rotation": "init_rotation"}`); `info` is what this kind of part records besides (kept as `Part.info`).
        A name already registered by another part is refused, naming both."""
        if not isinstance(name, str) or not re.fullmatch(self.pattern, name):
            what = ("a word of letters, digits and underscores" if self.pattern == WORD else
                    "lower-case letters, digits, hyphens and underscores")
            raise ConfigError(f"a {self.kind} name must be {what}, got {name!r}")
        why = self.unreachable(name) if self.unreachable is not None and name not in self.parts else None
        if why is not None:
            return self._refuse(name, why)

        def decorate(factory):
            old = self.parts.get(name)
            if old is not None and old.where != f"{factory.__module__}.{factory.__qualname__}":
                which = "the built-in" if old.builtin else "the"
                raise ConfigError(f"{self.kind} name {name!r} is taken by {which} {self.kind} {old.where}; register "
                                  f"{factory.__module__}.{factory.__qualname__} under another name")
            if name in self.extra:
                raise ConfigError(f"{self.kind} name {name!r} is reserved by the lab; register "
                                  f"{factory.__module__}.{factory.__qualname__} under another name")
            given = dict(options or {})
            own = {arg: default for arg, default in _own_arguments(factory, self.contract).items() if arg not in given}
            applies = inputs or (("image",) if getattr(factory, "image_only", False) else ("image", "vector"))
            origin = "built-in" if builtin else (_current_origin[-1] if _current_origin else factory.__module__)
            part = Part(name, factory, given, {a: option_parameter(a, d, name) for a, d in own.items()},
                        origin, builtin, tuple(applies), dict(info or {}))
            self.parts[name] = part
            for owner, selector in self._owners:
                self._add_to(owner, selector, part)
            return factory

        return decorate

    def _refuse(self, name: str, why: str):
        """Refuse a name no route could reach. Within a plugin the part is left out and the refusal kept for the
        plugin's report, so that its other parts still load (the decorator hands the factory back unregistered);
        from a user's own code it is a `ConfigError` at once."""
        if not _current_origin:
            raise ConfigError(f"{self.kind} name {name!r} cannot be reached: {why}; register it under another name")
        _refused.append(f"its {self.kind} {name!r} was left out: {why}; the plugin must register it under another "
                        "name")
        return lambda factory: factory

    def attach(self, owner: type[param.Parameterized], selector: str) -> None:
        """Keep `owner.<selector>` (and its subclasses') choices and options in step with this registry."""
        self._owners.append((owner, selector))
        for part in self.parts.values():
            self._add_to(owner, selector, part)

    def _add_to(self, owner: type[param.Parameterized], selector: str, part: Part) -> None:
        classes = _subclasses(owner)
        for arg, p in part.declared.items():
            pname = part.options.get(arg)
            if pname is not None and pname in owner.param:
                continue
            pname = arg if not any(arg in c.param for c in classes) else f"{part.name}_{arg}"
            if any(pname in c.param for c in classes):
                raise ConfigError(f"{self.kind} {part.name!r}: option {arg!r} clashes with the setting {pname!r}; "
                                  "rename the constructor argument")
            owner.param.add_parameter(pname, _copy(p))
            part.options[arg] = pname
        for c in classes:
            objects = c.param[selector].objects
            if part.name not in objects:
                objects.append(part.name)
            c._param__private.params.clear()  # param caches a class's parameter list

    # -- looking up -----------------------------------------------------------------------------------------------
    def names(self) -> list[str]:
        """The selector's choices: the extras first, then the registered names in registration order."""
        return list(self.extra) + list(self.parts)

    def get(self, name: str) -> Part:
        """The part registered as `name`; unknown names are refused, listing the known ones."""
        try:
            return self.parts[name]
        except KeyError:
            raise ConfigError(f"unknown {self.kind} {name!r}; choose one of {', '.join(self.names())}") from None

    def options_of(self, name: str, config) -> dict[str, object]:
        """Part `name`'s own constructor arguments, read from `config`'s settings (those it has)."""
        part = self.get(name)
        return {arg: getattr(config, pname) for arg, pname in part.options.items() if pname in config.param}

    def build(self, name: str, *args, **options):
        """Part `name` built with the contract's arguments (`args`, or by name in `options`) and those of `options`
        that are its own arguments (the others are ignored, so a config's settings can be passed as they are)."""
        part = self.get(name)
        own = {k: v for k, v in options.items() if k in part.options or k in self.contract}
        return part.factory(*args, **own)


class PartsView(Mapping):
    """A read-only mapping name → what each part of `registry` records under `info[key]` (a data set's `Source`, a
    reader's `Reader`), for code that looks parts up as a dict; it follows registrations and their roll-back."""

    def __init__(self, registry: Registry, key: str):
        self._registry, self._key = registry, key

    def __getitem__(self, name: str):
        return self._registry.parts[name].info[self._key]

    def __iter__(self):
        return iter(self._registry.parts)

    def __len__(self) -> int:
        return len(self._registry.parts)


# -- undoing registrations -------------------------------------------------------------------------------------------
class Snapshot:
    """Every registry's and registration table's contents at one moment (see `snapshot`); `restore()` puts them back
    and takes the choices and options added since out of the attached config classes."""

    def __init__(self):
        self._tables = [(t, dict(t)) for t in _TABLES]
        self._registries = []
        for reg in _REGISTRIES:
            configs = []  # (class, its own parameter names, its selector's choices) for every attached class
            for owner, selector in reg._owners:
                for c in _subclasses(owner):
                    configs.append((c, set(_own_parameters(c)), selector, list(c.param[selector].objects)))
            options = {name: dict(part.options) for name, part in reg.parts.items()}
            self._registries.append((reg, dict(reg.parts), list(reg._owners), options, configs))

    def restore(self) -> None:
        """Put every registry and table back as it was when the snapshot was taken."""
        for entries, saved in self._tables:
            entries.clear()
            entries.update(saved)
        for reg, parts, owners, options, configs in self._registries:
            reg.parts.clear()
            reg.parts.update(parts)
            reg._owners[:] = owners
            for name, part in parts.items():
                part.options.clear()
                part.options.update(options[name])
            for c, names, selector, objects in configs:
                for added in set(_own_parameters(c)) - names:
                    type.__delattr__(c, added)  # an option a rolled-back part brought
                c.param[selector].objects[:] = objects
            for c in {sub for owner, _ in owners for sub in _subclasses(owner)} | {c for c, *_ in configs}:
                c._param__private.params.clear()  # param caches a class's parameter list


def snapshot() -> Snapshot:
    """The state of every registry and registration table now, to `restore()` later (all or nothing)."""
    return Snapshot()


def _own_parameters(cls: type) -> list[str]:
    """The names of the param parameters set on `cls` itself (not inherited)."""
    return [k for k, v in vars(cls).items() if isinstance(v, param.Parameter)]


def _copy(p: param.Parameter) -> param.Parameter:
    """A fresh parameter like `p` (a parameter object belongs to one class)."""
    kwargs = {k: getattr(p, k) for k in ("default", "doc")}
    if isinstance(p, param.Number) and not isinstance(p, param.Integer) and p.default is not None:
        kwargs["default"] = float(p.default)
    return type(p)(**kwargs)


__all__ = ["Part", "Registry", "Snapshot", "option_parameter", "snapshot", "table", "PartsView", "WORD", "SLUG"]
