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
    """The part of `RunStore` that opens the SQLite file, keeps its schema current and waits for locks."""

    busy_timeout = 5.0  # seconds a write waits for another program's lock before it is queued instead
    retry_timeout = 0.05  # while the store is busy, a write tries this long and is queued again
    max_wait = 600.0  # create_run and close wait this long in total for the lock, then give up with a message

    def __init__(self, path: str | Path | None = None, *, on_busy: Callable[[str], None] | None = None,
                 create: bool = True, owner: str | None = None, admin: bool = False):
        """`create=False`: a store (and data directory) that does not exist yet is not made: `NoRunStore` says
        where it was looked for (what listing commands want, so a mistyped INVLAB_DATA is not silently created).
        `owner`: the logged-in user it is opened for (see owners.py); `admin`: that user sees every user's runs."""
        self.owner, self.admin = owner, bool(admin)
        self.path = Path(path) if path is not None else settings.data_dir(create=create) / "runs.sqlite"
        self.on_busy = on_busy
        self._lock = threading.RLock()
        self._pending: list[tuple[int, int, str, float]] = []
        self._pending_updates: dict[int, dict] = {}  # run id -> fields not yet written
        self._pending_checkpoints: list[tuple[int, int, str, float]] = []
        self._pending_views: dict[tuple[int, str], tuple] = {}  # (run id, view name) -> (step, view): the newest
        self._busy_since: float | None = None
        self._closed = False
        self._columns: dict[str, set[str]] = {}
        self.read_only = False  # opened read-only: listed and read, every write refused with the fix
        if self.path.is_dir():
            raise RunStoreError(f"the run store {self.path} is a directory, not a file; move it aside or set "
                                "INVLAB_DATA to another directory")
        if not create and not self.path.exists():
            raise NoRunStore(self.path, given=path is None and bool(os.environ.get("INVLAB_DATA")))
        if self.path.exists() and not (_writable(self.path) and _writable(self.path.parent)):
            self._open_read_only()  # SQLite would otherwise write (WAL files, the schema) or fail on the first read
            return
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
                self._open_read_only()
                return  # a read-only store still lists its runs; writing says what to do
            raise RunStoreError(fault_message(self.path, err)) from None
        self._take_back_set_aside()
        self.mark_killed_runs()

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
                self._db = sqlite3.connect(f"{uri}?{mode}", uri=True, check_same_thread=False,
                                           timeout=self.busy_timeout)
                self._db.execute("SELECT count(*) FROM runs").fetchone()
            except sqlite3.Error as caught:
                err = caught
                continue
            self.read_only = True
            return
        raise RunStoreError(fault_message(self.path, err)) from None

    def _has_columns(self, table: str) -> set[str]:
        """The columns `table` has in this file (an old store opened read-only lacks the newer ones)."""
        if table not in self._columns:
            with self._lock:
                self._columns[table] = {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}
        return self._columns[table]

    def _tables_exist(self) -> bool:
        try:
            with sqlite3.connect(f"file:{self.path}?mode=ro", uri=True) as db:
                return db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'runs'").fetchone()[0] == 1
        except sqlite3.Error:
            return False

    def _add_missing_columns(self) -> None:
        """A store written before a column existed gets it (empty for its old runs)."""
        for table, added in (("runs", ADDED_COLUMNS), ("sweeps", SWEEP_ADDED_COLUMNS)):
            have = {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}
            for name, kind in (*added, *WRITER_COLUMNS.items()):
                if name in have:
                    continue
                try:
                    with self._db:
                        self._db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
                except sqlite3.OperationalError as err:  # another process added it first
                    if "duplicate column" not in str(err):
                        raise
        with self._db:
            self._db.execute(SWEEP_INDEX)
        if self._db.execute("SELECT 1 FROM sqlite_master WHERE name = 'metrics_once'").fetchone() is None:
            with self._db:  # one transaction: another process opening the store meanwhile sees all of it or none
                self._db.execute("DELETE FROM metrics WHERE rowid NOT IN (SELECT max(rowid) FROM metrics "
                                 "GROUP BY run_id, name, step)")
                self._db.execute(METRICS_INDEX)
                self._db.execute("DROP INDEX IF EXISTS metrics_by_run")

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
                    raise StoreLocked(
                        f"the run store {self.path} stayed locked by another program for {time.time() - start:.0f} "
                        f"s, so there was no way {what}; close the program that holds it (`fuser {self.path}` "
                        "names it) and try again") from None


    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
