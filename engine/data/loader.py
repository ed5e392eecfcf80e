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
from pathlib import Path

import numpy as np
import param

from ..errors import DataError
from . import mnist, variants
from .dataset import Dataset
from .sources import SOURCES, RawData, Source, canonical, looks_like_path, names, resolve, spec_of, split_prefix

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
        0.25, bounds=(0, 1), inclusive_bounds=(False, False),
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


# --- fetching -------------------------------------------------------------------------------------


def list_datasets() -> list[str]:
    """The registered dataset names; the user's own files ('csv:PATH' ...) are accepted too but not listed (see
    `invlab.data.loadable` for those under a folder)."""
    return names()


def fetch(name: str, data_dir=None, progress: bool = True, force: bool = False) -> Path:
    """Download a dataset into the data directory once; only 'mnist' needs it. Returns the cache path."""
    key = canonical(name) if isinstance(name, str) else name
    if key == "mnist":
        return mnist.fetch_mnist(data_dir, progress=progress, force=force)
    if isinstance(key, str) and (key in SOURCES or split_prefix(key) is not None or looks_like_path(key)):
        raise DataError(f"{name!r} needs no fetch: it is bundled, generated or local; only 'mnist' is fetched.")
    raise DataError(f"unknown dataset {name!r}; only 'mnist' can be fetched (datasets: {', '.join(names())}).")


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


def _check_options(source: Source, options: dict) -> tuple[dict, dict]:
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


def _check_applicable(source: Source, opts: dict, kind: str | None = None, task: str | None = None):
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


# --- the steps ------------------------------------------------------------------------------------


def _split(raw: RawData, source: Source, opts: dict):
    fraction_default = DataConfig.param.test_fraction.default
    if raw.X_test is not None:
        if opts["test_fraction"] != fraction_default and not raw.uses_test_fraction:
            raise DataError(
                f"{source.name!r} has a fixed test set, so test_fraction does not apply; use test_subset to "
                "shrink the test set (or num_test where the source has it)."
            )
        return raw.X_train, raw.y_train, raw.X_test, raw.y_test
    _refuse_too_few(len(raw.y_train), opts["test_fraction"], source, raw.kind or source.kind)
    generator = variants.rng(opts["seed"], "split")
    stratify = (raw.task or source.task) == "classification"
    train, test = variants.split(raw.y_train, opts["test_fraction"], generator, stratify)
    return raw.X_train[train], raw.y_train[train], raw.X_train[test], raw.y_train[test]


def _refuse_too_few(n: int, test_fraction: float, source: Source, kind: str) -> None:
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


def _relabel(raw: RawData, opts: dict, y_train, y_test, source: Source):
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


def _subset(X, y, n: int, key: str, opts: dict, stratify: bool, name: str):
    if n == 0:
        return X, y
    if n > len(y):
        raise DataError(
            f"{key}={n} but {name!r} has only {len(y):,} points there; use {key} ≤ {len(y)} (0 keeps all)."
        )
    chosen = variants.choose(y, n, variants.rng(opts["seed"], key), stratify)
    return X[chosen], y[chosen]


def _describe(source: Source, opts: dict, X_train, X_test) -> str:
    notes = [source.description, f"{len(X_train):,} train / {len(X_test):,} test"]
    if opts["classes"]:
        notes.append(f"classes {opts['classes']}")
    if opts["odd_even"]:
        notes.append("odd vs even")
    if opts["rotate"] > 0:
        notes.append(f"rotated by U[−{opts['rotate']:g}°, {opts['rotate']:g}°]")
    return "; ".join(notes)


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


def _rotated(X_train: np.ndarray, X_test: np.ndarray, opts: dict, metadata: dict) -> tuple[np.ndarray, np.ndarray]:
    """Both splits' images each turned by its own angle from U[-rotate, rotate] degrees (seeded by the data's seed);
    the angles ([N] degrees) are written into `metadata` as angles_train and angles_test."""
    generator = variants.rng(opts["seed"], "rotate")
    for part, X in (("train", X_train), ("test", X_test)):
        metadata[f"angles_{part}"] = variants.draw_angles(len(X), opts["rotate"], generator)  # [N] degrees
    return (variants.rotate_images(X_train, metadata["angles_train"]),
            variants.rotate_images(X_test, metadata["angles_test"]))


def load(name, **options) -> Dataset:
    """Load a dataset with variant and source options; see `DataConfig` for the shared options.

    `name`: a registered name, your own file or folder ('csv:PATH', 'npz:PATH', 'parquet:PATH', 'images:DIR',
    'idx:DIR', or a bare path whose extension or layout says which), an `(X, y)` tuple (with `X_test=`, `y_test=`
    if you have a test set; X may be images [N, H, W] or [N, C, H, W]) or a pandas DataFrame (with `target=`).
    Raises `DataError` for an unknown name, an unknown option, a value out of range, an option that does
    not apply to this dataset, or missing / corrupt data.
    """
    source, spec, options = _source_of(name, options)
    opts, own = _check_options(source, options)
    if source.task != "auto":
        _check_applicable(source, opts)
    raw = source.make(own, opts["seed"], opts["test_fraction"])
    kind, task = raw.kind or source.kind, raw.task or source.task
    _check_applicable(source, opts, kind, task)
    classification = task == "classification"
    copied = raw.X_test is None  # the split makes new arrays, which later steps may change in place
    X_train, y_train, X_test, y_test = _split(raw, source, opts)
    class_names = None
    if classification:
        keep_train, keep_test, y_train, y_test, class_names = _relabel(raw, opts, y_train, y_test, source)
        X_train, X_test = X_train[keep_train], X_test[keep_test]
    X_train, y_train = _subset(X_train, y_train, opts["subset"], "subset", opts, classification, source.name)
    X_test, y_test = _subset(X_test, y_test, opts["test_subset"], "test_subset", opts, classification, source.name)
    raw.X_train = raw.X_test = None  # the split made copies: let a large file's arrays go before scaling

    metadata = dict(raw.metadata)
    if opts["rotate"] > 0:
        X_train, X_test = _rotated(X_train, X_test, opts, metadata)
    x_mean = x_std = None
    if kind == "tabular":
        X_train, X_test, x_mean, x_std = variants.standardise(X_train, X_test, in_place=copied)
        metadata["x_mean"], metadata["x_std"] = x_mean, x_std
    y_mean = y_std = None
    if not classification:
        y_train, y_test, y_mean, y_std = variants.standardise(y_train.astype(np.float64), y_test.astype(np.float64))
        y_mean, y_std = float(y_mean), float(y_std)

    return Dataset(
        name=source.name,
        X_train=X_train,
        y_train=y_train,
        X_test=X_test,
        y_test=y_test,
        task=task,
        num_classes=len(class_names) if classification else None,
        class_names=class_names,
        image_shape=X_train.shape[1:] if kind == "image" else None,
        y_mean=y_mean,
        y_std=y_std,
        options={**opts, **own},
        description=_describe(source, opts, X_train, X_test),
        metadata=metadata,
        x_mean=x_mean,
        x_std=x_std,
        standardise=False,
        source=spec,
        notes=list(raw.notes),
    )
