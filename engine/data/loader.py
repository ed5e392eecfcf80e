"""`load(name, **options)`: a source's raw arrays, turned into a `Dataset` by the shared variant steps; and
`DataConfig`, the dataset and its variant options as `param` parameters.

The dashboard builds its data controls from `DataConfig`'s parameters, the CLI its flags, and a run stores them
as JSON; `load` checks its options first, against the bounds declared on those same parameters (`DataConfig` for
the shared ones, the source's own options class for the rest), so a bad value fails before any work is done and
is refused with the same range in the message wherever it was given.

The steps run in a fixed order — split (when the source has no test set), class selection, odd/even
labels, subsets, rotation, standardisation — each with its own seeded generator.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import param

from ..errors import DataError
from . import variants
from .dataset import Dataset
from .fetching import fetch, fetchable, list_datasets  # noqa: F401  (invlab.data's face, and their home before)
from .raw import RawData
from .sources import SOURCES, Source, looks_like_path, names, resolve, spec_of, split_prefix
from .steps import TEST_FRACTION, describe, relabel, rotated, split, subset

# --- the options as parameters ---------------------------------------------------------------------


OWN_DATA = "'csv:PATH', 'npz:PATH', 'parquet:PATH', 'images:DIR', 'idx:DIR' or a path to such a file"


class DatasetName(param.String):
    """A string naming a registered dataset or the user's own file or folder ('csv:PATH', 'images:DIR', a path)."""

    def _validate(self, val):
        super()._validate(val)
        if val is None:
            return
        try:
            resolve(val)
        except DataError as err:
            if isinstance(val, str) and (split_prefix(val) is not None or looks_like_path(val)):
                raise DataError(f"parameter 'dataset': {err}") from None
            raise DataError(
                f"parameter 'dataset' got {val!r}, which is not a known dataset; valid names: "
                f"{', '.join(names())}, or your own data as {OWN_DATA}."
            ) from None


class DataConfig(param.Parameterized):
    """Which data to load and which variant of it; `load()` returns the `Dataset`."""

    dataset = DatasetName(
        "digits",
        doc=f"Dataset name: one of {', '.join(names())}, or your own data as {OWN_DATA}.",
    )
    rotate = param.Number(
        0.0, bounds=(0, 180),
        doc="Rotate every image by its own angle drawn uniformly in [−rotate, rotate] degrees (seeded); images only.",
    )
    odd_even = param.Boolean(False, doc="Relabel digits as 0 = even, 1 = odd (digit datasets only).")
    classes = param.List(
        [], item_type=int,
        doc="Keep only these classes, relabelled 0..K−1 in the given order, e.g. [4, 9]; empty keeps all. "
        "For digit datasets a class is its digit, otherwise its index.",
    )
    subset = param.Integer(0, bounds=(0, None), doc="Training points kept (stratified by class, seeded); 0 keeps all.")
    test_subset = param.Integer(0, bounds=(0, None), doc="Test points kept (stratified by class, seeded); 0 keeps all.")
    test_fraction = param.Number(
        TEST_FRACTION, bounds=(0, 1), inclusive_bounds=(False, False),
        doc="Share held out for testing, for sources without a fixed test split.",
    )
    seed = param.Integer(
        0, bounds=(0, None), doc="Seed of every random choice: split, subsets, rotations, synthetic data."
    )
    source_options = param.Dict(
        {}, doc="Options of the chosen source, e.g. {'num_train': 500} for rectangles or {'patch_size': 8}.",
    )

    def values(self) -> dict:
        """The variant options as keyword arguments for `load` (without dataset and source_options)."""
        return {key: getattr(self, key) for key in VARIANT_OPTIONS}

    def load(self) -> Dataset:
        """Load the data set these options describe (`invlab.data.load` with the dataset name, variant and source
        options)."""
        return load(self.dataset, **self.values(), **self.source_options)


VARIANT_OPTIONS = ("rotate", "odd_even", "classes", "subset", "test_subset", "test_fraction", "seed")


# --- checking the options ------------------------------------------------------------------------


def _allowed(key: str, p: param.Parameter) -> str:
    """The allowed values of a parameter, in words, e.g. '0 ≤ rotate ≤ 180'."""
    if isinstance(p, param.Boolean):
        return "True or False"
    if isinstance(p, param.List):
        return "a list of integers, e.g. [0, 1]"
    if isinstance(p, param.Number):
        kind = "an integer" if isinstance(p, param.Integer) else "a finite number"
        lo, hi = p.bounds or (None, None)
        lo_op, hi_op = ("≤" if inclusive else "<" for inclusive in p.inclusive_bounds)
        if lo is not None and hi is not None:
            text = f"{lo} {lo_op} {key} {hi_op} {hi}"
        elif lo is not None:
            text = f"{key} {'≥' if lo_op == '≤' else '>'} {lo}"
        elif hi is not None:
            text = f"{key} {hi_op} {hi}"
        else:
            text = "any value"
        return f"{kind}, {text}"
    return f"a {type(p).__name__.lower()}"


def _set(target: param.Parameterized, key: str, value, dataset: str):
    if key == "classes" and isinstance(value, (tuple, np.ndarray)):
        value = list(value)
    if key == "classes" and isinstance(value, list):
        value = [int(v) if isinstance(v, np.integer) else v for v in value]
    p = target.param[key]
    note = ""
    if isinstance(p, param.Number) and isinstance(value, (bool, np.bool_)):
        note = "; True/False is not a count or a number here"  # bool is an int in Python: subset=True is no count
    elif isinstance(p, param.Number) and isinstance(value, float) and not math.isfinite(value):
        note = "; NaN and ±inf are not"  # +inf passes an open upper bound, NaN passes every comparison
    try:
        if note:
            raise ValueError(note)
        setattr(target, key, value)
    except (ValueError, TypeError):
        raise DataError(
            f"option {key}={value!r} is not valid for dataset {dataset!r}: it must be {_allowed(key, p)}{note} "
            f"({p.doc})"
        ) from None


def check_options(source: Source, options: dict) -> tuple[dict, dict]:
    """(shared variant options, source-specific options), each with defaults filled in and validated."""
    own = source.options() if source.options is not None else None
    own_names = [k for k in own.param if k != "name"] if own is not None else []
    unknown = [k for k in options if k not in VARIANT_OPTIONS and k not in own_names]
    if unknown:
        raise DataError(
            f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} for dataset "
            f"{source.name!r}; it takes {', '.join(VARIANT_OPTIONS + tuple(own_names))}."
        )
    config = DataConfig()
    for key in VARIANT_OPTIONS:
        if key in options:
            _set(config, key, options[key], source.name)
    for key in own_names:
        if key in options:
            _set(own, key, options[key], source.name)
    return config.values(), {k: getattr(own, k) for k in own_names}


def check_applicable(source: Source, opts: dict, kind: str | None = None, task: str | None = None):
    """A `DataError` when a variant option does not apply to the data: rotate on non-images, odd_even on labels
    that are not digits, classes on regression."""
    kind, task = kind or source.kind, task or source.task
    if opts["rotate"] > 0 and kind != "image":
        raise DataError(
            f"rotate={opts['rotate']} applies to images only; {source.name!r} is {kind} data — use rotate=0."
        )
    if opts["odd_even"] and not source.digit_labels:
        raise DataError(
            f"odd_even applies to digit datasets (digits, mnist, idx:...); {source.name!r} has other labels — "
            "use odd_even=False."
        )
    if opts["classes"] and task == "regression":
        raise DataError(
            f"classes applies to classification; {source.name!r} is a regression dataset — use classes=[]."
        )


# --- loading ------------------------------------------------------------------------------------


def _source_of(name, options: dict) -> tuple:
    """(the source `name` names, what the run's configuration records as its data set, the options left): a
    registered name is recorded by that name, a file by its spec, an object (arrays, a DataFrame) as ''."""
    if not isinstance(name, str):
        from .objects import source_of

        source, options = source_of(name, options)
        return source, "", options
    spec = spec_of(name)
    source = resolve(spec)
    return source, (source.name if source.name in SOURCES else spec), options


@dataclass
class _Arrays:
    """The four arrays of a data set between the steps, with the class names kept (None: regression)."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    class_names: list[str] | None = None


def _selected(raw: RawData, source: Source, opts: dict, classification: bool) -> _Arrays:
    """The split, the classes kept (and odd/even labels) and the subsets, in that order."""
    X_train, y_train, X_test, y_test = split(raw, source, opts)
    class_names = None
    if classification:
        keep_train, keep_test, y_train, y_test, class_names = relabel(raw, opts, y_train, y_test, source)
        X_train, X_test = X_train[keep_train], X_test[keep_test]
    X_train, y_train = subset(X_train, y_train, opts["subset"], "subset", opts, classification, source.name)
    X_test, y_test = subset(X_test, y_test, opts["test_subset"], "test_subset", opts, classification, source.name)
    return _Arrays(X_train, y_train, X_test, y_test, class_names)


def _scaled(arrays: _Arrays, kind: str, classification: bool, copied: bool, metadata: dict) -> dict:
    """Inputs of tabular data and regression targets standardised in place of `arrays`; their scalers, as the
    `Dataset`'s keyword arguments (the inputs' also written into `metadata`)."""
    scalers: dict = {"x_mean": None, "x_std": None, "y_mean": None, "y_std": None}
    if kind == "tabular":
        arrays.X_train, arrays.X_test, x_mean, x_std = variants.standardise(arrays.X_train, arrays.X_test,
                                                                            in_place=copied)
        scalers.update(x_mean=x_mean, x_std=x_std)
        metadata.update(x_mean=x_mean, x_std=x_std)
    if not classification:
        arrays.y_train, arrays.y_test, y_mean, y_std = variants.standardise(arrays.y_train.astype(np.float64),
                                                                            arrays.y_test.astype(np.float64))
        scalers["y_mean"], scalers["y_std"] = float(y_mean), float(y_std)
    return scalers


def _made(source: Source, options: dict) -> tuple[RawData, dict, dict, str, str]:
    """(the source's raw data, shared options, own options, kind, task), every option checked before and after
    the source makes its arrays (a file's kind and task are only known once it is read)."""
    opts, own = check_options(source, options)
    if source.task != "auto":
        check_applicable(source, opts)
    raw = source.make(own, opts["seed"], opts["test_fraction"])
    kind, task = raw.kind or source.kind, raw.task or source.task
    check_applicable(source, opts, kind, task)
    return raw, opts, own, kind, task


def load(name, **options) -> Dataset:
    """Load a dataset with variant and source options; see `DataConfig` for the shared options.

    `name`: a registered name, your own file or folder ('csv:PATH', 'npz:PATH', 'parquet:PATH', 'images:DIR',
    'idx:DIR', or a bare path whose extension or layout says which), an `(X, y)` tuple (with `X_test=`, `y_test=`
    if you have a test set; X may be images [N, H, W] or [N, C, H, W]) or a pandas DataFrame (with `target=`).
    Raises `DataError` for an unknown name, an unknown option, a value out of range, an option that does
    not apply to this dataset, or missing / corrupt data.
    """
    source, spec, options = _source_of(name, options)
    raw, opts, own, kind, task = _made(source, options)
    classification = task == "classification"
    copied = raw.X_test is None  # the split makes new arrays, which later steps may change in place
    arrays = _selected(raw, source, opts, classification)
    raw.X_train = raw.X_test = None  # the split made copies: let a large file's arrays go before scaling
    metadata = dict(raw.metadata)
    if opts["rotate"] > 0:
        arrays.X_train, arrays.X_test = rotated(arrays.X_train, arrays.X_test, opts, metadata)
    scalers = _scaled(arrays, kind, classification, copied, metadata)
    names_ = arrays.class_names
    return Dataset(
        name=source.name, X_train=arrays.X_train, y_train=arrays.y_train, X_test=arrays.X_test, y_test=arrays.y_test,
        task=task, num_classes=len(names_) if classification else None, class_names=names_,
        image_shape=arrays.X_train.shape[1:] if kind == "image" else None, options={**opts, **own},
        description=describe(source, opts, arrays.X_train, arrays.X_test), metadata=metadata, standardise=False,
        source=spec, notes=list(raw.notes), **scalers,
    )
