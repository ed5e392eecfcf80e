"""The run store's write queue: metrics, run updates and checkpoint records buffered in memory and written in one
transaction by `flush()`; while another program holds the lock they stay queued (and, at `close`, are saved beside
the store for the next process)."""
from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

from ..states import RunStatus
from .faults import RunStoreError, _guarded, _is_busy
from .writers import writer_identity


class WriteQueue:
    """The part of `RunStore` that queues and flushes writes (needs the connection's `_db`, `_lock`, busy notes)."""

    def log_metrics(self, run_id: int, step: int, metrics: dict[str, float | None]) -> None:
        """Buffer metrics for one step; they reach the database at the next `flush()`. A None value is stored as a
        gap (a missing value at that step). A run keeps one value per (step, name): a later one replaces it."""
        with self._lock:
            self._pending.extend((run_id, int(step), name, None if value is None else float(value))
                                 for name, value in metrics.items())

    @property
    def pending(self) -> int:
        """Metric rows, run updates and checkpoint records waiting to be written."""
        return len(self._pending) + len(self._pending_updates) + len(self._pending_checkpoints) + \
            len(self._pending_views)

    @_guarded
    def flush(self) -> bool:
        """Write everything queued in one transaction; False (all kept queued) while another program holds the
        lock, True once written."""
        with self._lock:
            if not self.pending:
                return True
            busy = self._busy_since is not None
            if busy:
                self._db.execute(f"PRAGMA busy_timeout = {int(self.retry_timeout * 1000)}")
            try:
                with self._db:
                    self._db.executemany("INSERT OR REPLACE INTO metrics (run_id, step, name, value) "
                                         "VALUES (?, ?, ?, ?)", self._pending)  # one value per (step, name)
                    for run_id, fields in self._pending_updates.items():
                        cols = ", ".join(f"{k} = ?" for k in fields)
                        self._db.execute(f"UPDATE runs SET {cols} WHERE id = ?", (*fields.values(), run_id))
                    for run_id, step, path, created in self._pending_checkpoints:  # the same file again: one record
                        self._db.execute("DELETE FROM checkpoints WHERE run_id = ? AND step = ? AND path = ?",
                                         (run_id, step, path))
                        self._db.execute("INSERT INTO checkpoints (run_id, step, path, created) VALUES (?, ?, ?, ?)",
                                         (run_id, step, path, created))
                    self._write_views()
            except sqlite3.OperationalError as err:
                if not _is_busy(err):
                    raise
                self._note_busy()
                return False
            finally:
                if busy:
                    self._db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            written = len(self._pending)
            self._pending, self._pending_updates, self._pending_checkpoints = [], {}, []
            self._pending_views = {}
            self._note_free(f"; the {written} queued metric values are stored" if written else "")
            return True

    def update_run(self, run_id: int, **fields) -> None:
        """Set fields of a run; queued with the metrics (and written with them) while the store is locked."""
        allowed = {"status", "step", "elbo", "test_error", "test_rmse", "test_nlpd", "message", "config", "full_elbo"}
        bad = set(fields) - allowed
        if bad:
            raise RunStoreError(f"cannot update run fields {sorted(bad)}")
        fields["updated"] = time.time()
        if fields.get("status") == RunStatus.RUNNING:  # this process now writes the run: a later reader can check on it
            fields.update(writer_identity())
        with self._lock:
            self._pending_updates.setdefault(run_id, {}).update(fields)
            self.flush()

    def add_checkpoint(self, run_id: int, step: int, path: str | Path) -> None:
        """Record a checkpoint (queued with the metrics while the store is locked); a path inside the store's
        directory is kept relative to it, so a moved data directory keeps its checkpoints."""
        path = Path(path).absolute()
        try:
            stored = path.relative_to(self.path.parent.absolute()).as_posix()
        except ValueError:
            stored = str(path)
        with self._lock:
            self._pending_checkpoints.append((run_id, int(step), stored, time.time()))
            self.flush()

    def close(self) -> None:
        """Write what is queued, waiting up to `max_wait` seconds for another program's lock; if it stays locked,
        the queue is saved beside the store (`runs.sqlite.queued-*.json`) and written by the next `RunStore` opened
        on it, and a `RunStoreError` says so."""
        with self._lock:
            if self._closed:
                return
            try:
                start = time.time()
                while not self.flush():
                    if time.time() - start >= self.max_wait:
                        aside = self._set_aside()
                        raise RunStoreError(
                            f"the run store {self.path} stayed locked by another program for {time.time() - start:.0f}"
                            f" s; what it could not take ({len(self._pending)} metric values, run status, checkpoint "
                            f"records) is saved in {aside} and is stored the next time invlab opens the store; "
                            f"close the program that holds it (`fuser {self.path}` names it)")
                    time.sleep(min(1.0, self.max_wait))
            finally:
                self._closed = True
                self._db.close()

    def _set_aside(self) -> Path:
        """Save the queue as JSON beside the store (written atomically)."""
        aside = self.path.with_name(f"{self.path.name}.queued-{os.getpid()}-{time.time_ns()}.json")
        tmp = aside.with_name(aside.name + ".tmp")
        tmp.write_text(json.dumps({"metrics": self._pending, "checkpoints": self._pending_checkpoints,
                                   "updates": {str(k): v for k, v in self._pending_updates.items()}}))
        os.replace(tmp, aside)
        return aside

    def _take_back_set_aside(self) -> None:
        """Queue what an earlier process saved beside the store because the store was locked, and write it."""
        for aside in sorted(self.path.parent.glob(f"{self.path.name}.queued-*.json")):
            claimed = aside.with_name(f"{aside.name}.{os.getpid()}")
            try:
                os.rename(aside, claimed)  # atomic: of two processes opening the store, one takes each file
                saved = json.loads(claimed.read_text())
            except (OSError, ValueError):
                continue
            with self._lock:
                self._pending.extend(tuple(row) for row in saved["metrics"])
                self._pending_checkpoints.extend(tuple(row) for row in saved["checkpoints"])
                for run_id, fields in saved["updates"].items():
                    self._pending_updates.setdefault(int(run_id), {}).update(fields)
                written = self.flush()
            if written:
                claimed.unlink()
            else:  # still locked: it stays on disk for the next store opened, not queued twice
                with self._lock:
                    self._pending, self._pending_updates, self._pending_checkpoints = [], {}, []
                    self._busy_since = None
                os.rename(claimed, aside)

