"""Data handed over from Python: `load((X, y))`, `load((X, y), X_test=..., y_test=...)`, `load(df, target=...)`
for a pandas DataFrame, and image arrays `[N, H, W]` / `[N, C, H, W]`; also the arrays of an `.npz` file.

Each becomes a `Source` whose maker returns `RawData`, so it goes through the same `loader.load` steps as a named
dataset. Its identity's source is '' (it cannot be loaded again by name); the content hash still tells it apart.
"""
from __future__ import annotations

import numpy as np
import param

from ..errors import DataError
from .dataset import as_numbers, refuse_non_finite
from .raw import RawData, Source, with_notes
from .tables import PandasTable, TableOptions, _infer_task, labels_to_classes, to_raw


class ArrayOptions(param.Parameterized):
    """Options of arrays handed over from Python."""

    task = param.Selector(default="auto", objects=["auto", "regression", "classification"],
                          doc=TableOptions.param.task.doc)


def _inputs(X, where: str, part: str) -> tuple[np.ndarray, str]:
    """(X as float64, 'image' or 'tabular'): [N, D] is tabular, [N, H, W] and [N, C, H, W] are images."""
    stored = getattr(np.asarray(X), "dtype", None)
    X = as_numbers(X, f"{where}: {part}")
    refuse_non_finite(X, f"{where}: {part}")  # here, by index into the arrays given: scaling would spread them
    if X.ndim == 2:
        return X, "tabular"
    if X.ndim in (3, 4):
        X = X[:, None] if X.ndim == 3 else X
        if stored == np.uint8:
            X = X / 255.0
        return X, "image"
    raise DataError(f"{where}: {part} has shape {X.shape}; give [N, D] features, or images [N, H, W] or "
                    "[N, C, H, W].")


def _labels(y, n: int, where: str, part: str) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1 or len(y) != n:
        raise DataError(f"{where}: {part} has shape {y.shape}; expected [{n}], one target per row of the inputs.")
    if y.dtype.kind not in "biufUSO":
        raise DataError(f"{where}: {part} holds {y.dtype} values; give numbers or text labels.")
    if y.dtype.kind == "f":
        refuse_non_finite(y, f"{where}: {part}")
    return y


def arrays_to_raw(X, y, X_test, y_test, options: dict, notes: list, where: str = "the arrays"):
    """RawData from arrays (and optional test arrays); string labels become classes with their names."""

    X, kind = _inputs(X, where, "X")
    y = _labels(y, len(X), where, "y")
    if len(X) == 0:
        raise DataError(f"{where}: X has no rows; give at least one point per class.")
    if X_test is not None:
        X_test, kind_test = _inputs(X_test, where, "X_test")
        y_test = _labels(y_test, len(X_test), where, "y_test")
        if X_test.shape[1:] != X.shape[1:]:
            raise DataError(f"{where}: X_test's points are {X_test.shape[1:]} but X's are {X.shape[1:]}; both must "
                            "have the same shape.")
    task = options.get("task", "auto")
    if task == "auto":
        task = _infer_task(y, "y", where, notes)
    raw = RawData(X, y, task=task, kind=kind)
    if task == "regression":
        raw.y_train = as_numbers(y, f"{where}: y (regression needs numbers; or give task='classification')")
        if X_test is not None:
            raw.X_test, raw.y_test = X_test, as_numbers(y_test, f"{where}: y_test")
        return raw
    both = y if y_test is None else np.concatenate([y.astype(object), y_test.astype(object)]) \
        if y.dtype.kind != y_test.dtype.kind else np.concatenate([y, y_test])
    index, names, values = labels_to_classes(both, where, "y")
    raw.y_train, raw.class_names, raw.label_values = index[:len(y)], names, values
    if X_test is not None:
        raw.X_test, raw.y_test = X_test, index[len(y):]
    return raw


def from_arrays(X, y, X_test=None, y_test=None, name: str = "arrays"):
    """A `Source` for arrays handed over from Python."""

    if (X_test is None) != (y_test is None):
        raise DataError("give both X_test and y_test, or neither (then test_fraction holds out a test set).")

    def read(options, notes):
        return arrays_to_raw(X, y, X_test, y_test, options, notes, where=name)

    return Source(name, f"arrays handed over from Python ({len(X):,} points)", "tabular", "auto", with_notes(read),
                  ArrayOptions)


def from_dataframe(frame, name: str = "dataframe"):
    """A `Source` for a pandas DataFrame; `target=` names the column to predict (default: the last)."""

    def read(options, notes):
        return to_raw(PandasTable(frame.copy(deep=False), name), options, notes)

    return Source(name, f"a DataFrame of {frame.shape[0]:,} rows × {frame.shape[1]} columns", "tabular", "auto",
                  with_notes(read), TableOptions)


def is_dataframe(obj) -> bool:
    """Whether `obj` is a pandas DataFrame (without importing pandas when it is not loaded)."""
    return type(obj).__name__ == "DataFrame" and hasattr(obj, "columns") and hasattr(obj, "iloc")


def source_of(obj, options: dict):
    """(Source, remaining options) for a Python object handed to `load`; arrays' test parts come from the options."""
    options = dict(options)
    X_test, y_test = options.pop("X_test", None), options.pop("y_test", None)
    if is_dataframe(obj):
        if X_test is not None:
            raise DataError("X_test / y_test go with (X, y) arrays; for a DataFrame use test_fraction.")
        return from_dataframe(obj), options
    if isinstance(obj, tuple) and len(obj) == 2:
        return from_arrays(obj[0], obj[1], X_test, y_test), options
    if isinstance(obj, np.ndarray):
        raise DataError("an array alone has no targets; give (X, y), e.g. load((images, labels)).")
    raise DataError(f"load() takes a dataset name or path as a string ('digits', 'csv:PATH', 'images:DIR' ...), an "
                    f"(X, y) tuple or a pandas DataFrame with target=; not the {type(obj).__name__} {obj!r:.40}.")
