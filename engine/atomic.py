"""Files replaced whole: a writer writes a temporary file of its own beside the target and renames it over the
target, so a reader sees the old file or the new one, and two writers of one file never rename each other's
half-written temporary file."""
from __future__ import annotations

import os
import threading
from pathlib import Path


def private_temporary(path: str | Path) -> Path:
    """A temporary name beside `path` that no other writer uses (this process and thread are in the name)."""
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")


def write_bytes_atomically(path: str | Path, payload: bytes) -> Path:
    """Replace `path` by `payload` whole (`os.replace` of a private temporary file); returns `path`."""
    path = Path(path)
    tmp = private_temporary(path)
    try:
        tmp.write_bytes(payload)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
