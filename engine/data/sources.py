"""The registry of data sources: what each one is, which options it takes, and how its arrays are made.

A source only produces raw arrays (`RawData`); the shared steps — splitting, class selection, odd/even,
subsets, rotation, standardisation — happen once, in `loader.load`. A source with options declares them
as a small `param.Parameterized` class, so bounds and docs live on the parameters as everywhere else.

Two registries (invlab.data.raw): the named data sets (`register_dataset`; `SOURCES` maps a name to its `Source`),
and the prefixes that read the user's own files (`register_reader`; `READERS`: `csv:PATH`, `npz:PATH`,
`parquet:PATH`, `images:DIR`, `idx:DIR`), the built-ins registered through the same doors as a plugin's. A bare
path is read by the reader its extension or its folder's layout names. Each entry holds all the lab knows of its data
set or reader: the maker (makers.py), options, whether and how it is fetched, its size, a reader's extensions and the
folders it recognises.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import DataError
from . import makers, mnist, raw
from .makers import make_idx, patch_positions  # noqa: F401  (their home before makers.py)
from .paths import kind_of_path, reader_of_extension
from .raw import (  # noqa: F401  (handed.py and plugins take them from here)
    READERS,
    SOURCES,
    DataSize,
    RawData,
    Reader,
    Source,
    fixed_size,
    register_dataset,
    register_reader,
    with_notes,
)
from .source_options import PhotoPatchesOptions, RectanglesOptions, Symmetric2dOptions, TwoMoonsOptions

IDX_PREFIX = "idx:"


# The built-in named data sets, registered through the door a plugin's use (`register_dataset`).
_DIGITS, _TABULAR = dict(digit_labels=True), dict(options=None)
for _name, _description, _kind, _task, _make, _how in [
    ("digits", "8×8 handwritten digits bundled with scikit-learn", "image", "classification", makers.make_digits,
     dict(_DIGITS, size=fixed_size(1797, 64, 10))),
    ("mnist", "28×28 MNIST handwritten digits (fetched once by `invlab fetch mnist`)", "image", "classification",
     makers.make_mnist, dict(_DIGITS, fetch=mnist.fetch_mnist, size=fixed_size(70_000, 784, 10, fixed_split=True))),
    ("rectangles", "28×28 outlines of random rectangles, tall vs wide (van der Wilk, Rasmussen & Hensman 2017)",
     "image", "classification", makers.make_rectangles, dict(options=RectanglesOptions, size=makers.rectangles_size)),
    ("symmetric-2d", "noisy samples of a 2-D function symmetric under swapping x1 and x2 (van der Wilk et al. 2018 "
     "Fig. 2)", "points", "regression", makers.make_symmetric_2d,
     dict(options=Symmetric2dOptions, size=makers.points_size(1))),
    ("two-moons", "scikit-learn's two moons (Zhang, Lee & Teh 2013 Fig. 1)", "points", "classification",
     makers.make_two_moons, dict(options=TwoMoonsOptions, size=makers.points_size(2))),
    ("photo-patches", "colour patches of scikit-learn's two sample photos, labelled by photo", "image",
     "classification", makers.make_photo_patches, dict(options=PhotoPatchesOptions, size=makers.photo_patches_size)),
    ("diabetes", "scikit-learn's diabetes progression (442 patients, 10 features)", "tabular", "regression",
     makers.make_tabular("load_diabetes"), dict(_TABULAR, size=fixed_size(442, 10, 1))),
    ("wine", "scikit-learn's wine cultivars (178 wines, 13 features, 3 classes)", "tabular", "classification",
     makers.make_tabular("load_wine"), dict(_TABULAR, size=fixed_size(178, 13, 3))),
    ("breast_cancer", "scikit-learn's Wisconsin breast cancer (569 tumours, 30 features)", "tabular",
     "classification", makers.make_tabular("load_breast_cancer"), dict(_TABULAR, size=fixed_size(569, 30, 2))),
]:
    register_dataset(_name, _description, _kind, _task, builtin=True, **_how)(_make)


def _file_source(reader, kind: str, options_class, label: str):
    def source(path):
        name = os.path.basename(os.path.normpath(path)) or path
        return Source(name, f"{label} {path}", kind, "auto", with_notes(lambda o, n: reader(path, o, n)),
                      options_class)

    return source


@register_reader("csv", "a CSV file (target: the last column, or target=)", extensions=(".csv", ".tsv"), builtin=True)
def _csv(path):
    from .files import read_csv
    from .tables import TableOptions

    return _file_source(read_csv, "tabular", TableOptions, "the CSV file")(path)


@register_reader("npz", "a NumPy .npz file with arrays X, y (and X_test, y_test)", extensions=(".npz",),
                 builtin=True)
def _npz(path):
    from .files import NpzOptions, read_npz

    return _file_source(read_npz, "tabular", NpzOptions, "the npz file")(path)


@register_reader("parquet", "a Parquet file (needs pyarrow)", extensions=(".parquet", ".pq"), builtin=True)
def _parquet(path):
    from .files import read_parquet
    from .tables import TableOptions

    return _file_source(read_parquet, "tabular", TableOptions, "the Parquet file")(path)


def _class_folders(folder: Path) -> bool:
    from .image_folders import holds_class_folders

    return holds_class_folders(folder)


def _idx_files(folder: Path) -> bool:
    from .idx import find_idx_file

    return find_idx_file(folder, "train_images") is not None


@register_reader("images", "a folder of class folders of images, DIR/<class>/*.png", recognises=_class_folders,
                 builtin=True)
def _images(path):
    from .image_folders import ImageFolderOptions, read_image_folder

    return _file_source(read_image_folder, "image", ImageFolderOptions, "the image folders in")(path)


# An IDX folder's size is only known once it is read: MNIST's is the guess.
@register_reader("idx", "a folder of MNIST-format IDX files", recognises=_idx_files,
                 size=DataSize(70_000, 70_000, 784, 10), builtin=True)
def _idx(path):
    return Source(f"idx:{path}", f"MNIST-format IDX files in {path}", "image", "classification", make_idx(path),
                  digit_labels=True)


def names() -> list[str]:
    """The names of the registered data sources, in registration order."""
    return list(SOURCES)


def split_prefix(name: str) -> tuple[str, str] | None:
    """('csv', PATH) for 'csv:PATH' (any registered reader's prefix), else None."""
    prefix, sep, rest = name.partition(":")
    if sep and prefix in READERS and len(prefix) >= raw.MIN_PREFIX:  # 'C:\data' is a Windows drive, not a prefix
        return prefix, rest
    return None


def looks_like_path(name: str) -> bool:
    """Whether a dataset string is a path (a separator, a home '~', or an extension a reader knows)."""
    return "/" in name or os.sep in name or name.startswith("~") or reader_of_extension(name) is not None


def file_path(name) -> str | None:
    """The file or folder a dataset string reads ('csv:PATH', 'images:DIR', a bare path), or None for a registered
    name or a Python object: what a server checks against its allowed data directories."""
    if not isinstance(name, str):
        return None
    pair = split_prefix(name)
    if pair is not None:
        return pair[1]
    if canonical(name) in SOURCES:
        return None
    return name if looks_like_path(name) else None


def canonical(name: str) -> str:
    """Lower case, and '_' and '-' both accepted ('two_moons', 'breast-cancer')."""
    key = name.strip().lower()
    for known in SOURCES:  # registration refuses a second name that reads as one already there
        if raw.name_key(key) == raw.name_key(known):
            return known
    return key


def spec_of(name: str) -> str:
    """The dataset string with its reader's prefix: 'mine.csv' -> 'csv:mine.csv'; a registered name as it is."""
    if split_prefix(name) is not None or canonical(name) in SOURCES or not looks_like_path(name):
        return name
    kind = kind_of_path(name)
    if kind is None:
        endings = ", ".join(e for reader in READERS.values() for e in reader.extensions)
        raise DataError(f"{name!r} does not say what it holds (no extension a reader knows: {endings}; and not a "
                        "folder); prefix it with its format, e.g. 'csv:" + name + "'.")
    return f"{kind}:{name}"


def resolve(name: str) -> Source:
    """The Source for a name: a registered one, 'prefix:PATH' for a registered reader, or a bare path."""
    if not isinstance(name, str):
        raise DataError(f"dataset name must be a string, not {type(name).__name__}; choose from {names()}.")
    source = SOURCES.get(canonical(name))
    if source is not None:
        return source
    pair = split_prefix(spec_of(name))
    if pair is None:
        raise DataError(f"unknown dataset {name!r}; choose one of {', '.join(names())}, or your own data as "
                        "'csv:PATH', 'npz:PATH', 'parquet:PATH', 'images:DIR', 'idx:DIR' or a path to such a file.")
    prefix, path = pair
    reader = READERS[prefix]
    if not path:
        folder = reader.recognises is not None  # a reader of folders says so in its entry
        ending = "" if folder else (reader.extensions or (f".{prefix}",))[0]
        raise DataError(f"'{prefix}:' needs a {'directory' if folder else 'file'}, e.g. '{prefix}:/data/mine{ending}'.")
    return reader.source(path)


def size_of(name: str, source_options: dict, test_fraction: float) -> DataSize | None:
    """How much data `name` would make, as its registry entry says, from the source's own options (its defaults
    filled in) alone — nothing is read; for a file or folder, its reader's guess. None when the entry says nothing."""
    source = SOURCES.get(canonical(name))
    if source is not None:
        if source.size is None:
            return None
        defaults = source.options() if source.options is not None else None
        own = {k: source_options.get(k, getattr(defaults, k)) for k in defaults.param if k != "name"} \
            if defaults is not None else {}
        return source.size(own, test_fraction)
    pair = split_prefix(name)
    prefix = pair[0] if pair is not None else reader_of_extension(name)
    reader = READERS.get(prefix) if prefix is not None else None
    return reader.size if reader is not None else None
