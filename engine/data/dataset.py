"""`Dataset`: the numpy arrays every model trains and tests on, with what is needed to read them.

Shapes follow the project glossary: N data points, D input dimensions, images `[N, C, H, W]`.
Inputs are float64; class labels are int64 in 0..K-1; regression targets are float64, standardised
with the training mean and standard deviation (`y_mean`, `y_std` undo it, e.g. to report RMSE in the
original units). Tabular inputs are standardised per feature the same way (`x_mean`, `x_std`). The scalers
belong to the dataset: a hand-built one is standardised on construction unless its scalers are given or
`standardise=False`, and `scale_inputs` / `unscale_targets` convert between the data's own units and the
model's. The shapes are checked on construction, so a `Dataset` that exists is consistent.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import DataError, ShapeError

TASKS = ("classification", "regression")


def as_numbers(values, what: str) -> np.ndarray:
    """`values` as a float64 array, or a `DataError` naming `what` when they are not numbers (text, objects)."""
    try:
        array = np.asarray(values)
        if array.dtype.kind not in "biuf":
            raise TypeError(array.dtype)
        return array.astype(np.float64, copy=False)  # a float64 array is used as it is: no second copy of big data
    except (TypeError, ValueError):
        kind = getattr(getattr(values, "dtype", None), "name", type(values).__name__)
        raise DataError(f"{what} must hold numbers (integer or floating point), not {kind} values; "
                        "convert them first.") from None


def refuse_non_finite(values: np.ndarray, what: str) -> None:
    """A `DataError` saying how many values of `what` are NaN or infinite and where the first are."""
    bad = ~np.isfinite(values)
    count = int(bad.sum())
    if count:
        first = [tuple(int(i) for i in index) for index in np.argwhere(bad)[:3]]
        where = ", ".join(str(i[0] if len(i) == 1 else i) for i in first)
        more = ", …" if count > len(first) else ""
        raise DataError(f"{what} has {count} non-finite value{'s' if count > 1 else ''} (NaN or ±inf), at index "
                        f"{where}{more}; remove or fill in those points (a model cannot use them).")


def check_inputs(X, input_shape: tuple[int, ...], what: str = "X") -> np.ndarray:
    """Inputs handed to a trained model: numbers, finite, shaped [N, *input_shape]. Returns them as float64."""
    X = as_numbers(X.detach().cpu() if hasattr(X, "detach") else X, what)
    expected = tuple(int(s) for s in input_shape)
    if X.ndim != len(expected) + 1 or tuple(X.shape[1:]) != expected:
        shape = "[N, " + ", ".join(map(str, expected)) + "]"
        raise ShapeError(f"{what} has shape {tuple(X.shape)}, so each point is {tuple(X.shape[1:])}; the model was "
                         f"trained on points of shape {expected}: give {shape} (one point as [1, …]).")
    refuse_non_finite(X, what)
    return X


NAMES_SHOWN = 8  # a summary lists at most this many column names (the first few, then the last)
NAME_CHARACTERS = 24  # and cuts a longer name to this many characters


def names_in_words(names: list[str]) -> str:
    """Column names as a summary shows them: all of a few ("age, height, weight"); of many, the first six and the
    last ("c0, c1, c2, c3, c4, c5, … c29"); each longer than `NAME_CHARACTERS` cut with "…"."""
    cut = [n if len(n) <= NAME_CHARACTERS else n[:NAME_CHARACTERS - 1] + "…" for n in map(str, names)]
    if len(cut) <= NAMES_SHOWN:
        return ", ".join(cut)
    return ", ".join(cut[:NAMES_SHOWN - 2]) + ", … " + cut[-1]


@dataclass
class Dataset:
    """A data set ready for training: standardised train and test arrays (`X` `[N, D]` or images `[N, C, H, W]`; `y`
    class indices or the standardised target), its task, class names and the scalers (`x_mean`, `x_std`, `y_mean`,
    `y_std`) that map predictions back to the data's own units."""
    name: str
    X_train: np.ndarray  # [N, D] or [N, C, H, W], float64
    y_train: np.ndarray  # [N] int64 class index, or float64 standardised target
    X_test: np.ndarray
    y_test: np.ndarray
    task: str = "classification"
    num_classes: int | None = None  # K; None for regression
    class_names: list[str] | None = None
    image_shape: tuple[int, int, int] | None = None  # (C, H, W) for images
    y_mean: float | None = None  # regression: original y = y * y_std + y_mean
    y_std: float | None = None
    options: dict = field(default_factory=dict)  # the options it was loaded with, defaults filled in
    description: str = ""
    metadata: dict = field(default_factory=dict)  # extras, e.g. the rotation angles drawn per image
    x_mean: np.ndarray | None = None  # [D] tabular inputs: model input = (x - x_mean) / x_std; None: used as given
    x_std: np.ndarray | None = None  # [D]
    standardise: bool = True  # scalers not given: standardise tabular X and regression y from the training part
    source: str = ""  # where it came from: a registered name, 'csv:PATH' ...; '' for a hand-built dataset
    notes: list = field(default_factory=list)  # what loading decided for the user (task inferred, files skipped)

    def __post_init__(self):
        if self.task not in TASKS:
            raise DataError(f"task={self.task!r} is not one of {TASKS}.")
        self.X_train = as_numbers(self.X_train, f"{self.name}: X_train")
        self.X_test = as_numbers(self.X_test, f"{self.name}: X_test")
        self.y_train = as_numbers(self.y_train, f"{self.name}: y_train")  # NaN labels are refused before the cast
        self.y_test = as_numbers(self.y_test, f"{self.name}: y_test")
        if self.task == "classification":
            self.y_train, self.y_test = self.y_train.astype(np.int64), self.y_test.astype(np.int64)
        self.check()
        if self.standardise:
            self._standardise()

    def _standardise(self) -> None:
        """Scale what has no scaler yet by the training part's mean and standard deviation (constant: std 1)."""
        if self.task == "regression" and self.y_mean is None:
            mean, std = float(self.y_train.mean()), float(self.y_train.std())
            self.y_mean, self.y_std = mean, std if std > 0 else 1.0
            self.y_train = (self.y_train - self.y_mean) / self.y_std
            self.y_test = (self.y_test - self.y_mean) / self.y_std
        if not self.is_image and self.x_mean is None and self.X_train.ndim == 2:
            std = self.X_train.std(axis=0)
            self.x_mean, self.x_std = self.X_train.mean(axis=0), np.where(std > 0, std, 1.0)
            self.X_train = (self.X_train - self.x_mean) / self.x_std
            self.X_test = (self.X_test - self.x_mean) / self.x_std
        self.standardise = False  # done: checking or copying the dataset again must not scale twice

    # --- units -------------------------------------------------------------------------------------

    def scale_inputs(self, X) -> np.ndarray:
        """Inputs in the data's own units [N, ...] -> the model's (standardised where the dataset has x scalers)."""
        X = check_inputs(X, self.X_train.shape[1:])
        return X if self.x_mean is None else (X - self.x_mean) / self.x_std

    def unscale_targets(self, y) -> np.ndarray:
        """Regression targets in the model's (standardised) units -> the target's own units."""
        y = np.asarray(y, dtype=np.float64)
        return y if self.y_mean is None else y * self.y_std + self.y_mean

    def check(self) -> "Dataset":
        """Check shapes, labels and that every value is finite; a Dataset changed after loading is checked again
        where it is used (e.g. by the trainer). Returns the dataset."""
        self._check_inputs()
        self._check_labels()
        for part in ("X_train", "y_train", "X_test", "y_test"):
            refuse_non_finite(getattr(self, part), f"{self.name}: {part}")
        return self

    def _check_inputs(self):
        if self.image_shape is not None:
            self.image_shape = tuple(int(s) for s in self.image_shape)
            if len(self.image_shape) != 3:
                raise ShapeError(f"image_shape must be (C, H, W), got {self.image_shape}.")
            expected = "[N, C, H, W] = [N, %d, %d, %d]" % self.image_shape
            for part, X in (("X_train", self.X_train), ("X_test", self.X_test)):
                if X.ndim != 4 or X.shape[1:] != self.image_shape:
                    raise ShapeError(f"{self.name}: {part} has shape {X.shape}; images must be {expected}.")
        else:
            if self.X_train.ndim != 2 or self.X_test.ndim != 2 or self.X_train.shape[1] != self.X_test.shape[1]:
                raise ShapeError(
                    f"{self.name}: X_train {self.X_train.shape} and X_test {self.X_test.shape} must both be "
                    "[N, D] with the same D (or give image_shape for images)."
                )
        for part, X, y in (("train", self.X_train, self.y_train), ("test", self.X_test, self.y_test)):
            if y.ndim != 1 or len(y) != len(X):
                raise ShapeError(f"{self.name}: y_{part} has shape {y.shape}; expected [{len(X)}] to match X_{part}.")
        if len(self.X_train) == 0:
            raise DataError(f"{self.name}: the training set is empty; loosen the options that select data.")

    def _check_labels(self):
        if self.task == "regression":
            if self.num_classes is not None:
                raise DataError(f"{self.name}: a regression dataset has num_classes=None, not {self.num_classes}.")
            return
        if self.num_classes is None or self.num_classes < 2:
            raise DataError(f"{self.name}: classification needs num_classes ≥ 2, got {self.num_classes}.")
        if self.class_names is None:
            self.class_names = [str(k) for k in range(self.num_classes)]
        if len(self.class_names) != self.num_classes:
            raise DataError(f"{self.name}: {len(self.class_names)} class names for {self.num_classes} classes.")
        for part, y in (("train", self.y_train), ("test", self.y_test)):
            if len(y) and (y.min() < 0 or y.max() >= self.num_classes):
                raise DataError(
                    f"{self.name}: y_{part} has labels in [{y.min()}, {y.max()}]; expected 0..{self.num_classes - 1}."
                )

    # --- derived sizes ---------------------------------------------------------------------------

    @property
    def is_image(self) -> bool:
        """Whether the inputs are images (`image_shape` is (C, H, W))."""
        return self.image_shape is not None

    @property
    def input_dim(self) -> int:
        """D, the number of inputs once an image is flattened."""
        return int(np.prod(self.X_train.shape[1:]))

    @property
    def feature_names(self) -> list[str] | None:
        """The input columns' own names, in the order of X's columns (a table's header, a DataFrame's columns, a
        bundled table's names); None for data without names (arrays, images)."""
        names = (self.metadata or {}).get("feature_names")
        return None if names is None else [str(n) for n in names]

    @property
    def num_train(self) -> int:
        """N, the number of training points."""
        return len(self.X_train)

    @property
    def num_test(self) -> int:
        """The number of test points."""
        return len(self.X_test)

    def __repr__(self) -> str:
        """Sizes and shapes only: a data set's repr in a notebook or a log is one line, never its arrays."""
        classes = f", num_classes={self.num_classes}" if self.task == "classification" else ""
        return (f"Dataset(name={self.name!r}, task={self.task!r}, num_train={self.num_train}, "
                f"num_test={self.num_test}, input_shape={tuple(self.X_train.shape[1:])}{classes})")

    def summary(self) -> str:
        """A few human-readable lines: sizes, shapes, labels and the options used."""
        lines = [f"{self.name}: {self.description}" if self.description else self.name]
        shape = "×".join(map(str, self.image_shape)) + " images" if self.is_image else f"{self.input_dim} features"
        if not self.is_image and self.feature_names:  # a semicolon: the last name does not run into the sizes
            shape += ": " + names_in_words(self.feature_names) + ";"
        else:
            shape += ","
        lines.append(f"  {self.task}, {shape} {self.num_train:,} train / {self.num_test:,} test")
        if self.task == "classification":
            counts = np.bincount(self.y_train, minlength=self.num_classes)
            pairs = ", ".join(f"{n}: {c}" for n, c in zip(self.class_names, counts))
            lines.append(f"  {self.num_classes} classes (train counts {pairs})")
        elif self.y_mean is not None and self.y_std is not None:
            lines.append(f"  targets standardised: y = (y_orig - {self.y_mean:.4g}) / {self.y_std:.4g}")
        if self.options:
            lines.append("  options: " + ", ".join(f"{k}={v!r}" for k, v in self.options.items()))
        return "\n".join(lines)
