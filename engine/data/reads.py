"""What `load` reads from disk for the user's own data, walked before anything is read.

A served dashboard reads files only inside the folders its server allows (`invlab serve --allow-data-dir`). The real
path of the folder a data set string names is not enough to check: a class folder of `images:DIR`, one of its
images, or a file of an `idx:` folder may be a symbolic link to anywhere. `first_refused(name, allowed)` walks what
the reader would open, in the reader's own order (`image_folders.class_folders` / `image_files`,
`idx.find_idx_file`), checks each entry's real path before going into it — so nothing of a folder outside is even
listed — and names the first one refused, as the user wrote its path.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from .sources import file_path, split_prefix


def real_path(path) -> str:
    """The path with `~` expanded and every symbolic link followed: where a read of it really goes."""
    return os.path.realpath(os.path.expanduser(str(path)))


def first_refused(name, allowed: Callable[[str], bool]) -> str | None:
    """The first file or folder `load(name)` would read whose real path `allowed(real_path)` refuses, written under
    the user's own path (e.g. 'pics/secret' for 'images:pics'), or None when every one passes or `name` reads no
    file (a bundled dataset). A reader a plugin registers is checked at its path only: what it opens beneath that
    path is its own."""
    where = file_path(name)
    if where is None:
        return None
    if not allowed(real_path(where)):
        return where
    top = Path(os.path.expanduser(where))
    pair = split_prefix(name)
    if pair is not None:
        kind = pair[0]
    else:
        from .paths import kind_of_path

        kind = kind_of_path(where)
    try:
        return _first_refused_within(top, where, kind, allowed)
    except OSError:  # a folder that cannot be listed is not read either: the reader says why
        return None


def _first_refused_within(top: Path, where: str, kind: str | None, allowed: Callable[[str], bool]) -> str | None:
    if not top.is_dir():
        return None
    if kind == "images":
        return _first_refused_image(top, where, allowed)
    if kind == "idx":
        from .idx import IDX_ROLES, find_idx_file

        for role in IDX_ROLES:
            found = find_idx_file(top, role)
            if found is not None and not allowed(real_path(found)):
                return os.path.join(where, found.name)
    return None


def _first_refused_image(top: Path, where: str, allowed: Callable[[str], bool]) -> str | None:
    from .image_folders import class_folders, image_files

    for folder in class_folders(top):
        written = os.path.join(where, folder.name)
        if not allowed(real_path(folder)):
            return written
        for image in image_files(folder):
            if not allowed(real_path(image)):
                return os.path.join(written, image.name)
    return None
