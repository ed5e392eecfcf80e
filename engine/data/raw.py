"""The raw data a source or a reader hands to the loader (`RawData`), what a registered source is (`Source`), the
registry of named data sets (`DATASETS`, filled through `register_dataset`; `SOURCES` reads it as a mapping) and that
of readers of the user's own files (`READER_REGISTRY`, through `register_reader`; `READERS`). A leaf module: the
readers (sources.py, files.py, tables.py, objects.py, image_folders.py) all build these, and none imports another
to get them. An entry holds all the lab knows of its data set or reader: how to make it, its options, whether and how
it is fetched and its size (`DataSize`); a reader's file extensions and the folders it recognises."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import param

from ..registry import SLUG, PartsView, Registry


@dataclass
class RawData:
    """What a source hands to the loader. Without X_test, the loader splits by `test_fraction`."""

    X_train: np.ndarray  # [N, C, H, W] images in [0, 1], or [N, D]
    y_train: np.ndarray  # [N] class index 0..K-1, or float target
    X_test: np.ndarray | None = None
    y_test: np.ndarray | None = None
    class_names: list[str] | None = None  # None for regression
    label_values: list[int] | None = None  # the value `classes=[...]` refers to per class; default 0..K-1
    uses_test_fraction: bool = False  # True when the source itself used test_fraction (photo-patches)
    metadata: dict = field(default_factory=dict)
    task: str | None = None  # the task when only the data says it (a CSV's target); None: the source's
    kind: str | None = None  # likewise 'image' / 'tabular'
    notes: list = field(default_factory=list)  # what reading decided for the user (task inferred, files skipped)


@dataclass(frozen=True)
class Source:
    """A registered data source: its name, description, kind ('image', 'tabular' or 'points'), task, the function
    `make(options, seed, test_fraction)` that produces its raw arrays, and its own options class."""
    name: str
    description: str
    kind: str  # 'image' | 'tabular' (standardised) | 'points' (raw coordinates kept, e.g. for symmetry)
    task: str  # 'classification' | 'regression' | 'auto' (the raw data says: a file's target)
    make: Callable  # make(options: dict, seed: int, test_fraction: float) -> RawData
    options: type[param.Parameterized] | None = None  # source-specific options with their bounds
    digit_labels: bool = False  # labels are digits, so odd_even applies
    fetch: Callable | None = None  # fetch(data_dir=None, progress=True, force=False) -> Path; None: nothing to fetch
    size: Callable | None = None  # size(own options with defaults, test_fraction) -> DataSize; None: unknown


@dataclass(frozen=True)
class DataSize:
    """How much data a source makes, known from its options before anything is made: what a served page's limits
    estimate a run's memory from."""

    points: int  # training + test points the source makes
    train: int  # of them, the training points (before `subset`)
    dims: int  # numbers per input (C·H·W for images)
    classes: int  # latent functions: the classes, or 1 for regression


def fixed_size(points: int, dims: int, classes: int, *, fixed_split: bool = False) -> Callable:
    """The `size` of a source whose size no option changes: `points` in all, split by `test_fraction` unless the
    source has a fixed split (`fixed_split`: all of them counted as training points, the larger estimate)."""

    def size(own: dict, test_fraction: float) -> DataSize:
        train = points if fixed_split else points - int(round(points * test_fraction))
        return DataSize(points, train, dims, classes)

    return size


def with_notes(read: Callable) -> Callable:
    """A source maker from `read(options, notes) -> RawData`, keeping the notes with the raw data."""

    def make(options, seed, test_fraction):
        notes: list = []
        raw = read(options, notes)
        raw.notes = notes + raw.notes
        return raw

    return make


@dataclass(frozen=True)
class Reader:
    """A prefix that reads the user's own files: `source(path)` is the `Source` for 'prefix:path'."""

    prefix: str  # 'csv' for 'csv:PATH'
    what: str  # 'a CSV file', for messages and docs
    source: Callable  # source(path) -> Source
    extensions: tuple[str, ...] = ()  # lower-case file endings a bare path is read by this reader for ('.csv')
    recognises: Callable | None = None  # recognises(folder: Path) -> bool: a folder laid out for this reader
    size: DataSize | None = None  # a guess at what a file or folder of its holds (None: the server's own guess)


MIN_PREFIX = 2  # letters of a reader's prefix: 'C:\data' is a Windows drive, never the reader 'c'


def name_key(name: str) -> str:
    """What the lab reads a data set name as: lower case, '_' and '-' alike ('two_moons' is 'two-moons')."""
    return name.strip().lower().replace("_", "-")


def _unreachable_dataset(name: str) -> str | None:
    """Why `name` would never load (another data set is read from it), or None."""
    twin = next((part for key, part in DATASETS.parts.items() if name_key(key) == name_key(name)), None)
    if twin is None:
        return None
    return (f"the lab reads it as the {'built-in ' if twin.builtin else ''}data set {twin.name!r} ('_' and '-' are "
            "one in data set names), so every route would load that one")


def _unreachable_reader(prefix: str) -> str | None:
    """Why 'prefix:PATH' would never reach this reader, or None."""
    if len(prefix) >= MIN_PREFIX:
        return None
    return (f"a one-letter prefix reads as a Windows drive ('{prefix.upper()}:\\data'), so '{prefix}:PATH' is a "
            f"path, never this reader (a prefix needs {MIN_PREFIX} letters or more)")


# The named data sets: each part is its `make(options, seed, test_fraction)`, its `Source` kept in `info["source"]`.
DATASETS = Registry("data set", contract=("options", "seed", "test_fraction"), pattern=SLUG,
                    unreachable=_unreachable_dataset)
SOURCES = PartsView(DATASETS, "source")  # name → Source, as a read-only mapping
# The readers of the user's own files: each part is its `source(path) -> Source`, its `Reader` in `info["reader"]`.
READER_REGISTRY = Registry("reader", contract=("path",), pattern=SLUG, unreachable=_unreachable_reader)
READERS = PartsView(READER_REGISTRY, "reader")  # prefix → Reader


def register_dataset(name: str, description: str, kind: str, task: str, *, options=None, digit_labels: bool = False,
                     fetch: Callable | None = None, size: Callable | None = None, builtin: bool = False):
    """A decorator registering `make(options, seed, test_fraction) -> RawData` as the named data set `name` (a
    `Source`: `kind` 'image', 'tabular' or 'points', `task` 'classification' or 'regression', its own `options`
    class); the built-ins register through it. A name already registered is refused, naming both.

    `fetch(data_dir=None, progress=True, force=False) -> Path` downloads it once (`invlab fetch NAME` lists and
    runs it); `size(own_options, test_fraction) -> DataSize` says how much data it makes from its options alone (a
    served page's limits estimate a run from it; `fixed_size` for a set no option changes)."""
    if kind not in ("image", "tabular", "points") or task not in ("classification", "regression"):
        from ..errors import ConfigError

        raise ConfigError(f"data set {name!r}: kind must be image, tabular or points and task classification or "
                          f"regression, got {kind!r} and {task!r}")

    def decorate(make):
        source = Source(name, description, kind, task, make, options, digit_labels, fetch, size)
        return DATASETS.register(name, builtin=builtin, info={"source": source})(make)

    return decorate


def register_reader(prefix: str, what: str, *, extensions: tuple[str, ...] = (), recognises: Callable | None = None,
                    size: DataSize | None = None, builtin: bool = False):
    """Register `source(path) -> Source` as the reader of 'prefix:PATH', and of a bare path that ends in one of its
    `extensions` ('.csv') or, for a folder, that `recognises(folder)` says is laid out for it; `size` guesses what
    such a file holds for a served page's limits."""
    endings = tuple(e.lower() for e in extensions)

    def decorate(fn):
        reader = Reader(prefix, what, fn, endings, recognises, size)
        return READER_REGISTRY.register(prefix, builtin=builtin, info={"reader": reader})(fn)

    return decorate
