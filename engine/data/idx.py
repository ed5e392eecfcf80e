"""Reader and writer for the IDX format of the MNIST files (LeCun et al.), raw or gzip-compressed.

An IDX file is a 4-byte magic number — two zero bytes, a type code, the number of dimensions — then one
big-endian uint32 per dimension, then the values in C order, big-endian. Every way a file can be wrong
(not IDX at all, cut short by an interrupted download, a broken gzip stream) becomes a `DataError`
saying what is wrong with which file and what to do about it.

`load_idx_dir` turns a directory of MNIST-style files into arrays for the `idx:/path/to/dir` source.
"""
from __future__ import annotations

import gzip
import math
import zlib
from pathlib import Path

import numpy as np

from ..errors import DataError

# type code -> big-endian dtype, as in the format's definition
TYPE_CODES = {
    0x08: np.dtype(">u1"),  # unsigned byte
    0x09: np.dtype(">i1"),  # signed byte
    0x0B: np.dtype(">i2"),  # short
    0x0C: np.dtype(">i4"),  # int
    0x0D: np.dtype(">f4"),  # float
    0x0E: np.dtype(">f8"),  # double
}
_CODE_OF_KIND = {(dt.kind, dt.itemsize): code for code, dt in TYPE_CODES.items()}
_GZIP_MAGIC = b"\x1f\x8b"


# A header may declare at most this much data; a larger claim is refused before anything is read or allocated.
MAX_IDX_BYTES = 8 << 30
_OVERSIZE_COUNTED = 16 << 20  # an over-long body is counted up to this many extra bytes, then reported as "at least"
_CHUNK = 1 << 20


def _open(path: Path):
    """A binary stream of the file's content, decompressed when it is gzip (recognised by content, not by name)."""
    try:
        with open(path, "rb") as f:
            gz = f.read(2) == _GZIP_MAGIC
        return gzip.open(path, "rb") if gz else open(path, "rb")
    except FileNotFoundError:
        raise DataError(f"IDX file {path} does not exist; check the path.") from None
    except IsADirectoryError:
        raise DataError(f"IDX file {path} is a directory; give a file.") from None
    except OSError as err:
        raise DataError(f"cannot read IDX file {path}: {err}; check its permissions.") from None


def _read(stream, n: int) -> bytes:
    """Up to n bytes (fewer only at the end of the stream), in chunks so a short stream costs no more than it holds."""
    parts, left = [], n
    while left > 0:
        part = stream.read(min(left, 64 * _CHUNK))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def read_idx(path) -> np.ndarray:
    """Read an IDX file (raw or gzip) into a native-endian numpy array of the shape its header declares.

    The content is streamed: the header is read first, then exactly the bytes it declares, so a gzip file that
    inflates to far more than its header says (a "gzip bomb") is refused after reading one byte too many, not
    after decompressing all of it.
    """
    path = Path(path)
    try:
        with _open(path) as stream:
            return _parse(stream, path)
    except (OSError, EOFError, zlib.error) as err:
        raise DataError(
            f"cannot decompress {path}: unreadable gzip ({err}); the file is probably incomplete — "
            "download it again."
        ) from None


def _parse(stream, path: Path) -> np.ndarray:
    magic = _read(stream, 4)
    if len(magic) < 4 or magic[0] != 0 or magic[1] != 0 or magic[2] not in TYPE_CODES or magic[3] == 0:
        number = int.from_bytes(magic[:4].ljust(4, b"\0"), "big")
        codes = "/".join(f"0x{c:02X}" for c in TYPE_CODES)
        raise DataError(
            f"not an IDX file: magic number 0x{number:08X} in {path}, expected 0x0000TTNN "
            f"(two zero bytes, a type code TT in {codes}, the number of dimensions NN ≥ 1); "
            "check that this is an MNIST-format file."
        )
    dtype, ndim = TYPE_CODES[magic[2]], magic[3]
    sizes = _read(stream, 4 * ndim)
    if len(sizes) < 4 * ndim:
        raise DataError(
            f"size mismatch: header says {ndim} dimensions ({4 * ndim} bytes of sizes), file has "
            f"{len(sizes)} bytes after the magic number in {path}; the file is truncated — download it again."
        )
    shape = tuple(int(d) for d in np.frombuffer(sizes, dtype=">u4", count=ndim))
    dims = " × ".join(str(d) for d in shape)
    expected = math.prod(shape) * dtype.itemsize
    if expected > MAX_IDX_BYTES:
        raise DataError(
            f"{path}: header says {dims} values × {dtype.itemsize} bytes = {expected:,} bytes, more than the "
            f"{MAX_IDX_BYTES:,} bytes an IDX file may hold here; the header is corrupt, or split the data into "
            "smaller files."
        )
    body = _read(stream, expected)
    extra = len(_read(stream, 1))
    while extra and extra <= _OVERSIZE_COUNTED:  # count what is left, without keeping it
        more = len(stream.read(_CHUNK))
        if not more:
            break
        extra += more
    if len(body) != expected or extra:
        found = f"{len(body) + extra}" if extra <= _OVERSIZE_COUNTED else f"more than {expected + extra:,}"
        what = "truncated or corrupt — download it again" if not extra else (
            "longer than its header says (corrupt, or not what it claims to be) — download it again")
        raise DataError(
            f"size mismatch: header says {dims} values × {dtype.itemsize} bytes = {expected} bytes, file has "
            f"{found} bytes of data in {path}; the file is {what}."
        )
    array = np.frombuffer(body, dtype=dtype).reshape(shape)
    return array.astype(dtype.newbyteorder("="))  # native byte order, and a writable copy


def write_idx(path, array) -> Path:
    """Write `array` as an IDX file; gzip-compressed when the path ends in `.gz`. Returns the path."""
    path = Path(path)
    array = np.asarray(array)
    code = _CODE_OF_KIND.get((array.dtype.kind, array.dtype.itemsize))
    if code is None or array.ndim == 0 or array.ndim > 255:
        kinds = "uint8, int8, int16, int32, float32, float64"
        raise DataError(
            f"cannot write a {array.dtype} array of {array.ndim} dimensions as IDX; "
            f"convert it to one of {kinds} with 1 to 255 dimensions."
        )
    header = bytes([0, 0, code, array.ndim]) + np.asarray(array.shape, dtype=">u4").tobytes()
    body = np.ascontiguousarray(array, dtype=TYPE_CODES[code]).tobytes()
    content = header + body
    if path.name.endswith(".gz"):
        content = gzip.compress(content, mtime=0)  # mtime=0: same array, same bytes
    path.write_bytes(content)
    return path


# --- a directory of MNIST-style files -------------------------------------------------------------

# role -> (file prefix, IDX dimensionality); names follow the MNIST distribution
IDX_ROLES = {
    "train_images": ("train-images", 3),
    "train_labels": ("train-labels", 1),
    "test_images": ("t10k-images", 3),
    "test_labels": ("t10k-labels", 1),
}


def idx_file_names(role: str) -> list[str]:
    """Accepted names for one file: `-idx` or `.idx` before the dimension tag, raw or `.gz`."""
    prefix, ndim = IDX_ROLES[role]
    stems = [f"{prefix}-idx{ndim}-ubyte", f"{prefix}.idx{ndim}-ubyte"]
    return [stem + ext for stem in stems for ext in ("", ".gz")]


def find_idx_file(directory: Path, role: str) -> Path | None:
    """The IDX file for `role` ('train-images', 'test-labels', ...) in `directory` under any of its usual names (raw or
    gzip), or None."""
    for name in idx_file_names(role):
        if (directory / name).is_file():
            return directory / name
    return None


def _images_and_labels(images_path: Path, labels_path: Path) -> tuple[np.ndarray, np.ndarray]:
    images, labels = read_idx(images_path), read_idx(labels_path)
    if images.ndim != 3:
        raise DataError(
            f"{images_path} holds an array of shape {images.shape}; images must be 3-D [N, H, W] — "
            "check that images and labels files are not swapped."
        )
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise DataError(
            f"{labels_path} holds {labels.dtype} values of shape {labels.shape}; labels must be 1-D integers [N]."
        )
    if len(images) == 0:
        raise DataError(f"{images_path} holds 0 images (its header says {' × '.join(map(str, images.shape))}); "
                        "a data set needs at least one image per class — check that the file was written completely.")
    if len(images) != len(labels):
        raise DataError(
            f"count mismatch: {images_path.name} has {len(images)} images but {labels_path.name} has "
            f"{len(labels)} labels; the two files must come from the same set — replace the wrong one."
        )
    return images, labels


def load_idx_dir(directory) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(train images, train labels, test images, test labels) from a directory; test is None when absent.

    Images come back as stored ([N, H, W] in the file's dtype); scaling is the caller's business.
    """
    directory = Path(directory).expanduser()
    if directory.exists() and not directory.is_dir():
        raise DataError(f"idx: {directory} is a file, not a directory; give the folder that holds the IDX files.")
    if not directory.is_dir():
        raise DataError(f"idx: directory {directory} does not exist; give the folder that holds the IDX files.")
    paths = {role: find_idx_file(directory, role) for role in IDX_ROLES}
    for role in ("train_images", "train_labels"):
        if paths[role] is None:
            raise DataError(
                f"no {role.replace('_', ' ')} file in {directory}; expected one of "
                f"{', '.join(idx_file_names(role))}."
            )
    X_train, y_train = _images_and_labels(paths["train_images"], paths["train_labels"])
    if paths["test_images"] is None and paths["test_labels"] is None:
        return X_train, y_train, None, None
    for role in ("test_images", "test_labels"):
        if paths[role] is None:
            other = "test labels" if role == "test_images" else "test images"
            raise DataError(
                f"{directory} has {other} but no {role.replace('_', ' ')} file (expected one of "
                f"{', '.join(idx_file_names(role))}); add it, or remove both test files to split the training set."
            )
    X_test, y_test = _images_and_labels(paths["test_images"], paths["test_labels"])
    if X_test.shape[1:] != X_train.shape[1:]:
        raise DataError(
            f"train images are {X_train.shape[1:]} but test images are {X_test.shape[1:]} in {directory}; "
            "both sets must have the same image size."
        )
    return X_train, y_train, X_test, y_test
