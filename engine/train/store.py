"""The run store: runs, their configs, status, per-step metrics and checkpoint paths in SQLite (WAL).

Metrics are buffered in memory and written by `flush()` in one transaction; with WAL a process killed
mid-run loses at most what was logged since the last flush, and never corrupts what was committed.
One connection is shared by the threads of a process under a lock (the dashboard trains in a
background thread and reads from the server thread).

Faults of the store itself never become tracebacks: each `sqlite3` error is turned into a `RunStoreError`
that says what is wrong and what to do (a damaged file is never rewritten or "repaired": move it aside). When
another program holds the write lock, writes are not lost and training does not stop: metrics, run updates and
checkpoint records stay queued in memory (`pending`) and go out with the next write that gets the lock;
`on_busy(message)` hears when that starts and ends. Only `create_run` and `close` wait for the lock, up to
`max_wait` seconds.

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

import functools
import json
import os
import socket
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

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
CREATE TABLE IF NOT EXISTS sweeps (
    id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL NOT NULL, updated REAL NOT NULL,
    name TEXT NOT NULL, spec TEXT NOT NULL, status TEXT NOT NULL, total INTEGER NOT NULL DEFAULT 0
);
"""

# columns added after the first release: a store written before them gains them (empty) when opened
ADDED_COLUMNS = (("full_elbo", "REAL"), ("sweep_id", "INTEGER"), ("sweep_key", "TEXT"), ("sweep_info", "TEXT"))
# a run belongs to at most one (sweep, point × seed): a sweep's run is stored exactly once, whatever retries happen
SWEEP_INDEX = "CREATE UNIQUE INDEX IF NOT EXISTS runs_by_sweep_key ON runs (sweep_id, sweep_key)"


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
    """Turn the store's sqlite3 errors into a `RunStoreError` with the fix."""

    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as err:
            raise RunStoreError(fault_message(self.path, err)) from None

    return guarded


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
    sweep_id: int | None = None  # the sweep this run belongs to, if any
    sweep_key: str | None = None  # its point × seed within that sweep (unique per sweep)

    def summary(self) -> dict:
        return {k: getattr(self, k) for k in ("id", "model", "dataset", "status", "step", "elbo", "test_error",
                                              "test_rmse", "test_nlpd", "full_elbo")}


@dataclass
class SweepRecord:
    id: int
    created: float
    updated: float
    name: str
    spec: str  # the SweepSpec as JSON
    status: str  # running, interrupted, finished
    total: int  # planned runs

    def summary(self) -> dict:
        return {k: getattr(self, k) for k in ("id", "name", "status", "total", "created", "updated")}


class RunStore:
    busy_timeout = 5.0  # seconds a write waits for another program's lock before it is queued instead
    retry_timeout = 0.05  # while the store is busy, a write tries this long and is queued again
    max_wait = 600.0  # create_run and close wait this long in total for the lock, then give up with a message

    def __init__(self, path: str | Path | None = None, *, on_busy: Callable[[str], None] | None = None):
        self.path = Path(path) if path is not None else settings.data_dir() / "runs.sqlite"
        self.on_busy = on_busy
        self._lock = threading.RLock()
        self._pending: list[tuple[int, int, str, float]] = []
        self._pending_updates: dict[int, dict] = {}  # run id -> fields not yet written
        self._pending_checkpoints: list[tuple[int, int, str, float]] = []
        self._busy_since: float | None = None
        self._closed = False
        if self.path.is_dir():
            raise RunStoreError(f"the run store {self.path} is a directory, not a file; move it aside or set "
                                "INVLAB_DATA to another directory")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=self.busy_timeout)
        except (OSError, sqlite3.Error) as err:
            raise RunStoreError(fault_message(self.path, err)) from None
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(SCHEMA)
            self._add_missing_columns()
            self._db.execute("SELECT count(*) FROM runs").fetchone()  # a damaged table shows here, not mid-run
        except sqlite3.Error as err:
            self._db.close()
            if "readonly" in str(err) and self._tables_exist():
                self._db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
                return  # a read-only store still lists its runs; writing says what to do
            raise RunStoreError(fault_message(self.path, err)) from None
        self._take_back_set_aside()
        self.mark_killed_runs()

    def _tables_exist(self) -> bool:
        try:
            with sqlite3.connect(f"file:{self.path}?mode=ro", uri=True) as db:
                return db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'runs'").fetchone()[0] == 1
        except sqlite3.Error:
            return False

    def _add_missing_columns(self) -> None:
        """A store written before a column existed gets it (empty for its old runs)."""
        have = {row[1] for row in self._db.execute("PRAGMA table_info(runs)")}
        for name, kind in (*ADDED_COLUMNS, *WRITER_COLUMNS.items()):
            if name in have:
                continue
            try:
                with self._db:
                    self._db.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")
            except sqlite3.OperationalError as err:  # another process added it first
                if "duplicate column" not in str(err):
                    raise
        with self._db:
            self._db.execute(SWEEP_INDEX)

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
    @_guarded
    def create_run(self, config_json: str, model: str, dataset: str, status: str = "created") -> int:
        now = time.time()
        with self._lock:
            return int(self._waiting(lambda: self._db.execute(
                "INSERT INTO runs (created, updated, model, dataset, config, status) VALUES (?, ?, ?, ?, ?, ?)",
                (now, now, model, dataset, config_json, status)).lastrowid, "to create the run"))

    def log_metrics(self, run_id: int, step: int, metrics: dict[str, float]) -> None:
        """Buffer metrics for one step; they reach the database at the next `flush()`."""
        with self._lock:
            self._pending.extend((run_id, int(step), name, float(value)) for name, value in metrics.items())

    @property
    def pending(self) -> int:
        """Metric rows, run updates and checkpoint records waiting to be written."""
        return len(self._pending) + len(self._pending_updates) + len(self._pending_checkpoints)

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
                    self._db.executemany("INSERT INTO metrics (run_id, step, name, value) VALUES (?, ?, ?, ?)",
                                         self._pending)
                    for run_id, fields in self._pending_updates.items():
                        cols = ", ".join(f"{k} = ?" for k in fields)
                        self._db.execute(f"UPDATE runs SET {cols} WHERE id = ?", (*fields.values(), run_id))
                    for run_id, step, path, created in self._pending_checkpoints:  # the same file again: one record
                        self._db.execute("DELETE FROM checkpoints WHERE run_id = ? AND step = ? AND path = ?",
                                         (run_id, step, path))
                        self._db.execute("INSERT INTO checkpoints (run_id, step, path, created) VALUES (?, ?, ?, ?)",
                                         (run_id, step, path, created))
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
            self._note_free(f"; the {written} queued metric values are stored" if written else "")
            return True

    def _note_free(self, what: str = "") -> None:
        if self._busy_since is not None:
            waited, self._busy_since = time.time() - self._busy_since, None
            self._say(f"the run store {self.path} is writable again after {waited:.0f} s{what}")

    def _note_busy(self, waiting: str = "training goes on and its metrics wait in memory until the store can be "
                                        "written") -> None:
        if self._busy_since is None:
            self._busy_since = time.time()
            self._say(f"the run store {self.path} is locked by another program; {waiting} (`fuser {self.path}` "
                      "names the program)")

    def _say(self, message: str) -> None:
        if self.on_busy is not None:
            self.on_busy(message)

    def _waiting(self, write: Callable, what: str):
        """Run `write` in a transaction, waiting (with a message) up to `max_wait` seconds for the lock."""
        start = time.time()
        while True:
            try:
                with self._db:
                    result = write()
                self._note_free()
                return result
            except sqlite3.OperationalError as err:
                if not _is_busy(err):
                    raise
                self._note_busy(f"waiting up to {self.max_wait:.0f} s for it {what}")
                if time.time() - start >= self.max_wait:
                    raise RunStoreError(
                        f"the run store {self.path} stayed locked by another program for {time.time() - start:.0f} "
                        f"s, so there was no way {what}; close the program that holds it (`fuser {self.path}` "
                        "names it) and try again") from None

    def update_run(self, run_id: int, **fields) -> None:
        """Set fields of a run; queued with the metrics (and written with them) while the store is locked."""
        allowed = {"status", "step", "elbo", "test_error", "test_rmse", "test_nlpd", "message", "config", "full_elbo"}
        bad = set(fields) - allowed
        if bad:
            raise RunStoreError(f"cannot update run fields {sorted(bad)}")
        fields["updated"] = time.time()
        if fields.get("status") == "running":  # this process now writes the run: a later reader can check on it
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

    @_guarded
    def forget_checkpoint(self, run_id: int, step: int, path: Path) -> None:
        """Remove a checkpoint file and its record (older checkpoints beyond `keep_checkpoints`)."""
        with self._lock, self._db:
            for stored_step, stored in self._db.execute("SELECT step, path FROM checkpoints WHERE run_id = ? AND "
                                                        "step = ?", (int(run_id), int(step))).fetchall():
                if self.resolve_checkpoint(stored) == path:
                    self._db.execute("DELETE FROM checkpoints WHERE run_id = ? AND step = ? AND path = ?",
                                     (int(run_id), int(stored_step), stored))
        path.unlink(missing_ok=True)

    @_guarded
    def truncate(self, run_id: int, after_step: int) -> None:
        """Drop metrics logged after `after_step` (a resumed run continues from its last checkpoint)."""
        with self._lock, self._db:
            self._db.execute("DELETE FROM metrics WHERE run_id = ? AND step > ?", (run_id, int(after_step)))

    # -- reading ------------------------------------------------------------------------------------------------
    @_guarded
    def get_run(self, run_id: int) -> RunRecord:
        if int(run_id).bit_length() > 63:  # beyond SQLite's integers: no such run, rather than an OverflowError
            raise RunStoreError(f"no run with id {run_id} in {self.path}; `invlab runs` lists the stored runs")
        self.mark_killed_runs()
        found = self._records(RunRecord, "runs", "WHERE id = ?", (int(run_id),))
        if not found:
            raise RunStoreError(f"no run with id {run_id} in {self.path}; `invlab runs` lists the stored runs")
        return found[0]

    @_guarded
    def list_runs(self, limit: int | None = None) -> list[RunRecord]:
        self.mark_killed_runs()
        return self._records(RunRecord, "runs", "ORDER BY id DESC" + (f" LIMIT {int(limit)}" if limit else ""))

    def _records(self, record: type, table: str, tail: str, args: tuple = ()) -> list:
        """Rows of `table` as `record` dataclasses (its fields are the columns read), selected by `tail`."""
        with self._lock:
            rows = self._db.execute(f"SELECT {', '.join(record.__dataclass_fields__)} FROM {table} {tail}",
                                    args).fetchall()
        return [record(*row) for row in rows]

    @_guarded
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

    @_guarded
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

    # -- sweeps ---------------------------------------------------------------------------------------------------
    @_guarded
    def create_sweep(self, name: str, spec_json: str, total: int = 0) -> int:
        now = time.time()
        with self._lock, self._db:
            cur = self._db.execute("INSERT INTO sweeps (created, updated, name, spec, status, total) "
                                   "VALUES (?, ?, ?, ?, ?, ?)", (now, now, name, spec_json, "created", int(total)))
            return int(cur.lastrowid)

    @_guarded
    def update_sweep(self, sweep_id: int, **fields) -> None:
        bad = set(fields) - {"status", "total", "spec"}
        if bad:
            raise RunStoreError(f"cannot update sweep fields {sorted(bad)}")
        fields["updated"] = time.time()
        cols = ", ".join(f"{k} = ?" for k in fields)
        with self._lock, self._db:
            self._db.execute(f"UPDATE sweeps SET {cols} WHERE id = ?", (*fields.values(), int(sweep_id)))

    @_guarded
    def get_sweep(self, sweep_id: int) -> SweepRecord:
        found = self._records(SweepRecord, "sweeps", "WHERE id = ?", (int(sweep_id),))
        if not found:
            raise RunStoreError(f"no sweep with id {sweep_id} in {self.path}; `invlab sweeps` lists the stored sweeps")
        return found[0]

    @_guarded
    def list_sweeps(self, limit: int | None = None) -> list[SweepRecord]:
        return self._records(SweepRecord, "sweeps", "ORDER BY id DESC" + (f" LIMIT {int(limit)}" if limit else ""))

    @_guarded
    def sweep_runs(self, sweep_id: int) -> list[RunRecord]:
        """The runs stored for a sweep, in the order they were stored."""
        return self._records(RunRecord, "runs", "WHERE sweep_id = ? ORDER BY id", (int(sweep_id),))

    @_guarded
    def sweep_info(self, run_id: int) -> dict:
        """What a sweep's task reported beside the figures (likelihood, estimator, learned values, timings)."""
        with self._lock:
            row = self._db.execute("SELECT sweep_info FROM runs WHERE id = ?", (int(run_id),)).fetchone()
        return json.loads(row[0]) if row and row[0] else {}

    @_guarded
    def store_sweep_run(self, sweep_id: int, key: str, *, config_json: str, model: str, dataset: str, status: str,
                        step: int, figures: dict, history: dict, info: dict, message: str | None = None
                        ) -> tuple[int, bool]:
        """Store one finished (or failed) run of a sweep with its metrics, in one transaction: (run id, stored now).

        A (sweep, key) already stored as finished is never stored again (its id comes back with False); a failed one
        is replaced by this attempt. `history` is {metric: (steps, values)}; `figures` the run's final figures."""
        allowed = {"elbo", "test_error", "test_rmse", "test_nlpd", "full_elbo"}
        figures = {k: v for k, v in figures.items() if k in allowed and v is not None}
        now = time.time()
        with self._lock, self._db:
            row = self._db.execute("SELECT id, status FROM runs WHERE sweep_id = ? AND sweep_key = ?",
                                   (int(sweep_id), key)).fetchone()
            if row is not None and row[1] == "finished":
                return int(row[0]), False
            cols = {"updated": now, "model": model, "dataset": dataset, "config": config_json, "status": status,
                    "step": int(step), "message": message, "sweep_info": json.dumps(info), **figures}
            if row is None:
                cols.update(created=now, sweep_id=int(sweep_id), sweep_key=key)
                cur = self._db.execute(f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                                       tuple(cols.values()))
                run_id = int(cur.lastrowid)
            else:
                run_id = int(row[0])
                self._db.execute("DELETE FROM metrics WHERE run_id = ?", (run_id,))
                self._db.execute(f"UPDATE runs SET {', '.join(f'{k} = ?' for k in cols)} WHERE id = ?",
                                 (*cols.values(), run_id))
            rows = [(run_id, int(s), name, float(v)) for name, (steps, values) in history.items()
                    for s, v in zip(steps, values)]
            self._db.executemany("INSERT INTO metrics (run_id, step, name, value) VALUES (?, ?, ?, ?)", rows)
        return run_id, True

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

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
