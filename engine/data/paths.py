"""Which reader a path needs, and `loadable`, the files and folders under a directory that `load` can read.

Both ask the readers' registry entries (invlab.data.raw): a file is read by the reader whose `extensions` hold its
ending ('.csv' → 'csv:'), a folder by the newest-registered reader that `recognises` its layout (an IDX folder before
the generic class folders of images), so a plugin reader that declares its extensions or folders is found here with
no edit to this module.
"""
from __future__ import annotations

import os
from pathlib import Path

from .raw import READERS, Reader


def reader_of_extension(path: str) -> str | None:
    """The prefix of the reader whose extensions hold `path`'s ending ('mine.csv' → 'csv'), or None."""
    ending = os.path.splitext(str(path))[1].lower()
    if not ending:
        return None
    return next((r.prefix for r in READERS.values() if ending in r.extensions), None)


def _folder_readers() -> list[Reader]:
    """The readers that recognise folders, the newest registered first (the more specific layout wins)."""
    return [r for r in reversed(list(READERS.values())) if r.recognises is not None]


def folder_reader(folder: Path) -> str | None:
    """The prefix of the reader that recognises `folder`'s layout, or None."""
    for reader in _folder_readers():
        try:
            if reader.recognises(folder):
                return reader.prefix
        except OSError:  # a folder that cannot be listed is nobody's: the reader named by the user says why
            continue
    return None


def kind_of_path(path: str) -> str | None:
    """The reader a bare path needs ('csv', 'npz', 'parquet', 'images', 'idx', or a plugin's), from its extension or,
    for a folder, its layout (a folder no reader recognises goes to the first folder reader registered, whose
    message says what it lacks); None when it says nothing."""
    p = Path(os.path.expanduser(path))
    prefix = reader_of_extension(p.name)
    if prefix is not None:
        return prefix
    if p.is_dir():
        folders = _folder_readers()
        return folder_reader(p) or (folders[-1].prefix if folders else None)
    return None


def loadable(directory, depth: int = 2) -> list[str]:
    """Dataset strings for what `load` can read under `directory` (files by extension, folders a reader recognises:
    class folders of images, IDX files), searched `depth` levels deep, sorted: e.g. ['csv:/data/a.csv',
    'images:/data/p']."""
    root = Path(os.path.expanduser(str(directory)))
    found: list[str] = []

    def visit(folder: Path, level: int):
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            prefix = reader_of_extension(entry.name) if entry.is_file() else None
            if prefix is not None:
                found.append(f"{prefix}:{entry.resolve()}")
            elif entry.is_dir():
                kind = folder_reader(entry)
                if kind:
                    found.append(f"{kind}:{entry.resolve()}")
                elif level < depth:
                    visit(entry, level + 1)

    if root.is_dir():
        visit(root, 1)
    return found
