"""The run store's write queue: metrics, run updates, checkpoint records and views buffered in memory and written in
one transaction by `flush()`; while another program holds the lock they stay queued (and, at `close`, are saved
beside the store for the next process)."""
from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

from .connection import StoreConnection
from .faults import RunStoreError, _guarded, _is_busy
from .views import write_views


class WriteQueue:
    """What the store's repositories have written and the file has not taken yet, over one `connection`."""

    def __init__(self, connection: StoreConnection):
        """`connection`: the store's connection (its lock guards the queue too)."""
        self.connection = connection
        self.metrics: list[tuple[int, int, str, float | None]] = []  # (run id, step, name, value)
        self.updates: dict[int, dict] = {}  # run id -> fields not yet written
        self.checkpoints: list[tuple[int, int, str, float]] = []  # (run id, step, stored path, created)
        self.views: dict[tuple[int, str], tuple] = {}  # (run id, view name) -> (step, view): the newest
        self.closed = False

    @property
    def pending(self) -> int:
        """Metric rows, run updates, checkpoint records and views waiting to be written."""
        return len(self.metrics) + len(self.updates) + len(self.checkpoints) + len(self.views)

    def _clear(self) -> None:
        self.metrics, self.updates, self.checkpoints, self.views = [], {}, [], {}

    def _write(self) -> None:
        """Inside one transaction: everything queued."""
        db = self.connection.db
        db.executemany("INSERT OR REPLACE INTO metrics (run_id, step, name, value) VALUES (?, ?, ?, ?)",
                       self.metrics)  # one value per (step, name)
        for run_id, fields in self.updates.items():
            cols = ", ".join(f"{k} = ?" for k in fields)
            db.execute(f"UPDATE runs SET {cols} WHERE id = ?", (*fields.values(), run_id))
        for run_id, step, path, created in self.checkpoints:  # the same file again: one record
            db.execute("DELETE FROM checkpoints WHERE run_id = ? AND step = ? AND path = ?", (run_id, step, path))
            db.execute("INSERT INTO checkpoints (run_id, step, path, created) VALUES (?, ?, ?, ?)",
                       (run_id, step, path, created))
        write_views(db, self.views)

    @_guarded
    def flush(self) -> bool:
        """Write everything queued in one transaction; False (all kept queued) while another program holds the
        lock, True once written."""
        con = self.connection
        with con.lock:
            if not self.pending:
                return True
            busy = con.busy_since is not None
            if busy:
                con.db.execute(f"PRAGMA busy_timeout = {int(con.retry_timeout * 1000)}")
            try:
                with con.db:
                    self._write()
            except sqlite3.OperationalError as err:
                if not _is_busy(err):
                    raise
                con.note_busy()
                return False
            finally:
                if busy:
                    con.db.execute(f"PRAGMA busy_timeout = {int(con.busy_timeout * 1000)}")
            written = len(self.metrics)
            self._clear()
            con.note_free(f"; the {written} queued metric values are stored" if written else "")
            return True

    def close(self) -> None:
        """Write what is queued, waiting up to `max_wait` seconds for another program's lock; if it stays locked,
        the queue is saved beside the store (`runs.sqlite.queued-*.json`) and written by the next `RunStore` opened
        on it, and a `RunStoreError` says so. The connection is closed either way."""
        con = self.connection
        with con.lock:
            if self.closed:
                return
            try:
                start = time.time()
                while not self.flush():
                    if time.time() - start >= con.max_wait:
                        aside = self._set_aside()
                        raise RunStoreError(
                            f"the run store {con.path} stayed locked by another program for {time.time() - start:.0f}"
                            f" s; what it could not take ({len(self.metrics)} metric values, run status, checkpoint "
                            f"records) is saved in {aside} and is stored the next time invlab opens the store; "
                            f"close the program that holds it (`fuser {con.path}` names it)")
                    time.sleep(min(1.0, con.max_wait))
            finally:
                self.closed = True
                con.db.close()

    def _set_aside(self) -> Path:
        """Save the queue as JSON beside the store (written atomically)."""
        path = self.connection.path
        aside = path.with_name(f"{path.name}.queued-{os.getpid()}-{time.time_ns()}.json")
        tmp = aside.with_name(aside.name + ".tmp")
        tmp.write_text(json.dumps({"metrics": self.metrics, "checkpoints": self.checkpoints,
                                   "updates": {str(k): v for k, v in self.updates.items()}}))
        os.replace(tmp, aside)
        return aside

    def take_back_set_aside(self) -> None:
        """Queue what an earlier process saved beside the store because the store was locked, and write it."""
        con, path = self.connection, self.connection.path
        for aside in sorted(path.parent.glob(f"{path.name}.queued-*.json")):
            claimed = aside.with_name(f"{aside.name}.{os.getpid()}")
            try:
                os.rename(aside, claimed)  # atomic: of two processes opening the store, one takes each file
                saved = json.loads(claimed.read_text())
            except (OSError, ValueError):
                continue
            with con.lock:
                self.metrics.extend(tuple(row) for row in saved["metrics"])
                self.checkpoints.extend(tuple(row) for row in saved["checkpoints"])
                for run_id, fields in saved["updates"].items():
                    self.updates.setdefault(int(run_id), {}).update(fields)
                written = self.flush()
            if written:
                claimed.unlink()
            else:  # still locked: it stays on disk for the next store opened, not queued twice
                with con.lock:
                    self._clear()
                    con.busy_since = None
                os.rename(claimed, aside)
