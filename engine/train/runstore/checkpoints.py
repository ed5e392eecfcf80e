"""The run store's checkpoint records (`store.checkpoints`): paths relative to the data directory, so a moved data
directory keeps its checkpoints; absolute paths written by older versions are still found there after a move."""
from __future__ import annotations

import time
from pathlib import Path

from .connection import StoreConnection
from .faults import _guarded
from .queue import WriteQueue


class Checkpoints:
    """Each run's checkpoint files: recorded through the write queue, listed newest first, forgotten with their
    file."""

    def __init__(self, connection: StoreConnection, queue: WriteQueue):
        """`connection`: the store's connection (its path's folder is the data directory); `queue`: its write
        queue (a record waits there while the store is locked)."""
        self.connection, self.queue = connection, queue

    def add(self, run_id: int, step: int, path: str | Path) -> None:
        """Record a checkpoint (queued with the metrics while the store is locked); a path inside the store's
        directory is kept relative to it, so a moved data directory keeps its checkpoints."""
        path = Path(path).absolute()
        try:
            stored = path.relative_to(self.connection.path.parent.absolute()).as_posix()
        except ValueError:
            stored = str(path)
        with self.connection.lock:
            self.queue.checkpoints.append((run_id, int(step), stored, time.time()))
            self.queue.flush()

    def resolve(self, stored: str) -> Path:
        """Where a recorded checkpoint path is now: relative ones under the store's directory; an absolute one
        written by an older version that no longer exists is looked for under `checkpoints/` here (a moved data
        directory)."""
        path, home = Path(stored), self.connection.path.parent
        if not path.is_absolute():
            return home / path
        if not path.exists() and "checkpoints" in path.parts:
            parts = path.parts
            tail = parts[len(parts) - 1 - parts[::-1].index("checkpoints"):]
            moved = home.joinpath(*tail)
            if moved.exists():
                return moved
        return path

    @_guarded
    def list(self, run_id: int) -> list[tuple[int, Path]]:
        """A run's recorded checkpoints, newest first, as (step, path now); the files may be missing."""
        with self.connection.lock:
            rows = self.connection.db.execute("SELECT step, path FROM checkpoints WHERE run_id = ? "
                                              "ORDER BY step DESC, created DESC, rowid DESC", (int(run_id),)).fetchall()
        return [(int(step), self.resolve(path)) for step, path in rows]

    def latest(self, run_id: int) -> tuple[int, Path] | None:
        """The newest recorded checkpoint whose file exists (not checked further; `open_run` reads it)."""
        for step, path in self.list(run_id):
            if path.exists():
                return step, path
        return None

    @_guarded
    def forget(self, run_id: int, step: int, path: Path) -> None:
        """Remove a checkpoint file and its record (older checkpoints beyond `keep_checkpoints`)."""
        db = self.connection.db
        with self.connection.lock, db:
            for stored_step, stored in db.execute("SELECT step, path FROM checkpoints WHERE run_id = ? AND step = ?",
                                                  (int(run_id), int(step))).fetchall():
                if self.resolve(stored) == path:
                    db.execute("DELETE FROM checkpoints WHERE run_id = ? AND step = ? AND path = ?",
                               (int(run_id), int(stored_step), stored))
        path.unlink(missing_ok=True)

    def folder(self, run_id: int) -> Path:
        """The folder holding run `run_id`'s checkpoints under the data directory (created if missing):
        `checkpoints/run_N` for the default store `runs.sqlite`, `checkpoints/<store file name>/run_N` for any
        other, so two stores in one folder never write each other's run N."""
        store = self.connection.path
        folder = store.parent / "checkpoints"
        if store.name != "runs.sqlite":
            folder = folder / store.name
        path = folder / f"run_{int(run_id)}"
        path.mkdir(parents=True, exist_ok=True)
        return path
