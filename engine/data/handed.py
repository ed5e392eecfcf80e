"""Data handed over from Python by name: `hand_over(data)` keeps `(X, y)` arrays, a pandas DataFrame or a built
`Dataset` in this process and returns the dataset string 'python:NAME' that reads it.

That string goes wherever a dataset name goes — `DataConfig.dataset`, `RunConfig.data`, the page's data box, a
sweep — and every option (subset, test_fraction, classes, target, task ...) applies through the same `load` steps
as for a file. What is handed over lives in this process only: a run trained on it records the name and the data's
identity, and continuing it in another process needs the data handed over again (the message says so).
`Explorer(data=...)` and `Explorer(dataset=...)` use this.
"""
from __future__ import annotations

import re
import threading

import numpy as np

from ..errors import DataError
from .dataset import Dataset
from .sources import RawData, Source, register_reader, with_notes

PREFIX = "python"
_HANDED: dict[str, object] = {}
_LOCK = threading.Lock()


def hand_over(data, name: str | None = None) -> str:
    """Keep `data` — `(X, y)` (X [N, D] or images [N, H, W] / [N, C, H, W]), a pandas DataFrame, or a `Dataset` —
    under `name` (default: 'dataframe', 'arrays' or the Dataset's name, numbered if taken) and return
    'python:NAME', the dataset string that loads it. Handing over the same object again returns the same name."""
    from .objects import is_dataframe

    if not (isinstance(data, Dataset) or is_dataframe(data) or (isinstance(data, tuple) and len(data) == 2)):
        raise DataError(f"hand over (X, y) arrays, a pandas DataFrame or a Dataset; not the {type(data).__name__} "
                        f"{data!r:.40}.")
    base = name or (data.name if isinstance(data, Dataset) else "dataframe" if is_dataframe(data) else "arrays")
    base = re.sub(r"[^\w.-]+", "-", str(base)).strip("-") or "data"
    with _LOCK:
        for key, held in _HANDED.items():
            if held is data and (name is None or key == base):
                return f"{PREFIX}:{key}"
        key, n = base, 1
        while key in _HANDED and _HANDED[key] is not data:
            n += 1
            key = f"{base}-{n}"
        _HANDED[key] = data
    return f"{PREFIX}:{key}"


def handed_names() -> list[str]:
    """The dataset strings of everything handed over in this process, in the order it was handed over."""
    with _LOCK:
        return [f"{PREFIX}:{key}" for key in _HANDED]


def _dataset_raw(ds: Dataset) -> RawData:
    """A built Dataset back in its own units, with its own train/test split, for the loader's steps."""
    X_train, X_test = ds.X_train, ds.X_test
    if ds.x_mean is not None:
        X_train, X_test = X_train * ds.x_std + ds.x_mean, X_test * ds.x_std + ds.x_mean
    y_train, y_test = ds.y_train, ds.y_test
    if ds.task == "regression":
        y_train, y_test = ds.unscale_targets(y_train), ds.unscale_targets(y_test)
    names = ds.class_names or ([str(k) for k in range(ds.num_classes)] if ds.num_classes else None)
    return RawData(np.array(X_train), np.array(y_train), np.array(X_test), np.array(y_test), class_names=names,
                   task=ds.task, kind="image" if ds.is_image else "tabular" if ds.x_mean is not None else "points")


@register_reader(PREFIX, "data handed over from Python in this process (Explorer(data=...), hand_over)", builtin=True)
def _handed(path: str) -> Source:
    """The data handed over under the name `path` (what follows 'python:')."""
    name = path
    with _LOCK:
        data = _HANDED.get(name)
    if data is None:
        known = ", ".join(handed_names()) or "none"
        raise DataError(f"no data named {name!r} was handed over in this process (handed over: {known}); data from "
                        "Python lives in the process that received it — pass it again, e.g. Explorer(data=(X, y)), "
                        "or save it as a file and use 'csv:PATH' / 'npz:PATH'.")
    if isinstance(data, Dataset):
        kind = "image" if data.is_image else "tabular" if data.x_mean is not None else "points"
        return Source(f"{PREFIX}:{name}", f"the dataset {data.name!r} handed over from Python", kind, data.task,
                      with_notes(lambda options, notes: _dataset_raw(data)))
    from .objects import source_of

    source, _ = source_of(data, {})
    return Source(f"{PREFIX}:{name}", source.description, source.kind, source.task, source.make, source.options)
