"""Diagnostics views (`invlab.diagnostics`) as compact bytes and back, for the run store.

A view becomes JSON holding only numbers, text, lists, and arrays of numbers (dtype, shape and the raw bytes in
base64, so float64 values come back bit for bit), compressed with zlib. Reading it back builds only the engine's own
view types, by name, through their constructors (which check shapes); any other type name, field or array kind is
refused with a `ViewCodecError`. Nothing stored is ever imported, called or unpickled, and the reader caps how large a
stored view may grow when decompressed.
"""
from __future__ import annotations

import base64
import dataclasses
import json
import zlib

import numpy as np

from . import diagnostics as dg
from .errors import ConfigError, InvlabError
from .registry import table

__all__ = ["ViewCodecError", "encode_view", "decode_view", "register_view_type", "VIEW_TYPES", "MAX_VIEW_BYTES"]

# The view types a run stores, by class name: the engine's own and those a plugin registers (a registration table,
# so a plugin that fails half-way leaves none behind).
VIEW_TYPES: dict[str, type] = table({})
MAX_VIEW_BYTES = 64 * 2 ** 20  # a stored view larger than this once decompressed is refused, not read
NUMBER_KINDS = "biuf"  # numpy dtype kinds an array in a view may have: bool, signed, unsigned, float


def register_view_type(cls: type) -> type:
    """Register `cls`, a dataclass subclass of `invlab.diagnostics.View` holding numbers, text and arrays of numbers,
    as a view type a run stores and reads back by its class name (the dashboard draws it once a renderer is
    registered for it: `invlab.dashboard.views.register_renderer`). Usable as a class decorator; a second type under
    a name already registered is refused."""
    if not (isinstance(cls, type) and issubclass(cls, dg.View) and dataclasses.is_dataclass(cls)):
        raise ConfigError(f"a view type must be a dataclass subclass of invlab.diagnostics.View, got {cls!r}")
    taken = VIEW_TYPES.get(cls.__name__)
    if taken is not None and taken is not cls:
        raise ConfigError(f"view type name {cls.__name__!r} is taken by {taken.__module__}.{taken.__qualname__}; "
                          "give the class another name")
    VIEW_TYPES[cls.__name__] = cls
    return cls


for _cls in (dg.Curves, dg.ImageGrid, dg.Spectrum, dg.Heatmap, dg.Field2D, dg.Scatter, dg.Scalars):
    register_view_type(_cls)


class ViewCodecError(InvlabError):
    """A view that cannot be stored (it holds something other than numbers and text), or a stored one that cannot be
    read back as one of the engine's view types."""


def _stored_type(view) -> type:
    """The engine view type `view` is stored as: its own class, or the nearest engine view type it derives from."""
    for cls in type(view).__mro__:
        if VIEW_TYPES.get(cls.__name__) is cls:
            return cls
    raise ViewCodecError(f"a {type(view).__name__} is not one of the view types {', '.join(VIEW_TYPES)}")


def _encode(value):
    """`value` as JSON-able data; arrays, tuples and dicts tagged (a JSON object is always one of those tags)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, np.generic):
        return _encode(value.item())
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in NUMBER_KINDS:
            raise ViewCodecError(f"an array of dtype {value.dtype} (only arrays of numbers are stored)")
        data = np.ascontiguousarray(value)
        return {"array": {"dtype": data.dtype.str, "shape": list(data.shape),
                          "data": base64.b64encode(data.tobytes()).decode("ascii")}}
    if isinstance(value, tuple):
        return {"tuple": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {"dict": [[_encode(k), _encode(v)] for k, v in value.items()]}
    raise ViewCodecError(f"a {type(value).__name__} (only numbers, text and arrays of numbers are stored)")


def _decode(value):
    """The inverse of `_encode`; anything else is refused."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict) and len(value) == 1:
        (tag, body), = value.items()
        if tag == "tuple" and isinstance(body, list):
            return tuple(_decode(v) for v in body)
        if tag == "dict" and isinstance(body, list) and all(isinstance(p, list) and len(p) == 2 for p in body):
            return {_decode(k): _decode(v) for k, v in body}
        if tag == "array" and isinstance(body, dict):
            return _decode_array(body)
    raise ViewCodecError(f"unexpected stored data {str(value)[:60]!r}")


def _decode_array(body: dict) -> np.ndarray:
    try:
        dtype = np.dtype(str(body["dtype"]))
        shape = tuple(int(n) for n in body["shape"])
        raw = base64.b64decode(body["data"], validate=True)
    except (KeyError, TypeError, ValueError) as err:
        raise ViewCodecError(f"a stored array that cannot be read ({err})") from None
    if dtype.kind not in NUMBER_KINDS:
        raise ViewCodecError(f"a stored array of dtype {dtype} (only arrays of numbers are read)")
    if any(n < 0 for n in shape) or int(np.prod(shape, dtype=np.int64)) * dtype.itemsize != len(raw):
        raise ViewCodecError(f"a stored array whose {len(raw)} bytes do not fill its shape {shape}")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def encode_view(view) -> tuple[str, bytes]:
    """(type name, compressed JSON) of `view`, one of the engine's views (or a subclass, stored as its engine type).
    Raises `ViewCodecError` naming what it holds that cannot be stored."""
    cls = _stored_type(view)
    fields = {f.name: _encode(getattr(view, f.name)) for f in dataclasses.fields(cls) if f.init}
    text = json.dumps({"type": cls.__name__, "fields": fields}, separators=(",", ":"), allow_nan=True)
    return cls.__name__, zlib.compress(text.encode("utf-8"), 6)


def decode_view(payload: bytes):
    """The view stored as `payload` by `encode_view`. Raises `ViewCodecError` for anything that is not exactly one of
    the engine's view types with its own fields."""
    try:
        inflater = zlib.decompressobj()
        text = inflater.decompress(bytes(payload), MAX_VIEW_BYTES)
        if inflater.unconsumed_tail:
            raise ViewCodecError(f"a stored view larger than {MAX_VIEW_BYTES // 2 ** 20} MiB")
        stored = json.loads(text)
    except (zlib.error, ValueError, TypeError) as err:
        raise ViewCodecError(f"a stored view that cannot be read ({err})") from None
    if not isinstance(stored, dict) or not isinstance(stored.get("fields"), dict):
        raise ViewCodecError("a stored view without its type and fields")
    cls = VIEW_TYPES.get(stored.get("type")) if isinstance(stored.get("type"), str) else None
    if cls is None:
        raise ViewCodecError(f"the stored type {str(stored.get('type'))[:40]!r} is not one of the view types "
                             f"{', '.join(VIEW_TYPES)}")
    allowed = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = set(stored["fields"]) - allowed
    if unknown:
        raise ViewCodecError(f"a stored {cls.__name__} with fields it does not have: {sorted(unknown)[:3]}")
    try:
        return cls(**{name: _decode(value) for name, value in stored["fields"].items()})
    except ViewCodecError:
        raise
    except (TypeError, ValueError) as err:
        raise ViewCodecError(f"a stored {cls.__name__} that does not hold together ({err})") from None
