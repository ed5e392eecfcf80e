"""Plugins: installed packages that add kernels, augmentations / orbits or model families.

A package declares entry points in the group `invariance_lab.plugins`, each naming a module to import:

    [project.entry-points."invariance_lab.plugins"]
    rq = "my_kernels.plugin"

Importing the module registers its parts (`@invlab.kernels.register("rq")` ...). `load_plugins()` imports every
such module once per process; the CLI, the served page, `Explorer` and sweep workers call it at start. A plugin
that fails to import (or whose registration is refused, e.g. a name clash) is named in one line and skipped; the
rest of the lab still starts. A plugin that fails is all or nothing: whatever it registered before failing (in any
registry or registration table, see `invlab.registry.snapshot`) is rolled back with it. One exception: a part whose
name no route could reach (a data set `two_moons`, which the lab reads as the built-in `two-moons`; a one-letter
reader prefix, which reads as a Windows drive) is left out with a line naming the plugin, and its other parts load.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib import metadata

from . import registry

GROUP = "invariance_lab.plugins"


@dataclass(frozen=True)
class Plugin:
    """One entry point of the group: its `name`, the `module` it names, the `package` (distribution) declaring it,
    `error`, the one-line reason it was skipped (None when it loaded), and `refused`, a sentence for each of its
    parts left out because no route could reach its name."""

    name: str
    module: str
    package: str
    error: str | None = None
    refused: tuple[str, ...] = ()

    @property
    def origin(self) -> str:
        """How parts registered by this plugin say where they came from."""
        return f"plugin {self.name} ({self.package})"


_loaded: list[Plugin] | None = None


def load_plugins() -> list[Plugin]:
    """Import every plugin module once (later calls return the first call's result); never raises."""
    global _loaded
    if _loaded is not None:
        return _loaded
    _loaded = []
    try:
        entries = sorted(metadata.entry_points(group=GROUP), key=lambda e: e.name)
    except Exception as err:  # a broken metadata directory on sys.path
        _loaded.append(Plugin("?", "?", "?", f"the installed plugin list could not be read: {err}"))
        return _loaded
    if entries:
        _import_built_ins()
    for entry in entries:
        package = entry.dist.name if getattr(entry, "dist", None) is not None else "?"
        module = entry.value.split(":")[0]
        plugin = Plugin(entry.name, module, package)
        registry._current_origin.append(plugin.origin)
        before, refused_before = registry.snapshot(), len(registry._refused)
        try:
            importlib.import_module(module)
            plugin = Plugin(entry.name, module, package, refused=tuple(registry._refused[refused_before:]))
        except BaseException as err:  # noqa: BLE001 - a plugin may raise anything on import; it is reported
            before.restore()  # nothing it registered before failing stays
            if isinstance(err, KeyboardInterrupt):
                raise
            text = " ".join(str(err).split()) or type(err).__name__
            plugin = Plugin(entry.name, module, package, f"{type(err).__name__}: {text}")
        finally:
            registry._current_origin.pop()
            del registry._refused[refused_before:]
        _loaded.append(plugin)
    return _loaded


def _import_built_ins() -> None:
    """Import every package that registers built-in parts, so that a snapshot taken before a plugin holds them all
    (a built-in first imported by a failing plugin would otherwise be rolled back with it)."""
    for name in ("kernels", "transforms", "covariances", "models", "data"):
        importlib.import_module(f"{__package__}.{name}")


def failure_lines(plugins: list[Plugin] | None = None) -> list[str]:
    """One line per plugin that was skipped, and one per part of a plugin that was left out: which, from which
    package, why, and what to do."""
    plugins = load_plugins() if plugins is None else plugins
    lines = []
    for p in plugins:
        named = f"plugin {p.name!r} (module {p.module}, package {p.package})"
        if p.error:
            lines.append(f"{named} failed to load and was skipped: {p.error}; fix or uninstall {p.package}")
        lines.extend(f"{named} loaded, but {sentence}; its other parts are registered" for sentence in p.refused)
    return lines


__all__ = ["GROUP", "Plugin", "load_plugins", "failure_lines"]
