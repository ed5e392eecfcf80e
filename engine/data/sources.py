"""The registry of data sources: what each one is, which options it takes, and how its arrays are made.

A source only produces raw arrays (`RawData`); the shared steps — splitting, class selection, odd/even,
subsets, rotation, standardisation — happen once, in `loader.load`. A source with options declares them
as a small `param.Parameterized` class, so bounds and docs live on the parameters as everywhere else.

Two registries (invlab.data.raw): the named data sets (`register_dataset`; `SOURCES` maps a name to its `Source`),
and the prefixes that read the user's own files (`register_reader`; `READERS`: `csv:PATH`, `npz:PATH`,
`parquet:PATH`, `images:DIR`, `idx:DIR`), the built-ins registered through the same doors as a plugin's. A bare
path is read by the reader its extension or its folder's layout names.
"""
from __future__ import annotations

import gzip
import importlib.util
import os

import numpy as np

from ..errors import DataError
from . import mnist, raw, synthetic
from .dataset import refuse_non_finite
from .idx import load_idx_dir
from .raw import READERS, SOURCES, RawData, Reader, Source, register_dataset, register_reader, with_notes  # noqa: F401
from .source_options import PhotoPatchesOptions, RectanglesOptions, Symmetric2dOptions, TwoMoonsOptions
from .variants import rng

IDX_PREFIX = "idx:"


# --- makers ---------------------------------------------------------------------------------------


def _skdata():
    """scikit-learn's `sklearn.datasets`, imported when a data set needs it: importing scikit-learn takes about a
    second of CPU (it imports scipy.stats), which every process that trains would otherwise pay at start-up."""
    return importlib.import_module("sklearn.datasets")


def _digits_table() -> np.ndarray:
    """The digits as scikit-learn ships them: [1797, 65] floats, 64 grey levels (0..16) then the label, read from
    the file `sklearn.datasets.load_digits` reads, without importing scikit-learn; through `load_digits` where
    that file is not found."""
    spec = importlib.util.find_spec("sklearn")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = os.path.join(folder, "datasets", "data", "digits.csv.gz")
        if os.path.exists(path):
            with gzip.open(path, "rt", encoding="utf-8") as f:
                return np.loadtxt(f, delimiter=",")
    bunch = _skdata().load_digits()
    return np.column_stack([bunch.data, bunch.target])


def _digits(options, seed, test_fraction):
    table = _digits_table()
    X = table[:, :-1].reshape(-1, 1, 8, 8) / 16.0  # [N, 1, 8, 8]; grey levels 0..16
    return RawData(X, table[:, -1].astype(int), class_names=[str(d) for d in range(10)])


def _mnist(options, seed, test_fraction):
    cache = mnist.read_cache(mnist.cache_path())
    X_train = cache["x_train"][:, None] / 255.0  # [N, 1, 28, 28]
    names = [str(d) for d in range(10)]
    if cache["source"] == "npm":  # 10,000 digits without a fixed split
        return RawData(X_train, cache["y_train"], class_names=names, metadata={"mnist_source": "npm"})
    X_test = cache["x_test"][:, None] / 255.0
    return RawData(X_train, cache["y_train"], X_test, cache["y_test"], names, metadata={"mnist_source": "idx"})


def _scale_images(X: np.ndarray, where: str) -> np.ndarray:
    """[N, H, W] stored values -> [N, 1, H, W] in [0, 1]: bytes / 255; other types must already be in [0, 1]."""
    if X.dtype == np.uint8:
        return X[:, None] / 255.0
    stored = X.dtype  # the file's type, named in messages (not the float64 it becomes here)
    X = X.astype(np.float64)[:, None]
    refuse_non_finite(X[:, 0], f"{where} ({stored} images)")
    if X.size and (X.min() < 0 or X.max() > 1):
        raise DataError(
            f"{where}: images of type {stored} have values in [{X.min():g}, {X.max():g}]; IDX images must be "
            "unsigned bytes (0..255) or numbers in [0, 1] — rescale them."
        )
    return X


def make_idx(directory: str):
    """A maker for the MNIST-format IDX files in `directory` (`idx:DIR`): images scaled to [0, 1], class k the k-th
    smallest label value."""
    def make(options, seed, test_fraction):
        X_train, y_train, X_test, y_test = load_idx_dir(directory)
        labels = y_train if y_test is None else np.concatenate([y_train, y_test])
        values = np.unique(labels)  # class k is the k-th smallest label value
        raw = RawData(
            _scale_images(X_train, directory),
            np.searchsorted(values, y_train),
            class_names=[str(v) for v in values],
            label_values=[int(v) for v in values],
        )
        if X_test is not None:
            raw.X_test, raw.y_test = _scale_images(X_test, directory), np.searchsorted(values, y_test)
        return raw

    return make


def _rectangles(options, seed, test_fraction):
    generator = rng(seed, "source")
    size, gap = options["image_size"], options["min_side_gap"]
    if gap > size - synthetic.RECTANGLE_MIN_SIDE:
        raise DataError(f"rectangles: min_side_gap={gap} leaves no rectangle in a {size}×{size} image (sides run "
                        f"from {synthetic.RECTANGLE_MIN_SIDE} to {size}); use min_side_gap ≤ "
                        f"{size - synthetic.RECTANGLE_MIN_SIDE} or a larger image_size.")
    X_train, y_train = synthetic.rectangles(options["num_train"], generator, size, min_gap=gap)
    X_test, y_test = synthetic.rectangles(options["num_test"], generator, size, min_gap=gap)
    return RawData(X_train, y_train, X_test, y_test, class_names=["wide", "tall"])


def _symmetric_2d(options, seed, test_fraction):
    generator = rng(seed, "source")
    X_train, y_train = synthetic.symmetric_2d(options["num_train"], generator, options["noise"], options["one_sided"])
    X_test, y_test = synthetic.symmetric_2d(options["num_test"], generator, options["noise"])
    return RawData(X_train, y_train, X_test, y_test)


def _two_moons(options, seed, test_fraction):
    generator = rng(seed, "source")
    X_train, y_train = synthetic.two_moons(options["num_train"], generator, options["noise"])
    X_test, y_test = synthetic.two_moons(options["num_test"], generator, options["noise"])
    return RawData(X_train, y_train, X_test, y_test, class_names=["upper", "lower"])


def patch_positions(photo_shape, size: int, counts: dict, test_fraction: float, generator):
    """Top-left corners {'train': (top [n], left [n]), 'test': ...} of square patches in one photo.

    The photo is tiled into square blocks of side 3·size; a `test_fraction` share of the blocks (at least
    one, chosen by the generator) is reserved for test patches, the rest for training. Each patch lies
    wholly inside one block, so no test pixel is ever seen in training, yet both parts cover the photo.
    """
    block = 3 * size
    rows, cols = photo_shape[0] // block, photo_shape[1] // block
    order = generator.permutation(rows * cols)
    n_test_blocks = min(max(int(round(test_fraction * len(order))), 1), len(order) - 1)
    blocks = {"test": order[:n_test_blocks], "train": order[n_test_blocks:]}
    positions = {}
    for part in ("train", "test"):
        n = counts[part]
        chosen = generator.choice(blocks[part], size=n)  # with replacement: many patches per block
        top = (chosen // cols) * block + generator.integers(0, block - size + 1, size=n)
        left = (chosen % cols) * block + generator.integers(0, block - size + 1, size=n)
        positions[part] = (top, left)
    return positions


def _photo_patches(options, seed, test_fraction):
    """Patches of both sample photos (0 china, 1 flower), half of each part from each photo."""
    photos = _skdata().load_sample_images().images  # two [427, 640, 3] uint8 arrays: china, flower
    size = options["patch_size"]
    generator = rng(seed, "source")
    parts = {"train": ([], []), "test": ([], [])}
    for label, photo in enumerate(photos):
        totals = {part: options[f"num_{part}"] for part in parts}
        counts = {part: n - n // 2 if label == 0 else n // 2 for part, n in totals.items()}  # china takes an odd one
        for part, (top, left) in patch_positions(photo.shape, size, counts, test_fraction, generator).items():
            patches = np.stack([photo[t : t + size, l : l + size] for t, l in zip(top, left)])  # [n, size, size, 3]
            parts[part][0].append(patches.transpose(0, 3, 1, 2) / 255.0)  # [n, 3, size, size]
            parts[part][1].append(np.full(len(top), label))
    (Xtr, ytr), (Xte, yte) = [(np.concatenate(X), np.concatenate(y)) for X, y in parts.values()]
    train, test = generator.permutation(len(ytr)), generator.permutation(len(yte))  # mix the two photos
    return RawData(Xtr[train], ytr[train], Xte[test], yte[test], class_names=["china", "flower"],
                   uses_test_fraction=True)


def _tabular(name: str):
    """The maker of scikit-learn's tabular data set `sklearn.datasets.<name>()`."""
    def make(options, seed, test_fraction):
        bunch = getattr(_skdata(), name)()
        names = [str(n) for n in bunch.target_names] if hasattr(bunch, "target_names") else None
        columns = [str(n) for n in getattr(bunch, "feature_names", ())]  # their own names, as a CSV's
        return RawData(bunch.data, bunch.target, class_names=names,
                       metadata={"feature_names": columns} if columns else {})

    return make


# The built-in named data sets, registered through the door a plugin's use (`register_dataset`).
for _name, _description, _kind, _task, _make, _options, _digits_labels in [
    ("digits", "8×8 handwritten digits bundled with scikit-learn", "image", "classification", _digits, None, True),
    ("mnist", "28×28 MNIST handwritten digits (fetched once by `invlab fetch mnist`)", "image", "classification",
     _mnist, None, True),
    ("rectangles", "28×28 outlines of random rectangles, tall vs wide (van der Wilk, Rasmussen & Hensman 2017)",
     "image", "classification", _rectangles, RectanglesOptions, False),
    ("symmetric-2d", "noisy samples of a 2-D function symmetric under swapping x1 and x2 (van der Wilk et al. 2018 "
     "Fig. 2)", "points", "regression", _symmetric_2d, Symmetric2dOptions, False),
    ("two-moons", "scikit-learn's two moons (Zhang, Lee & Teh 2013 Fig. 1)", "points", "classification", _two_moons,
     TwoMoonsOptions, False),
    ("photo-patches", "colour patches of scikit-learn's two sample photos, labelled by photo", "image",
     "classification", _photo_patches, PhotoPatchesOptions, False),
    ("diabetes", "scikit-learn's diabetes progression (442 patients, 10 features)", "tabular", "regression",
     _tabular("load_diabetes"), None, False),
    ("wine", "scikit-learn's wine cultivars (178 wines, 13 features, 3 classes)", "tabular", "classification",
     _tabular("load_wine"), None, False),
    ("breast_cancer", "scikit-learn's Wisconsin breast cancer (569 tumours, 30 features)", "tabular",
     "classification", _tabular("load_breast_cancer"), None, False),
]:
    register_dataset(_name, _description, _kind, _task, options=_options, digit_labels=_digits_labels,
                     builtin=True)(_make)


def _file_source(reader, kind: str, options_class, label: str):
    def source(path):
        name = os.path.basename(os.path.normpath(path)) or path
        return Source(name, f"{label} {path}", kind, "auto", with_notes(lambda o, n: reader(path, o, n)),
                      options_class)

    return source


@register_reader("csv", "a CSV file (target: the last column, or target=)", builtin=True)
def _csv(path):
    from .files import read_csv
    from .tables import TableOptions

    return _file_source(read_csv, "tabular", TableOptions, "the CSV file")(path)


@register_reader("npz", "a NumPy .npz file with arrays X, y (and X_test, y_test)", builtin=True)
def _npz(path):
    from .files import NpzOptions, read_npz

    return _file_source(read_npz, "tabular", NpzOptions, "the npz file")(path)


@register_reader("parquet", "a Parquet file (needs pyarrow)", builtin=True)
def _parquet(path):
    from .files import read_parquet
    from .tables import TableOptions

    return _file_source(read_parquet, "tabular", TableOptions, "the Parquet file")(path)


@register_reader("images", "a folder of class folders of images, DIR/<class>/*.png", builtin=True)
def _images(path):
    from .image_folders import ImageFolderOptions, read_image_folder

    return _file_source(read_image_folder, "image", ImageFolderOptions, "the image folders in")(path)


@register_reader("idx", "a folder of MNIST-format IDX files", builtin=True)
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
    from .files import TABULAR_EXTENSIONS

    return "/" in name or os.sep in name or name.startswith("~") or \
        os.path.splitext(name)[1].lower() in TABULAR_EXTENSIONS


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
    from .files import kind_of_path

    kind = kind_of_path(name)
    if kind is None:
        raise DataError(f"{name!r} does not say what it holds (no .csv, .npz or .parquet extension, and not a "
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
    if not path:
        folder = prefix in ("images", "idx")
        raise DataError(f"'{prefix}:' needs a {'directory' if folder else 'file'}, e.g. '{prefix}:/data/mine"
                        f"{'' if folder else '.' + prefix}'.")
    return READERS[prefix].source(path)
