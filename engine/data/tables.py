"""A table (CSV, Parquet, a pandas DataFrame) turned into a source's raw arrays: which column is the target, which
task it is, string labels mapped to classes, missing values and text refused with where they are.

A table is seen through `Table`: its column names, a column as a numpy array (float64 with NaN for a missing
value, or objects for text) and the feature columns as one float64 matrix. `PandasTable` wraps a DataFrame (one
copy of the features, no copy per column); `ColumnTable` holds columns parsed without pandas.
"""
from __future__ import annotations

import numpy as np
import param

from ..errors import DataError
from .raw import RawData

MAX_CLASSES_INFERRED = 20  # a whole-number target with at most this many values (and 5 points each) is classes


class TableOptions(param.Parameterized):
    """Options of a tabular file or DataFrame."""

    target = param.String("", doc="The column to predict; empty: the last column.")
    task = param.Selector(default="auto", objects=["auto", "regression", "classification"],
                          doc="auto: classification for text or a few whole numbers in the target, else regression "
                              "(the choice is printed).")
    dropna = param.Boolean(False, doc="Drop the rows with a missing value (otherwise they are refused, by row).")


class Table:
    """What `to_raw` needs of a table; `where` names it in messages, `row_label(i)` names its i-th row."""

    where = "the table"
    columns: list[str] = []

    def column(self, name: str) -> np.ndarray:  # pragma: no cover - interface
        """One column [N]: float64 with NaN for a missing value, or objects (text)."""
        raise NotImplementedError

    def matrix(self, names: list[str]) -> np.ndarray:  # pragma: no cover - interface
        """The named (numeric) columns as one float64 matrix [N, len(names)]."""
        raise NotImplementedError

    def numeric(self, name: str) -> bool:  # pragma: no cover - interface
        """Whether the column holds numbers only."""
        raise NotImplementedError

    def row_label(self, i: int) -> str:
        """How a message names the i-th row ('line 12' of a file, 'row 3' of a DataFrame)."""
        return f"row {i}"

    def drop_rows(self, rows: np.ndarray) -> None:  # pragma: no cover - interface
        """Remove the rows at these positions (dropna)."""
        raise NotImplementedError

    def __len__(self) -> int:  # pragma: no cover - interface
        raise NotImplementedError


class PandasTable(Table):
    """A pandas DataFrame as a `Table`; `first_line`: the file line of its first row (for CSV messages)."""

    def __init__(self, frame, where: str, first_line: int | None = None):
        self.frame, self.where, self.first_line = frame, where, first_line
        self.columns = [str(c) for c in frame.columns]
        self._names = dict(zip(self.columns, frame.columns))

    def column(self, name):
        """Column `name` as a float64 array (NaN for missing) when numeric, else as an object array."""
        series = self.frame[self._names[name]]
        if series.dtype.kind in "biuf":
            return series.to_numpy(dtype=np.float64, na_value=np.nan)
        return series.to_numpy(dtype=object)

    def matrix(self, names):
        """The columns `names` as one float64 matrix [N, len(names)], NaN where a value is missing."""
        return self.frame[[self._names[n] for n in names]].to_numpy(dtype=np.float64, na_value=np.nan)

    def numeric(self, name) -> bool:
        """Whether column `name` holds numbers (bool, int, unsigned or float)."""
        return self.frame[self._names[name]].dtype.kind in "biuf"

    def row_label(self, i):
        """How a message names row `i`: its file line when read from a file, else its index label."""
        if self.first_line is not None:
            return f"line {self.first_line + i}"
        return f"row {self.frame.index[i]!r}"

    def drop_rows(self, rows):
        """Drop the rows at positions `rows` (for `dropna`)."""
        self.frame = self.frame.drop(index=self.frame.index[rows])

    def __len__(self):
        return len(self.frame)


class ColumnTable(Table):
    """Columns parsed without pandas: name -> float64 array (NaN missing) or object array (text)."""

    def __init__(self, columns: dict, where: str, first_line: int = 1):
        self.data, self.where, self.first_line = dict(columns), where, first_line
        self.columns = list(columns)

    def column(self, name):
        """Column `name` as read (float64 when numeric, else object)."""
        return self.data[name]

    def matrix(self, names):
        """The columns `names` as one float64 matrix [N, len(names)] ([N, 0] for no names)."""
        return np.stack([self.data[n].astype(np.float64) for n in names], axis=1) if names else \
            np.zeros((len(self), 0))

    def numeric(self, name) -> bool:
        """Whether column `name` holds numbers."""
        return self.data[name].dtype.kind in "biuf"

    def row_label(self, i):
        """How a message names row `i`: its line in the file."""
        return f"line {self.first_line + i}"

    def drop_rows(self, rows):
        """Drop the rows at positions `rows` (for `dropna`)."""
        keep = np.ones(len(self), bool)
        keep[rows] = False
        self.data = {k: v[keep] for k, v in self.data.items()}

    def __len__(self):
        return len(next(iter(self.data.values()))) if self.data else 0


class ArrayTable(Table):
    """A table already split into a float64 feature matrix X [N, D] (NaN missing) and a target column y [N]; what the
    CSV reader fills chunk by chunk, so the features are held once. `matrix` of every feature, in order, is X itself."""

    def __init__(self, features: list[str], X: np.ndarray, target: str, y: np.ndarray, where: str, first_line: int):
        self.features, self.X, self.target, self.y = list(features), X, target, y
        self.where, self.first_line = where, first_line
        self.columns = self.features + [target]

    def column(self, name):
        """Column `name`: the target y, or feature `name`'s column of X."""
        return self.y if name == self.target else self.X[:, self.features.index(name)]

    def matrix(self, names):
        """The features `names` as a matrix [N, len(names)] (X itself when all features in order)."""
        if list(names) == self.features:
            return self.X
        return self.X[:, [self.features.index(n) for n in names]]

    def numeric(self, name) -> bool:
        """Whether column `name` holds numbers (features always do; the target unless it holds labels)."""
        return name != self.target or self.y.dtype.kind in "biuf"

    def row_label(self, i):
        """How a message names row `i`: its line in the npz arrays' numbering."""
        return f"line {self.first_line + i}"

    def drop_rows(self, rows):
        """Drop the rows at positions `rows` from X and y (for `dropna`)."""
        keep = np.ones(len(self), bool)
        keep[rows] = False
        self.X, self.y = self.X[keep], self.y[keep]

    def __len__(self):
        return len(self.y)


def _missing(values: np.ndarray) -> np.ndarray:
    """[N] bool: NaN, None or an empty string."""
    if values.dtype.kind == "f":
        return np.isnan(values)
    return np.array([v is None or (isinstance(v, float) and v != v) or (isinstance(v, str) and not v.strip())
                     for v in values], bool)


def _refuse_missing(table: Table, names: list[str], dropna: bool, notes: list) -> None:
    bad_rows, bad_cols, hollow = np.zeros(len(table), bool), [], []
    for name in names:
        gone = _missing(table.column(name))
        if gone.any():
            bad_cols.append(name)
            bad_rows |= gone
            if gone.all():
                hollow.append(name)
    if hollow:  # dropna would drop every row, and filling in row by row is not what such a column needs
        listed = ", ".join(map(repr, hollow))
        raise DataError(f"{table.where}: column{'s' if len(hollow) > 1 else ''} {listed} "
                        f"{'are' if len(hollow) > 1 else 'is'} empty on every row; drop the column or fill it in"
                        + (" (or pass another column as target=)." if names[-1] in hollow else "."))
    count = int(bad_rows.sum())
    if not count:
        return
    if dropna and count == len(table):
        raise DataError(f"{table.where}: every one of its {count} rows has a missing value (in columns "
                        f"{', '.join(map(repr, bad_cols))}), so dropna would leave no data; fill them in, or drop "
                        "the column with the most gaps.")
    if dropna:
        table.drop_rows(np.flatnonzero(bad_rows))
        notes.append(f"{table.where}: dropped {count} row{'s' if count > 1 else ''} with a missing value (dropna)")
        return
    rows = ", ".join(table.row_label(int(i)) for i in np.flatnonzero(bad_rows)[:5]) + (", …" if count > 5 else "")
    raise DataError(f"{table.where} has missing values in {count} row{'s' if count > 1 else ''} ({rows}) in column"
                    f"{'s' if len(bad_cols) > 1 else ''} {', '.join(map(repr, bad_cols))} (an empty field or a short "
                    "row); fill them in, or pass dropna=True to drop those rows.")


def _refuse_infinite(table: Table, names: list[str], shown: int = 5) -> None:
    """A `DataError` counting the ±inf cells of the numeric columns `names` and naming the first by line and column
    (NaN is a missing value, refused or dropped by `_refuse_missing`). Checked before scaling, which would spread
    them over the whole column."""
    count, cells = 0, []
    for j, name in enumerate(names):
        if table.numeric(name):
            rows = np.flatnonzero(np.isinf(table.column(name)))
            count += len(rows)
            cells += [(int(i), j) for i in rows[:shown]]
    if not count:
        return
    listed = ", ".join(f"{table.row_label(i)} column {names[j]!r}" for i, j in sorted(cells)[:shown])
    raise DataError(f"{table.where} has {count} non-finite value{'s' if count > 1 else ''} (inf): {listed}"
                    f"{', …' if count > shown else ''}; replace them with numbers (or leave the cells empty and "
                    "pass dropna=True to drop those rows).")


def _refuse_text(table: Table, name: str) -> None:
    values = table.column(name)
    for i, v in enumerate(values):
        try:
            float(v)
        except (TypeError, ValueError):
            raise DataError(f"{table.where}: input column {name!r} holds text ({str(v)[:30]!r} at "
                            f"{table.row_label(i)}); every input column must hold numbers — fix that value, or "
                            "drop the column (or make it the target with target=...).") from None


def _infer_task(y: np.ndarray, target: str, where: str, notes: list) -> str:
    if y.dtype.kind not in "biuf":
        notes.append(f"{where}: target {target!r} holds text, so the task is classification")
        return "classification"
    values = np.unique(y)
    whole = bool(np.all(values == np.round(values)))
    if whole and len(values) <= MAX_CLASSES_INFERRED and len(values) * 5 <= len(y):
        notes.append(f"{where}: target {target!r} has {len(values)} whole-number values, so the task is "
                     "classification (to change it: Task on the dashboard's Data tab, or task='regression')")
        return "classification"
    notes.append(f"{where}: target {target!r} has {len(values)} distinct values, so the task is regression "
                 "(to change it: Task on the dashboard's Data tab, or task='classification')")
    return "regression"


def labels_to_classes(y: np.ndarray, where: str, target: str):
    """(class index [N], class names, label values or None): classes in sorted order of their values."""
    if y.dtype.kind in "biuf":
        values = np.unique(y)
        whole = bool(np.all(values == np.round(values)))
        names = [str(int(v)) if whole else f"{v:g}" for v in values]
        label_values = [int(v) for v in values] if whole else None
        index = np.searchsorted(values, y)
    else:
        text = np.array([str(v) for v in y], dtype=object)
        values = np.unique(text)
        names, label_values = [str(v) for v in values], None
        index = np.searchsorted(values, text)
    if len(values) < 2:
        raise DataError(f"{where}: target {target!r} has one class only ({names[0]!r}); classification needs at least "
                        "two — add points of another class, or use task='regression' for a numeric target.")
    return index.astype(np.int64), names, label_values


def to_raw(table: Table, options: dict, notes: list):
    """(X [N, D] float64, y [N], task, class_names, label_values) from a table and its `TableOptions` values."""

    if not table.columns or len(table) == 0:
        raise DataError(f"{table.where} has no rows of data; give a file with a row per point.")
    target = options.get("target") or table.columns[-1]
    if target not in table.columns:
        shown = ", ".join(map(repr, table.columns[:12])) + (", …" if len(table.columns) > 12 else "")
        raise DataError(f"{table.where} has no column {target!r}; its columns are {shown} — pass one of them as "
                        "target=.")
    features = [c for c in table.columns if c != target]
    if not features:
        raise DataError(f"{table.where} has only the target column {target!r}; add input columns.")
    _refuse_infinite(table, features + [target])  # before dropna drops rows, so the line numbers are the file's
    _refuse_missing(table, features + [target], options.get("dropna", False), notes)
    for name in features:
        if not table.numeric(name):
            _refuse_text(table, name)
    y = table.column(target)
    task = options.get("task", "auto")
    if task == "auto":
        task = _infer_task(y, target, table.where, notes)
    X = table.matrix(features)  # [N, D]
    if task == "regression":
        if y.dtype.kind not in "biuf":
            _refuse_text_target(y, target, table)
        return RawData(X, y.astype(np.float64), task="regression", kind="tabular",
                       metadata={"feature_names": features, "target": target})
    index, names, label_values = labels_to_classes(y, table.where, target)
    return RawData(X, index, class_names=names, label_values=label_values, task="classification", kind="tabular",
                   metadata={"feature_names": features, "target": target})


def _refuse_text_target(y, target, table):
    for i, v in enumerate(y):
        try:
            float(v)
        except (TypeError, ValueError):
            raise DataError(f"{table.where}: target {target!r} holds text ({str(v)[:30]!r} at {table.row_label(i)}) "
                            "but task='regression' needs numbers; use task='classification' or fix the "
                            "value.") from None
