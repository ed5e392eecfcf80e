"""The run store: runs, their configs, status, per-step metrics and checkpoint paths in SQLite (WAL).

Metrics are buffered in memory and written by `flush()` in one transaction; with WAL a process killed
mid-run loses at most what was logged since the last flush, and never corrupts what was committed.
One connection is shared by the threads of a process under a lock (the dashboard trains in a
background thread and reads from the server thread).

A run's `elbo` is the last minibatch estimate logged while it trained; `full_elbo` is the ELBO over the whole
training set computed when it finished (`Trainer.full_elbo`), the figure to compare runs by (on the same data,
likelihood and estimator).

Checkpoint paths are stored relative to the store's directory (the data directory), so a moved data directory
keeps its checkpoints; absolute paths written by older versions are still found there after a move.

A run marked `running` records its writer: process id, host, and (on Linux) the boot and the process's start time,
so a reused process id is not mistaken for it. Opening the store, or reading runs from it, turns a `running` run
whose writer is gone (killed, crashed, the machine rebooted) into `killed`, which can be resumed from its latest
checkpoint. A writer on another host is judged by its heartbeat (`updated`, refreshed at least every
`HEARTBEAT_SECONDS` while it trains): silent for `STALE_SECONDS`, it is taken for dead.
"""
from __future__ import annotations

import os
import socket
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .. import settings
from ..errors import InvlabError

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created REAL NOT NULL, updated REAL NOT NULL,
    model TEXT NOT NULL, dataset TEXT NOT NULL, config TEXT NOT NULL,
    status TEXT NOT NULL, step INTEGER NOT NULL DEFAULT 0,
    elbo REAL, test_error REAL, test_rmse REAL, test_nlpd REAL, message TEXT, full_elbo REAL
);
CREATE TABLE IF NOT EXISTS metrics (
    run_id INTEGER NOT NULL REFERENCES runs(id), step INTEGER NOT NULL, name TEXT NOT NULL, value REAL
);
CREATE INDEX IF NOT EXISTS metrics_by_run ON metrics (run_id, name, step);
CREATE TABLE IF NOT EXISTS checkpoints (
    run_id INTEGER NOT NULL REFERENCES runs(id), step INTEGER NOT NULL, path TEXT NOT NULL, created REAL NOT NULL
);
"""


HEARTBEAT_SECONDS = 30.0  # a training process touches its run at least this often (between steps)
STALE_SECONDS = 1800.0  # a writer on another host silent this long is taken for dead
WRITER_COLUMNS = {"writer_pid": "INTEGER", "writer_host": "TEXT", "writer_token": "TEXT"}


class RunStoreError(InvlabError):
    pass


def _process_token(pid: int) -> str | None:
    """This boot's id and the process's start time (Linux): a process id reused later gets another token."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        stat = Path(f"/proc/{int(pid)}/stat").read_text()
        return f"{boot}:{stat.rsplit(')', 1)[1].split()[19]}"  # field 22, starttime (the name may hold spaces)
    except (OSError, IndexError, ValueError):
        return None


def writer_identity() -> dict:
    """The columns that name the current process as a run's writer."""
    pid = os.getpid()
    return {"writer_pid": pid, "writer_host": socket.gethostname(), "writer_token": _process_token(pid)}


def writer_alive(pid: int, host: str | None, token: str | None) -> bool | None:
    """Whether the writer process still runs: True / False, or None where this machine cannot tell."""
    if host != socket.gethostname():
        return None
    if token is not None:
        current = _process_token(pid)
        if current is None and not Path("/proc/self/stat").exists():
            return None  # /proc not readable here
        return current == token
    if os.name != "posix":
        return None
    try:
        os.kill(int(pid), 0)  # signal 0: existence only
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class RunRecord:
    id: int
    created: float
    updated: float
    model: str
    dataset: str
    config: str
    status: str
    step: int
    elbo: float | None
    test_error: float | None
    test_rmse: float | None
    test_nlpd: float | None
    message: str | None
    full_elbo: float | None = None  # over the whole training set, at the end

    def summary(self) -> dict:
        return {k: getattr(self, k) for k in ("id", "model", "dataset", "status", "step", "elbo", "test_error",
                                              "test_rmse", "test_nlpd", "full_elbo")}


class RunStore:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else settings.data_dir() / "runs.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._pending: list[tuple[int, int, str, float]] = []
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(SCHEMA)
            self._add_missing_columns()
            self._add_writer_columns()
        except sqlite3.DatabaseError as err:
            raise RunStoreError(f"the run store {self.path} cannot be opened ({err}). It was left untouched; move it "
                                "aside (or point INVLAB_DATA elsewhere) to start a new store.") from None
        self.mark_killed_runs()

    def _add_missing_columns(self) -> None:
        """A store written before a column existed gets it (empty for its old runs)."""
        have = {row[1] for row in self._db.execute("PRAGMA table_info(runs)")}
        if "full_elbo" not in have:
            try:
                with self._db:
                    self._db.execute("ALTER TABLE runs ADD COLUMN full_elbo REAL")
            except sqlite3.OperationalError as err:  # another process added it first
                if "duplicate column" not in str(err):
                    raise

    def _add_writer_columns(self) -> None:
        have = {row[1] for row in self._db.execute("PRAGMA table_info(runs)")}
        for name, kind in WRITER_COLUMNS.items():
            if name in have:
                continue
            try:
                with self._db:
                    self._db.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")
            except sqlite3.OperationalError as err:  # another process added it first
                if "duplicate column" not in str(err):
                    raise

    def mark_killed_runs(self) -> list[int]:
        """Runs marked `running` whose writer process is gone become `killed` (resumable); returns their ids.

        Best effort: a store that cannot be written (read-only, locked) is left as it is."""
        now, found = time.time(), []
        try:
            with self._lock:
                rows = self._db.execute("SELECT id, updated, step, writer_pid, writer_host, writer_token FROM runs "
                                        "WHERE status = 'running' AND writer_pid IS NOT NULL").fetchall()
                for run_id, updated, step, pid, host, token in rows:
                    alive = writer_alive(pid, host, token)
                    if alive is None:
                        alive = now - updated < STALE_SECONDS
                    if alive:
                        continue
                    message = (f"its process (pid {pid} on {host}) ended while it trained, at or after step {step}; "
                               f"resume with: invlab train --resume {run_id}")
                    with self._db:
                        cur = self._db.execute("UPDATE runs SET status = 'killed', message = ?, updated = ? "
                                               "WHERE id = ? AND status = 'running' AND writer_pid = ?",
                                               (message, now, run_id, pid))
                    if cur.rowcount:
                        found.append(int(run_id))
        except sqlite3.DatabaseError:  # read-only or locked: the statuses are corrected by a later reader
            pass
        return found

    def live_writer(self, run_id: int) -> str | None:
        """"pid P on HOST" when another process still trains run `run_id` (marked running, its writer alive or,
        on another host, heard from lately); None otherwise."""
        self.mark_killed_runs()
        with self._lock:
            row = self._db.execute("SELECT status, writer_pid, writer_host, writer_token FROM runs WHERE id = ?",
                                   (int(run_id),)).fetchone()
        if row is None or row[0] != "running" or row[1] is None:
            return None
        status, pid, host, token = row
        if (pid, host, token) == tuple(writer_identity().values()):
            return None  # this process: its own trainer, abandoned or about to be replaced
        return f"pid {pid} on {host}"

    # -- writing ------------------------------------------------------------------------------------------------
    def create_run(self, config_json: str, model: str, dataset: str, status: str = "created") -> int:
        now = time.time()
        with self._lock, self._db:
            cur = self._db.execute(
                "INSERT INTO runs (created, updated, model, dataset, config, status) VALUES (?, ?, ?, ?, ?, ?)",
                (now, now, model, dataset, config_json, status))
            return int(cur.lastrowid)

    def log_metrics(self, run_id: int, step: int, metrics: dict[str, float]) -> None:
        """Buffer metrics for one step; they reach the database at the next `flush()`."""
        with self._lock:
            self._pending.extend((run_id, int(step), name, float(value)) for name, value in metrics.items())

    def flush(self) -> None:
        with self._lock:
            if not self._pending:
                return
            rows, self._pending = self._pending, []
            with self._db:
                self._db.executemany("INSERT INTO metrics (run_id, step, name, value) VALUES (?, ?, ?, ?)", rows)

    def update_run(self, run_id: int, **fields) -> None:
        allowed = {"status", "step", "elbo", "test_error", "test_rmse", "test_nlpd", "message", "config", "full_elbo"}
        bad = set(fields) - allowed
        if bad:
            raise RunStoreError(f"cannot update run fields {sorted(bad)}")
        fields["updated"] = time.time()
        if fields.get("status") == "running":  # this process now writes the run: a later reader can check on it
            fields.update(writer_identity())
        cols = ", ".join(f"{k} = ?" for k in fields)
        with self._lock, self._db:
            self._db.execute(f"UPDATE runs SET {cols} WHERE id = ?", (*fields.values(), run_id))

    def add_checkpoint(self, run_id: int, step: int, path: str | Path) -> None:
        """Record a checkpoint; a path inside the store's directory is kept relative to it."""
        path = Path(path).absolute()
        try:
            stored = path.relative_to(self.path.parent.absolute()).as_posix()
        except ValueError:
            stored = str(path)
        with self._lock, self._db:
            self._db.execute("DELETE FROM checkpoints WHERE run_id = ? AND step = ? AND path = ?",
                             (run_id, int(step), stored))  # the same file written again: one record
            self._db.execute("INSERT INTO checkpoints (run_id, step, path, created) VALUES (?, ?, ?, ?)",
                             (run_id, int(step), stored, time.time()))

    def forget_checkpoint(self, run_id: int, step: int, path: Path) -> None:
        """Remove a checkpoint file and its record (older checkpoints beyond `keep_checkpoints`)."""
        with self._lock, self._db:
            for stored_step, stored in self._db.execute("SELECT step, path FROM checkpoints WHERE run_id = ? AND "
                                                        "step = ?", (int(run_id), int(step))).fetchall():
                if self.resolve_checkpoint(stored) == path:
                    self._db.execute("DELETE FROM checkpoints WHERE run_id = ? AND step = ? AND path = ?",
                                     (int(run_id), int(stored_step), stored))
        path.unlink(missing_ok=True)

    def truncate(self, run_id: int, after_step: int) -> None:
        """Drop metrics logged after `after_step` (a resumed run continues from its last checkpoint)."""
        with self._lock, self._db:
            self._db.execute("DELETE FROM metrics WHERE run_id = ? AND step > ?", (run_id, int(after_step)))

    # -- reading ------------------------------------------------------------------------------------------------
    def get_run(self, run_id: int) -> RunRecord:
        self.mark_killed_runs()
        with self._lock:
            row = self._db.execute(f"SELECT {', '.join(RunRecord.__dataclass_fields__)} FROM runs WHERE id = ?",
                                   (int(run_id),)).fetchone()
        if row is None:
            raise RunStoreError(f"no run with id {run_id} in {self.path}; `invlab runs` lists the stored runs")
        return RunRecord(*row)

    def list_runs(self, limit: int | None = None) -> list[RunRecord]:
        sql = f"SELECT {', '.join(RunRecord.__dataclass_fields__)} FROM runs ORDER BY id DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        self.mark_killed_runs()
        with self._lock:
            return [RunRecord(*row) for row in self._db.execute(sql).fetchall()]

    def metrics(self, run_id: int, names: list[str] | None = None) -> dict[str, tuple[list[int], list[float]]]:
        with self._lock:
            rows = self._db.execute("SELECT name, step, value FROM metrics WHERE run_id = ? ORDER BY name, step",
                                    (int(run_id),)).fetchall()
        out: dict[str, tuple[list[int], list[float]]] = {}
        for name, step, value in rows:
            if names is None or name in names:
                steps, values = out.setdefault(name, ([], []))
                steps.append(step)
                values.append(value)
        return out

    def resolve_checkpoint(self, stored: str) -> Path:
        """Where a recorded checkpoint path is now: relative ones under the store's directory; an absolute one
        written by an older version that no longer exists is looked for under `checkpoints/` here (a moved data
        directory)."""
        path = Path(stored)
        if not path.is_absolute():
            return self.path.parent / path
        if not path.exists() and "checkpoints" in path.parts:
            parts = path.parts
            tail = parts[len(parts) - 1 - parts[::-1].index("checkpoints"):]
            moved = self.path.parent.joinpath(*tail)
            if moved.exists():
                return moved
        return path

    def checkpoints(self, run_id: int) -> list[tuple[int, Path]]:
        """A run's recorded checkpoints, newest first, as (step, path now); the files may be missing."""
        with self._lock:
            rows = self._db.execute("SELECT step, path FROM checkpoints WHERE run_id = ? "
                                    "ORDER BY step DESC, created DESC, rowid DESC", (int(run_id),)).fetchall()
        return [(int(step), self.resolve_checkpoint(path)) for step, path in rows]

    def latest_checkpoint(self, run_id: int) -> tuple[int, Path] | None:
        """The newest recorded checkpoint whose file exists (not checked further; `Trainer.resume` reads it)."""
        for step, path in self.checkpoints(run_id):
            if path.exists():
                return step, path
        return None

    def checkpoint_dir(self, run_id: int) -> Path:
        path = self.path.parent / "checkpoints" / f"run_{int(run_id)}"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def close(self) -> None:
        with self._lock:
            self.flush()
            self._db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
