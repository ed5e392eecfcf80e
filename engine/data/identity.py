"""A dataset's identity: what a run and its checkpoints record of the data they were trained on.

`identity(dataset)` is a JSON-safe dict: the source (a registered name, 'csv:PATH' ..., or '' for a hand-built
dataset), its options, the shapes, a content hash of the four arrays as the model sees them, and for a file or
folder its path and modification time. `same_data` compares two identities by their content hash and
`describe` puts one in words for the message that refuses a resume onto other data.
"""
from __future__ import annotations

import hashlib
import json
import time

import numpy as np

from ..errors import DataError

PARTS = ("X_train", "y_train", "X_test", "y_test")


def content_hash(dataset) -> str:
    """A 32-hex-digit BLAKE2b hash of the dataset's arrays (dtype, shape and bytes of each part, in order)."""
    digest = hashlib.blake2b(digest_size=16)
    for part in PARTS:
        array = np.ascontiguousarray(getattr(dataset, part))
        digest.update(f"{part}:{array.dtype.str}:{array.shape};".encode())
        if array.size:  # an empty array has no bytes (and memoryview cannot cast it); its shape above tells it apart
            digest.update(memoryview(array).cast("B"))
    return digest.hexdigest()


def _json_safe(value):
    """Options as JSON can hold them (arrays and other objects by their repr)."""
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        if isinstance(value, dict):
            return {str(k): _json_safe(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [_json_safe(v) for v in value]
        return repr(value)


def identity(dataset) -> dict:
    """The dataset's identity (see the module's docstring); computed once and cached on the dataset."""
    cached = dataset.metadata.get("identity")
    if cached is not None:
        return cached
    out = {"source": dataset.source, "name": dataset.name, "options": _json_safe(dict(dataset.options)),
           "task": dataset.task, "shapes": {part: list(getattr(dataset, part).shape) for part in PARTS},
           "hash": content_hash(dataset)}
    file = dataset.metadata.get("file")
    if file:
        out.update(path=file["path"], mtime=file["mtime"])
    dataset.metadata["identity"] = out
    return out


def same_data(a: dict | None, b: dict | None) -> bool:
    """Whether two identities are the same arrays (an unknown identity, from a run stored before it was recorded,
    matches anything)."""
    if not a or not b:
        return True
    return a.get("hash") == b.get("hash")


def same_shapes(a: dict | None, b: dict | None) -> bool:
    """Whether a model trained on data `a` can take data `b`: the same task and the same shape of one input."""
    if not a or not b:
        return True
    return a.get("task") == b.get("task") and a["shapes"]["X_train"][1:] == b["shapes"]["X_train"][1:]


def describe(ident: dict) -> str:
    """An identity in words: 'csv:/data/a.csv (150 train / 50 test of (3,), hash 1a2b3c4d, modified 2026-…)'."""
    shapes = ident.get("shapes", {})
    train, test = shapes.get("X_train", ["?"]), shapes.get("X_test", ["?"])
    where = ident.get("source") or f"the hand-built dataset {ident.get('name', '?')!r}"
    text = f"{where} ({train[0]} train / {test[0]} test of {tuple(train[1:])}, hash {str(ident.get('hash'))[:8]}"
    if ident.get("mtime") is not None:
        text += ", modified " + time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ident["mtime"]))
    return text + ")"


def refuse_other_data(stored: dict, now: dict, what: str, new_run: str = "train a new run on this data") -> None:
    """A `DataError` when `now` is not the data `stored` describes, naming both and what to do (`new_run`: how)."""
    if same_data(stored, now):
        return
    raise DataError(f"{what} was trained on {describe(stored)}, but the data now is {describe(now)}; {new_run}, or "
                    "give the original data back (from Python, an explicit dataset= with the same shapes is accepted "
                    "and recorded).")
