"""The shared steps `load` applies to every source's raw arrays, each with its own seeded generator: the split (when
the source has no test set), class selection and odd/even labels, subsets, rotation, and a one-line description.
"""
from __future__ import annotations

import numpy as np

from ..errors import DataError
from . import variants
from .raw import RawData, Source

TEST_FRACTION = 0.25  # the share held out for testing unless a run says otherwise (`DataConfig.test_fraction`)


def split(raw: RawData, source: Source, opts: dict):
    """(X_train, y_train, X_test, y_test): the source's own test set, or a seeded split by `test_fraction` (stratified
    for classification)."""
    if raw.X_test is not None:
        if opts["test_fraction"] != TEST_FRACTION and not raw.uses_test_fraction:
            raise DataError(
                f"{source.name!r} has a fixed test set, so test_fraction does not apply; use test_subset to "
                "shrink the test set (or num_test where the source has it)."
            )
        return raw.X_train, raw.y_train, raw.X_test, raw.y_test
    refuse_too_few(len(raw.y_train), opts["test_fraction"], source, raw.kind or source.kind)
    generator = variants.rng(opts["seed"], "split")
    stratify = (raw.task or source.task) == "classification"
    train, test = variants.split(raw.y_train, opts["test_fraction"], generator, stratify)
    return raw.X_train[train], raw.y_train[train], raw.X_train[test], raw.y_train[test]


def refuse_too_few(n: int, test_fraction: float, source: Source, kind: str) -> None:
    """A `DataError` when a train/test split of n points leaves fewer than MIN_TRAIN to train on or MIN_TEST to
    test on, naming the data (its file), its size and the minimum."""
    unit = {"tabular": "row", "image": "image"}.get(kind, "point")
    least = variants.MIN_TRAIN + variants.MIN_TEST
    if n < least:
        raise DataError(
            f"{source.description} has {n} {unit}{'s' if n != 1 else ''} of data; a train/test split needs at "
            f"least {least} ({variants.MIN_TRAIN} to train on and {variants.MIN_TEST} to test) — add {unit}s."
        )
    n_train = variants.split_sizes(n, test_fraction)[0]
    if n_train < variants.MIN_TRAIN:
        raise DataError(
            f"test_fraction={test_fraction:g} leaves {n_train} of the {n} {unit}s of {source.description} to train "
            f"on; a model needs at least {variants.MIN_TRAIN} — lower test_fraction, or add {unit}s."
        )


def relabel(raw: RawData, opts: dict, y_train, y_test, source: Source):
    """Apply classes and odd_even: (train mask, test mask, y_train, y_test, class names)."""
    names_ = list(raw.class_names)
    values = list(raw.label_values) if raw.label_values is not None else list(range(len(names_)))
    keep_train, keep_test = np.ones(len(y_train), bool), np.ones(len(y_test), bool)
    if opts["classes"]:
        classes = opts["classes"]
        keep_train, y_train = variants.select_classes(y_train, values, classes, source.name)
        keep_test, y_test = variants.select_classes(y_test, values, classes, source.name)
        names_ = [names_[values.index(c)] for c in classes]
        values = classes
    if opts["odd_even"]:
        parities = {v % 2 for v in values}
        if len(parities) < 2:
            raise DataError(
                f"odd_even with classes={opts['classes']} leaves only {'odd' if 1 in parities else 'even'} digits; "
                "keep at least one even and one odd digit."
            )
        y_train = variants.odd_even(np.asarray(values)[y_train])
        y_test = variants.odd_even(np.asarray(values)[y_test])
        names_ = ["even", "odd"]
    return keep_train, keep_test, y_train, y_test, names_


def subset(X, y, n: int, key: str, opts: dict, stratify: bool, name: str):
    """`n` of the points (seeded, stratified by class when `stratify`); all of them for n = 0."""
    if n == 0:
        return X, y
    if n > len(y):
        raise DataError(
            f"{key}={n} but {name!r} has only {len(y):,} points there; use {key} ≤ {len(y)} (0 keeps all)."
        )
    chosen = variants.choose(y, n, variants.rng(opts["seed"], key), stratify)
    return X[chosen], y[chosen]


def describe(source: Source, opts: dict, X_train, X_test) -> str:
    """The loaded data set in one line: the source, its sizes and the variants applied."""
    notes = [source.description, f"{len(X_train):,} train / {len(X_test):,} test"]
    if opts["classes"]:
        notes.append(f"classes {opts['classes']}")
    if opts["odd_even"]:
        notes.append("odd vs even")
    if opts["rotate"] > 0:
        notes.append(f"rotated by U[−{opts['rotate']:g}°, {opts['rotate']:g}°]")
    return "; ".join(notes)


def rotated(X_train: np.ndarray, X_test: np.ndarray, opts: dict, metadata: dict) -> tuple[np.ndarray, np.ndarray]:
    """Both splits' images each turned by its own angle from U[-rotate, rotate] degrees (seeded by the data's seed);
    the angles ([N] degrees) are written into `metadata` as angles_train and angles_test."""
    generator = variants.rng(opts["seed"], "rotate")
    for part, X in (("train", X_train), ("test", X_test)):
        metadata[f"angles_{part}"] = variants.draw_angles(len(X), opts["rotate"], generator)  # [N] degrees
    return (variants.rotate_images(X_train, metadata["angles_train"]),
            variants.rotate_images(X_test, metadata["angles_test"]))
