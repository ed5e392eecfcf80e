"""The run store's connection: the schema (and columns added to older stores), opening read-write or read-only,
and waiting for another program's lock."""
from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Callable

from ... import settings
from .faults import NoRunStore, RunStoreError, StoreLocked, _is_busy, fault_message
from .views import VIEWS_SCHEMA
from .writers import WRITER_COLUMNS

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
CREATE TABLE IF NOT EXISTS checkpoints (
    run_id INTEGER NOT NULL REFERENCES runs(id), step INTEGER NOT NULL, path TEXT NOT NULL, created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS sweeps (
    id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL NOT NULL, updated REAL NOT NULL,
    name TEXT NOT NULL, spec TEXT NOT NULL, status TEXT NOT NULL, total INTEGER NOT NULL DEFAULT 0
);
""" + VIEWS_SCHEMA

# columns added after the first release: a store written before them gains them (empty) when opened
ADDED_COLUMNS = (("full_elbo", "REAL"), ("sweep_id", "INTEGER"), ("sweep_key", "TEXT"), ("sweep_info", "TEXT"),
                 ("owner", "TEXT"),  # owner: the logged-in user who started it, on a server with logins
                 ("name", "TEXT"))  # name: what a user's own loop called its run (invlab.train.watch)
SWEEP_ADDED_COLUMNS = (("owner", "TEXT"),)
# a run belongs to at most one (sweep, point × seed): a sweep's run is stored exactly once, whatever retries happen
SWEEP_INDEX = "CREATE UNIQUE INDEX IF NOT EXISTS runs_by_sweep_key ON runs (sweep_id, sweep_key)"
# a run holds one value per (step, metric): a second write of it replaces the first (`INSERT OR REPLACE`); it
# replaces the plain index `metrics_by_run` of stores written before, whose repeated rows keep their latest value
METRICS_INDEX = "CREATE UNIQUE INDEX IF NOT EXISTS metrics_once ON metrics (run_id, name, step)"


def _writable(path: Path) -> bool:
    """Whether `path` may be written: this user may (os.access), and its mode grants writing to someone. The mode
    check keeps a file or folder made read-only (chmod a-w) read-only for root too, whom os.access always lets."""
    try:
        return os.access(path, os.W_OK) and bool(path.stat().st_mode & 0o222)
    except OSError:
        return False


class StoreConnection:
    """The run store's one SQLite connection, shared by the threads of a process under `lock`: it opens the file
    (read-write, or read-only where it cannot be written), keeps its schema current, waits for another program's
    lock (`waiting`) and says when that lock starts and stops holding writes back (`on_busy`).

    Every repository of the store is handed this object; none opens a connection of its own."""

    def __init__(self, path: str | Path | None = None, *, create: bool = True,
                 on_busy: Callable[[str], None] | None = None, busy_timeout: float = 5.0,
                 retry_timeout: float = 0.05, max_wait: float = 600.0):
        """`create=False`: a store (and data directory) that does not exist yet is not made: `NoRunStore` says
        where it was looked for. `busy_timeout`: seconds a write waits for another program's lock before it is
        queued instead; `retry_timeout`: while busy, how long a queued write tries; `max_wait`: how long in total
        `waiting` waits before it gives up with a message."""
        self.path = Path(path) if path is not None else settings.data_dir(create=create) / "runs.sqlite"
        self.on_busy = on_busy
        self.busy_timeout, self.retry_timeout, self.max_wait = busy_timeout, retry_timeout, max_wait
        self.lock = threading.RLock()
        self.busy_since: float | None = None  # when another program's lock began holding writes back
        self.read_only = False  # opened read-only: listed and read, every write refused with the fix
        self._columns: dict[str, set[str]] = {}
        if self.path.is_dir():
            raise RunStoreError(f"the run store {self.path} is a directory, not a file; move it aside or set "
                                "INVLAB_DATA to another directory")
        if not create and not self.path.exists():
            raise NoRunStore(self.path, given=path is None and bool(os.environ.get("INVLAB_DATA")))
        if self.path.exists() and not (_writable(self.path) and _writable(self.path.parent)):
            self._open_read_only()  # SQLite would otherwise write (WAL files, the schema) or fail on the first read
            return
        self._open_writable()

    def _open_writable(self) -> None:
        """Open (or create) the file in WAL mode with the current schema; a store that turns out read-only is opened
        for reading."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, check_same_thread=False, timeout=self.busy_timeout)
        except (OSError, sqlite3.Error) as err:
            raise RunStoreError(fault_message(self.path, err)) from None
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
            self._add_missing_columns()
            self.db.execute("SELECT count(*) FROM runs").fetchone()  # a damaged table shows here, not mid-run
        except sqlite3.Error as err:
            self.db.close()
            if "readonly" in str(err) and self._tables_exist():
                self._open_read_only()
                return  # a read-only store still lists its runs; writing says what to do
            raise RunStoreError(fault_message(self.path, err)) from None

    def _open_read_only(self) -> None:
        """Open the file for reading only. In a folder that cannot be written, a store closed cleanly (no WAL
        content) is opened `immutable` (SQLite creates no lock files there); otherwise `mode=ro`, which reads what
        the WAL file holds."""
        uri = self.path.absolute().as_uri()
        wal = self.path.with_name(self.path.name + "-wal")
        modes = ["mode=ro", "immutable=1"]
        if not _writable(self.path.parent) and not (wal.exists() and wal.stat().st_size > 0):
            modes.reverse()
        err: sqlite3.Error | None = None
        for mode in modes:
            try:
                self.db = sqlite3.connect(f"{uri}?{mode}", uri=True, check_same_thread=False,
                                          timeout=self.busy_timeout)
                self.db.execute("SELECT count(*) FROM runs").fetchone()
            except sqlite3.Error as caught:
                err = caught
                continue
            self.read_only = True
            return
        raise RunStoreError(fault_message(self.path, err)) from None

    def has_columns(self, table: str) -> set[str]:
        """The columns `table` has in this file (an old store opened read-only lacks the newer ones)."""
        if table not in self._columns:
            with self.lock:
                self._columns[table] = {row[1] for row in self.db.execute(f"PRAGMA table_info({table})")}
        return self._columns[table]

    def tables(self) -> set[str]:
        """The tables this file has (an old store opened read-only has no views table)."""
        with self.lock:
            return {row[0] for row in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def _tables_exist(self) -> bool:
        try:
            with sqlite3.connect(f"file:{self.path}?mode=ro", uri=True) as db:
                return db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'runs'").fetchone()[0] == 1
        except sqlite3.Error:
            return False

    def _add_missing_columns(self) -> None:
        """A store written before a column existed gets it (empty for its old runs)."""
        for table, added in (("runs", ADDED_COLUMNS), ("sweeps", SWEEP_ADDED_COLUMNS)):
            have = {row[1] for row in self.db.execute(f"PRAGMA table_info({table})")}
            for name, kind in (*added, *WRITER_COLUMNS.items()):
                if name in have:
                    continue
                try:
                    with self.db:
                        self.db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
                except sqlite3.OperationalError as err:  # another process added it first
                    if "duplicate column" not in str(err):
                        raise
        with self.db:
            self.db.execute(SWEEP_INDEX)
        if self.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'metrics_once'").fetchone() is None:
            with self.db:  # one transaction: another process opening the store meanwhile sees all of it or none
                self.db.execute("DELETE FROM metrics WHERE rowid NOT IN (SELECT max(rowid) FROM metrics "
                                "GROUP BY run_id, name, step)")
                self.db.execute(METRICS_INDEX)
                self.db.execute("DROP INDEX IF EXISTS metrics_by_run")

    def note_free(self, what: str = "") -> None:
        """The lock that held writes back has been let go: say so (with `what` was written meanwhile)."""
        if self.busy_since is not None:
            waited, self.busy_since = time.time() - self.busy_since, None
            self._say(f"the run store {self.path} is writable again after {waited:.0f} s{what}")

    def note_busy(self, waiting: str = "training goes on and its metrics wait in memory until the store can be "
                                       "written") -> None:
        """Another program's lock holds writes back: say so once, with what happens meanwhile (`waiting`)."""
        if self.busy_since is None:
            self.busy_since = time.time()
            self._say(f"the run store {self.path} is locked by another program; {waiting} (`fuser {self.path}` "
                      "names the program)")

    def _say(self, message: str) -> None:
        if self.on_busy is not None:
            self.on_busy(message)

    def waiting(self, write: Callable, what: str):
        """Run `write` in a transaction, waiting (with a message) up to `max_wait` seconds for the lock; `what`
        ("to create the run") completes the message given when it stays locked."""
        start = time.time()
        while True:
            try:
                with self.db:
                    result = write()
                self.note_free()
                return result
            except sqlite3.OperationalError as err:
                if not _is_busy(err):
                    raise
                self.note_busy(f"waiting up to {self.max_wait:.0f} s for it {what}")
                if time.time() - start >= self.max_wait:
                    raise StoreLocked(
                        f"the run store {self.path} stayed locked by another program for {time.time() - start:.0f} "
                        f"s, so there was no way {what}; close the program that holds it (`fuser {self.path}` "
                        "names it) and try again") from None
