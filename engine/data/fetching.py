"""What `invlab fetch` knows: the data sets whose registry entry says how to fetch them (`Source.fetch`), and
`fetch(name)`, which runs it once into the data directory. Nothing else is ever downloaded; `load` reads what a fetch
left (e.g. mnist's cache).
"""
from __future__ import annotations

from pathlib import Path

from ..errors import DataError
from .sources import SOURCES, canonical, looks_like_path, names, split_prefix


def list_datasets() -> list[str]:
    """The registered dataset names; the user's own files ('csv:PATH' ...) are accepted too but not listed (see
    `invlab.data.loadable` for those under a folder)."""
    return names()


def fetchable() -> list[str]:
    """The data sets `invlab fetch` can download: those whose entry declares a `fetch`, in registration order."""
    return [name for name, source in SOURCES.items() if source.fetch is not None]


def _listed(items: list[str]) -> str:
    return ", ".join(map(repr, items)) or "none"


def fetch(name: str, data_dir=None, progress: bool = True, force: bool = False) -> Path:
    """Download a dataset into the data directory once, as its registry entry says (only those listed by
    `fetchable()` need it). Returns the cache path."""
    key = canonical(name) if isinstance(name, str) else name
    source = SOURCES.get(key) if isinstance(key, str) else None
    if source is not None and source.fetch is not None:
        return source.fetch(data_dir, progress=progress, force=force)
    if isinstance(key, str) and (source is not None or split_prefix(key) is not None or looks_like_path(key)):
        raise DataError(f"{name!r} needs no fetch: it is bundled, generated or local; only {_listed(fetchable())} "
                        "are fetched.")
    raise DataError(f"unknown dataset {name!r}; only {_listed(fetchable())} can be fetched (datasets: "
                    f"{', '.join(names())}).")
