"""The built-in data sets' makers: each `make_*(options, seed, test_fraction) -> RawData` produces one named set's raw
arrays (sources.py registers them), and the sizes of those whose size their options set (`*_size`, what a served
page's limits estimate from).

digits and the tabular sets come with scikit-learn, mnist from the cache `invlab fetch mnist` writes, rectangles,
symmetric-2d and two-moons are synthetic (seeded), photo-patches are cut from scikit-learn's two sample photos.
"""
from __future__ import annotations

import gzip
import importlib.util
import os

import numpy as np

from ..errors import DataError
from . import mnist, synthetic
from .dataset import refuse_non_finite
from .idx import load_idx_dir
from .raw import DataSize, RawData
from .variants import rng


def sklearn_datasets():
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
    bunch = sklearn_datasets().load_digits()
    return np.column_stack([bunch.data, bunch.target])


def make_digits(options, seed, test_fraction):
    """scikit-learn's 1,797 8×8 digits, [N, 1, 8, 8] in [0, 1]; the loader splits them."""
    table = _digits_table()
    X = table[:, :-1].reshape(-1, 1, 8, 8) / 16.0  # [N, 1, 8, 8]; grey levels 0..16
    return RawData(X, table[:, -1].astype(int), class_names=[str(d) for d in range(10)])


def make_mnist(options, seed, test_fraction):
    """MNIST from the cache `invlab fetch mnist` wrote: the 60,000/10,000 split, or the npm package's 10,000 digits
    (split by the loader)."""
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


def make_rectangles(options, seed, test_fraction):
    """Outlines of random rectangles, wide (0) or tall (1), each side at least `min_side_gap` from the other."""
    generator = rng(seed, "source")
    size, gap = options["image_size"], options["min_side_gap"]
    if gap > size - synthetic.RECTANGLE_MIN_SIDE:
        raise DataError(f"rectangles: min_side_gap={gap} leaves no rectangle in a {size}×{size} image (sides run "
                        f"from {synthetic.RECTANGLE_MIN_SIDE} to {size}); use min_side_gap ≤ "
                        f"{size - synthetic.RECTANGLE_MIN_SIDE} or a larger image_size.")
    X_train, y_train = synthetic.rectangles(options["num_train"], generator, size, min_gap=gap)
    X_test, y_test = synthetic.rectangles(options["num_test"], generator, size, min_gap=gap)
    return RawData(X_train, y_train, X_test, y_test, class_names=["wide", "tall"])


def make_symmetric_2d(options, seed, test_fraction):
    """Noisy samples of a function of the plane symmetric under swapping x1 and x2."""
    generator = rng(seed, "source")
    X_train, y_train = synthetic.symmetric_2d(options["num_train"], generator, options["noise"], options["one_sided"])
    X_test, y_test = synthetic.symmetric_2d(options["num_test"], generator, options["noise"])
    return RawData(X_train, y_train, X_test, y_test)


def make_two_moons(options, seed, test_fraction):
    """scikit-learn's two interleaved half circles, labelled upper (0) and lower (1)."""
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


def make_photo_patches(options, seed, test_fraction):
    """Patches of both sample photos (0 china, 1 flower), half of each part from each photo."""
    photos = sklearn_datasets().load_sample_images().images  # two [427, 640, 3] uint8 arrays: china, flower
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


def make_tabular(name: str):
    """The maker of scikit-learn's tabular data set `sklearn.datasets.<name>()`."""
    def make(options, seed, test_fraction):
        bunch = getattr(sklearn_datasets(), name)()
        names = [str(n) for n in bunch.target_names] if hasattr(bunch, "target_names") else None
        columns = [str(n) for n in getattr(bunch, "feature_names", ())]  # their own names, as a CSV's
        return RawData(bunch.data, bunch.target, class_names=names,
                       metadata={"feature_names": columns} if columns else {})

    return make


def rectangles_size(own: dict, test_fraction: float) -> DataSize:
    """`num_train` + `num_test` images of `image_size`² pixels, two classes."""
    train, test, side = int(own["num_train"]), int(own["num_test"]), int(own["image_size"])
    return DataSize(train + test, train, side**2, 2)


def photo_patches_size(own: dict, test_fraction: float) -> DataSize:
    """`num_train` + `num_test` colour patches of 3·`patch_size`² numbers, two photos."""
    train, test, side = int(own["num_train"]), int(own["num_test"]), int(own["patch_size"])
    return DataSize(train + test, train, 3 * side**2, 2)


def points_size(classes: int):
    """The `size` of a set of points in the plane: `num_train` + `num_test` points of 2 numbers."""

    def size(own: dict, test_fraction: float) -> DataSize:
        return DataSize(int(own["num_train"]) + int(own["num_test"]), int(own["num_train"]), 2, classes)

    return size
