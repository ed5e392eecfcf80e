"""Readers for the user's own files: CSV, NumPy `.npz` and Parquet (the extensions each reads are declared in its
registry entry, sources.py; which reader a bare path needs and `loadable` are in paths.py).

Each reader takes a path and the source's options and returns `RawData`; `loader.load` does the rest (split,
classes, subsets, standardisation). A file is checked to be what its prefix says before it is parsed, so `csv:`
on a zip archive or `npz:` on a text file says which it looks like. CSV is parsed by pandas' C parser when pandas
is installed (it is with the dashboard) and by the standard library's `csv` module otherwise; Parquet needs
pyarrow (`pip install pyarrow`, or the project's extra: `pip install 'invariance-lab[data]'`).
"""
from __future__ import annotations

import csv
import os
import zipfile
from pathlib import Path

import numpy as np
import param

from ..errors import DataError
from .tables import ArrayTable, ColumnTable, PandasTable, Table, TableOptions, _refuse_text, to_raw

CSV_CHUNK_ROWS = 100_000  # rows pandas parses at a time into the preallocated arrays
_MAGIC = {b"PK\x03\x04": ("a zip archive", "npz"), b"PAR1": ("a Parquet file", "parquet"),
          b"\x89PNG": ("a PNG image", "images"), b"\xff\xd8\xff": ("a JPEG image", "images"),
          b"\x93NUMPY": ("a .npy array", "npz"), b"\x1f\x8b": ("a gzip file", "idx")}


class NpzOptions(param.Parameterized):
    """Options of an `.npz` file (arrays X, y and optionally X_test, y_test)."""

    task = param.Selector(default="auto", objects=["auto", "regression", "classification"],
                          doc=TableOptions.param.task.doc)


def file_info(path: Path) -> dict:
    """Path (absolute), modification time and size of a file or folder: part of a dataset's identity."""
    stat = path.stat()
    return {"path": str(path.resolve()), "mtime": stat.st_mtime, "size": stat.st_size}


def existing_file(path: str, kind: str, prefix: str) -> Path:
    """The path as a `Path`, or a `DataError` when it is missing, a folder, or not what `prefix` says."""
    p = Path(os.path.expanduser(path))
    if not p.exists():
        raise DataError(f"{kind} file {path} does not exist; check the path.")
    if p.is_dir():
        raise DataError(f"{path} is a folder, not a {kind} file; give a file (a folder of class folders is "
                        "'images:DIR', of IDX files 'idx:DIR').")
    try:
        with open(p, "rb") as f:
            head = f.read(8192)
    except OSError as err:
        raise DataError(f"cannot read {kind} file {path}: {err.strerror}; check its permissions.") from None
    if not head:
        raise DataError(f"{kind} file {path} is empty; give a file with data in it.")
    for magic, (what, right) in _MAGIC.items():
        if head.startswith(magic) and right != prefix:
            raise DataError(f"{path} is {what}, not a {kind} file; load it as '{right}:{path}'"
                            + (" (or its folder as 'images:DIR')" if right == "images" else "") + ".")
    if prefix == "csv" and b"\x00" in head:
        raise DataError(f"{path} holds binary data, not CSV text; give a CSV file, or the prefix its format needs.")
    if prefix in ("npz", "parquet") and not any(head.startswith(m) for m, (_, r) in _MAGIC.items() if r == prefix):
        raise DataError(f"{path} is not a{'n' if prefix == 'npz' else ''} {kind} file (it starts like "
                        f"{'text' if _texty(head) else 'unknown binary data'}); "
                        + ("load a CSV file as 'csv:PATH'." if _texty(head) else "check the file."))
    return p


def _texty(head: bytes) -> bool:
    return b"\x00" not in head[:1024]


# --- CSV ------------------------------------------------------------------------------------------


def _number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _layout(path: Path) -> tuple[str, bool]:
    """(delimiter, whether the first line is a header) from the first two lines. A UTF-8 byte-order mark (what
    Excel writes) is not part of the first field: read as text it would make a first number look like a name."""
    with open(path, newline="", encoding="utf-8-sig", errors="replace") as f:
        lines = [line for line in (f.readline(), f.readline()) if line.strip()]
    if not lines:
        raise DataError(f"CSV file {path} is empty (only blank lines); give a file with data in it.")
    delimiter = "\t" if path.suffix == ".tsv" else max([",", ";", "\t"], key=lines[0].count)
    rows = [next(csv.reader([line], delimiter=delimiter)) for line in lines]
    first = [field.strip() for field in rows[0]]
    texts = [bool(field) and not _number(field) for field in first]
    if all(texts):
        return delimiter, True
    if len(rows) > 1:
        second = [field.strip() for field in rows[1]]
        if any(t and i < len(second) and _number(second[i]) for i, t in enumerate(texts)):
            return delimiter, True
    return delimiter, False


def _count_lines(path: Path) -> int:
    """Newlines in the file, plus one for a last line without one: an upper bound on its rows."""
    count, last = 0, b"\n"
    with open(path, "rb") as f:
        while block := f.read(1 << 24):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


def _read_csv_pandas(pd, path: Path, delimiter: str, header: bool, target: str | None) -> Table:
    """pandas' C parser, chunk by chunk into preallocated arrays: the features are held once (a whole-file frame and
    its matrix would be twice, plus the parser's buffers). A chunk with text in an input column is handed to the
    table checks, which name the line."""
    capacity = max(_count_lines(path) - header, 0)
    X = y_parts = features = name = None
    filled = 0
    try:
        chunks = pd.read_csv(path, sep=delimiter, header=0 if header else None, skipinitialspace=True, engine="c",
                             chunksize=CSV_CHUNK_ROWS)
        for chunk in chunks:
            if not header:
                chunk.columns = [f"column {i + 1}" for i in range(chunk.shape[1])]
            if features is None:
                columns = [str(c) for c in chunk.columns]
                name = target or columns[-1]
                if name not in columns:
                    return PandasTable(chunk, str(path), first_line=1 + header)  # to_raw names the columns there are
                features = [c for c in columns if c != name]
                X = np.empty((capacity, len(features)), dtype=np.float64)
                y_parts = []
            chunk.columns = [str(c) for c in chunk.columns]
            part = chunk[features]
            if not all(kind in "biuf" for kind in part.dtypes.map(lambda d: d.kind)):
                table = PandasTable(chunk, str(path), first_line=1 + header + filled)
                for column in features:
                    if not table.numeric(column):
                        _refuse_text(table, column)
            if filled + len(chunk) > capacity:  # more rows than the file had lines when they were counted
                raise DataError(_changed_while_read(path))
            X[filled:filled + len(chunk)] = part.to_numpy(dtype=np.float64, na_value=np.nan)
            column = chunk[name]
            y_parts.append(column.to_numpy(dtype=np.float64, na_value=np.nan) if column.dtype.kind in "biuf"
                           else column.to_numpy(dtype=object))
            filled += len(chunk)
    except pd.errors.EmptyDataError:
        raise DataError(f"CSV file {path} has no rows of data; give a file with a row per point.") from None
    except pd.errors.ParserError as err:
        detail = str(err).strip().splitlines()[-1].replace("Error tokenizing data. C error: ", "")
        raise DataError(f"CSV file {path} has rows of different lengths ({detail}); every row needs one value per "
                        "column.") from None
    except UnicodeDecodeError:
        raise DataError(f"CSV file {path} is not UTF-8 text; save it as UTF-8 CSV.") from None
    if features is None:
        raise DataError(f"CSV file {path} has a header but no rows of data; give a file with a row per point.")
    y = np.concatenate(y_parts) if y_parts else np.zeros(0)
    return ArrayTable(features, X[:filled], name, y, str(path), first_line=1 + header)


def _read_csv_plain(path: Path, delimiter: str, header: bool) -> ColumnTable:
    """Without pandas: the `csv` module, every field checked; slower, same messages."""
    with open(path, newline="", encoding="utf-8-sig") as f:  # -sig: a byte-order mark is not in the first name
        rows = [row for row in csv.reader(f, delimiter=delimiter, skipinitialspace=True) if row]
    names = rows.pop(0) if header else [f"column {i + 1}" for i in range(len(rows[0]) if rows else 0)]
    for i, row in enumerate(rows):
        if len(row) > len(names):
            raise DataError(f"CSV file {path} has rows of different lengths (line {i + 1 + header} has {len(row)} "
                            f"fields, not {len(names)}); every row needs one value per column.")
    columns = {}
    for j, name in enumerate(names):
        values = [row[j].strip() if j < len(row) else "" for row in rows]
        try:
            columns[name] = np.array([float(v) if v else np.nan for v in values], dtype=np.float64)
        except ValueError:
            columns[name] = np.array([v or None for v in values], dtype=object)
    return ColumnTable(columns, str(path), first_line=1 + header)


def _changed_while_read(path) -> str:
    return (f"CSV file {path} changed while it was read (another program is writing it); read it again once it is "
            "written.")


def _stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


def read_csv(path: str, options: dict, notes: list):
    """`csv:PATH` -> RawData; the target is the last column unless `target=` names one; a header is detected.

    The file is read more than once (its first lines for the layout, its lines counted to size the arrays, then
    parsed), so a file that another program writes meanwhile is refused rather than read half old, half new."""
    p = existing_file(path, "CSV", "csv")
    before = _stamp(p)
    delimiter, header = _layout(p)
    try:
        try:
            import pandas as pd
        except ImportError:
            table = _read_csv_plain(p, delimiter, header)
        else:
            table = _read_csv_pandas(pd, p, delimiter, header, options.get("target") or None)
    except DataError:
        if _stamp(p) != before:  # a half-written last row looks short or ragged: the change is the cause
            raise DataError(_changed_while_read(path)) from None
        raise
    if _stamp(p) != before:
        raise DataError(_changed_while_read(path))
    raw = to_raw(table, options, notes)
    raw.metadata["file"] = file_info(p)
    return raw


# --- npz and Parquet ------------------------------------------------------------------------------


def read_npz(path: str, options: dict, notes: list):
    """`npz:PATH` -> RawData from arrays X, y (and optionally X_test, y_test)."""
    from .objects import arrays_to_raw

    p = existing_file(path, "npz", "npz")
    name = None
    try:
        with np.load(p, allow_pickle=False) as archive:  # never True: unpickling a file's objects can run its code
            arrays = {}
            for name in _array_names(archive):
                arrays[name] = archive[name]
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as err:
        if isinstance(err, ValueError) and "allow_pickle" in str(err):  # numpy's refusal of an object array
            raise DataError(f"npz file {path}: array {name!r} holds Python objects (dtype=object), which are never "
                            "loaded (unpickling them could run code); save numbers only, e.g. numpy.savez(path, "
                            "X=np.asarray(X, dtype=float), y=np.asarray(y)), with text labels as a str array."
                            ) from None
        raise DataError(f"npz file {path} cannot be read ({str(err).splitlines()[0]}); it may be cut short — write "
                        "it again with numpy.savez.") from None
    if not arrays:  # another program's zip (a torch checkpoint is one): what it holds is not ours to list
        raise DataError(f"npz file {path} is a zip archive without NumPy arrays, not a file numpy.savez wrote; save "
                        "the data as numpy.savez(path, X=..., y=...[, X_test=..., y_test=...]).")
    missing = [k for k in ("X", "y") if k not in arrays]
    if missing:
        raise DataError(f"npz file {path} lacks the array{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                        f"(it has {', '.join(arrays) or 'none'}); save it as numpy.savez(path, X=..., y=...[, "
                        "X_test=..., y_test=...]).")
    if ("X_test" in arrays) != ("y_test" in arrays):
        raise DataError(f"npz file {path} has only one of X_test and y_test; save both or neither.")
    raw = arrays_to_raw(arrays["X"], arrays["y"], arrays.get("X_test"), arrays.get("y_test"), options, notes,
                        where=str(path))
    raw.metadata["file"] = file_info(p)
    return raw


def _array_names(archive) -> list[str]:
    """The names of an npz archive's `.npy` members: numpy would hand any other member over as raw bytes."""
    members = set(archive.zip.namelist())
    return [name for name in archive.files if f"{name}.npy" in members]


def read_parquet(path: str, options: dict, notes: list):
    """`parquet:PATH` -> RawData, through pandas and pyarrow."""
    p = existing_file(path, "Parquet", "parquet")
    try:
        import pandas as pd
        import pyarrow  # noqa: F401
    except ImportError:
        raise DataError("reading Parquet files needs pyarrow and pandas: pip install pyarrow pandas (or the "
                        "project's extra: pip install 'invariance-lab[data]'); or save the table as CSV.") from None
    try:
        frame = pd.read_parquet(p)
    except Exception as err:  # pyarrow raises its own types for a damaged file
        raise DataError(f"Parquet file {path} cannot be read ({type(err).__name__}: "
                        f"{str(err).splitlines()[0][:200]}); write it again.") from None
    raw = to_raw(PandasTable(frame, str(path)), options, notes)
    raw.metadata["file"] = file_info(p)
    return raw
