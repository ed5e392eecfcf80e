"""The run store's faults: every `sqlite3` (or file system) error becomes a `RunStoreError` that says what is wrong
and what to do; a damaged file is never rewritten or "repaired"."""
from __future__ import annotations

import functools
import sqlite3
from pathlib import Path

from ...errors import InvlabError


class RunStoreError(InvlabError):
    """A fault of the run store (or a refused request to it), said as one line with the fix."""



class StoreLocked(RunStoreError):
    """Another program held the store's write lock for longer than a write could wait."""


class NoRunStore(RunStoreError):
    """There is no run store at `path` (nothing was created). `given`: the data directory was named by INVLAB_DATA
    and does not exist, most likely a mistyped path."""

    def __init__(self, path: Path, given: bool = False):
        self.path, self.given = path, given
        if given and not path.parent.exists():
            text = (f"no run store at {path}: INVLAB_DATA={path.parent} does not exist; check the path (the data "
                    "directory is created only by commands that write: train, sweep, serve, fetch)")
        else:
            text = f"no run store at {path}" + ("" if given else " (INVLAB_DATA is not set; this is the default)")
        super().__init__(text)

    @property
    def mistyped(self) -> bool:
        """The data directory named by INVLAB_DATA does not exist (rather than a store not started yet)."""
        return self.given and not self.path.parent.exists()


def _is_busy(err: sqlite3.Error) -> bool:
    return isinstance(err, sqlite3.OperationalError) and ("locked" in str(err) or "busy" in str(err))


def fault_message(path: Path, err: BaseException) -> str:
    """What a `sqlite3` (or file system) error on the store at `path` means for the user, and the fix."""
    text = str(err)
    if _is_busy(err):
        return (f"the run store {path} is locked by another program ({text}); nothing was lost — close the program "
                f"that holds it (`fuser {path}` names it) and try again")
    if "readonly" in text or "read-only" in text:
        return (f"the run store {path} is read-only ({text}); make it and its folder writable (chmod u+w), or set "
                "INVLAB_DATA to another directory for new runs")
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return (f"the run store {path} is damaged ({text}). It was left untouched; move it aside (mv {path} "
                f"{path}.damaged) and a new store is started on the next run; `sqlite3 {path}.damaged .recover` "
                "may save its runs")
    if "unable to open" in text or isinstance(err, OSError):
        return (f"the run store {path} cannot be opened or created ({text}); check that its folder exists, is a "
                "directory and is writable, or set INVLAB_DATA to a directory you can write")
    if "disk is full" in text or "I/O" in text:
        return f"the run store {path} cannot be written ({text}); free disk space or set INVLAB_DATA elsewhere"
    return (f"the run store {path} failed ({type(err).__name__}: {text}); it was left untouched — if this repeats, "
            "move it aside or set INVLAB_DATA to another directory")


def _guarded(method):
    """Turn the store's sqlite3 errors into a `RunStoreError` with the fix (a method of a class holding the store's
    `connection`, whose path the message names)."""

    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as err:
            raise RunStoreError(fault_message(self.connection.path, err)) from None

    return guarded

