"""The run store: runs, their configs, status, per-step metrics and checkpoint paths in SQLite (WAL).

Metrics are buffered in memory and written by `flush()` in one transaction; with WAL a process killed
mid-run loses at most what was logged since the last flush, and never corrupts what was committed.
One connection is shared by the threads of a process under a lock (the dashboard trains in a
background thread and reads from the server thread).

Faults of the store itself never become tracebacks: each `sqlite3` error is turned into a `RunStoreError`
that says what is wrong and what to do (a damaged file is never rewritten or "repaired": move it aside). When
another program holds the write lock, writes are not lost and training does not stop: metrics, run updates and
checkpoint records stay queued in memory (`pending`) and go out with the next write that gets the lock;
`on_busy(message)` hears when that starts and ends. Only `store.runs.create` and `close` wait for the lock, up to
`max_wait` seconds.

A run's `elbo` is the last minibatch estimate logged while it trained; `full_elbo` is the ELBO over the whole
training set computed when it finished (`trainer.report.full_elbo`), the figure to compare runs by (on the same data,
likelihood and estimator).

Checkpoint paths are stored relative to the store's directory (the data directory), so a moved data directory
keeps its checkpoints; absolute paths written by older versions are still found there after a move.

A run marked `running` records its writer: process id, host, and (on Linux) the boot and the process's start time,
so a reused process id is not mistaken for it. Opening the store, or reading runs from it, turns a `running` run
whose writer is gone (killed, crashed, the machine rebooted) into `killed`, which can be resumed from its latest
checkpoint. A writer on another host is judged by its heartbeat (`updated`, refreshed at least every
`HEARTBEAT_SECONDS` while it trains): silent for `STALE_SECONDS`, it is taken for dead. A run still `created` (it
never trained a step) records the process that made it the same way, and becomes `interrupted` once that process is
gone, so it is not listed as waiting to train for ever.

Metrics hold one value per (run, step, name): writing one again replaces it (a unique index; a store written before
it keeps the latest of its repeated rows when first opened).

A run keeps the latest snapshot of each of its diagnostics views (`store.views.save`, `store.views.read`;
runstore/views.py), so a page that opens it, or follows it while another process writes it, shows its pictures too.

A run has one writer: `store.leases.claim_run` takes it for training in one transaction (a lease on those writer
columns, see `runstore/leases.py`); a second claimant is refused with a message naming the holder's process and host.

The store is one connection (`runstore/connection.py`) and one write queue (`runstore/queue.py`) handed to small
repositories, each given in its constructor exactly what it uses: `store.runs`, `store.checkpoints`,
`store.metrics`, `store.views`, `store.sweeps`, `store.leases` and `store.owners`. The store itself keeps only what
belongs to the connection: `flush()`, `pending`, `close()`, `path`, `read_only`, `owner`, `admin`, `on_busy`.
"""
from __future__ import annotations

import sqlite3  # noqa: F401 — `invlab.train.store.sqlite3` is where callers (and tests) reach the driver
from pathlib import Path
from typing import Callable

from .runstore.checkpoints import Checkpoints
from .runstore.connection import ADDED_COLUMNS, SCHEMA, SWEEP_INDEX, StoreConnection
from .runstore.faults import NoRunStore, RunStoreError, StoreLocked, fault_message
from .runstore.leases import Leases
from .runstore.metrics import Metrics
from .runstore.owners import Owners
from .runstore.queue import WriteQueue
from .runstore.records import RunRecord, SweepRecord
from .runstore.runs import Runs
from .runstore.sweeps import Sweeps
from .runstore.views import StoredViews, Views
from .runstore.writers import (
    HEARTBEAT_SECONDS,
    LEASE_SECONDS,
    STALE_SECONDS,
    WRITER_COLUMNS,
    _process_token,
    writer_alive,
    writer_identity,
)

__all__ = ["RunStore", "RunStoreError", "NoRunStore", "StoreLocked", "RunRecord", "SweepRecord", "fault_message",
           "writer_alive", "writer_identity", "HEARTBEAT_SECONDS", "LEASE_SECONDS", "STALE_SECONDS", "WRITER_COLUMNS",
           "SCHEMA", "ADDED_COLUMNS", "SWEEP_INDEX", "_process_token", "StoredViews"]

class RunStore:
    """Runs, their metrics, checkpoints, views and sweeps in one SQLite file (`runs.sqlite` under the data
    directory): one connection and one write queue, handed to the repositories `runs`, `checkpoints`, `metrics`,
    `views`, `sweeps`, `leases` and `owners`.

    `RunStore(path=None, on_busy=None, create=True, owner=None, admin=False)`: `path` defaults to the data directory's
    `runs.sqlite`; `on_busy(message)` hears when another program's lock starts and stops holding writes back; `owner`
    is the logged-in user a server page opens it for (runstore/owners.py)."""

    busy_timeout = 5.0  # seconds a write waits for another program's lock before it is queued instead
    retry_timeout = 0.05  # while the store is busy, a write tries this long and is queued again
    max_wait = 600.0  # creating a run and close wait this long in total for the lock, then give up with a message

    def __init__(self, path: str | Path | None = None, *, on_busy: Callable[[str], None] | None = None,
                 create: bool = True, owner: str | None = None, admin: bool = False):
        """`create=False`: a store (and data directory) that does not exist yet is not made: `NoRunStore` says
        where it was looked for (what listing commands want, so a mistyped INVLAB_DATA is not silently created).
        `owner`: the logged-in user it is opened for (see owners.py); `admin`: that user sees every user's runs."""
        self.connection = StoreConnection(path, create=create, on_busy=on_busy, busy_timeout=self.busy_timeout,
                                          retry_timeout=self.retry_timeout, max_wait=self.max_wait)
        self.queue = WriteQueue(self.connection)
        self.owners = Owners(owner, admin)
        self.leases = Leases(self.connection, self.queue)
        self.runs = Runs(self.connection, self.queue, self.owners, self.leases)
        self.checkpoints = Checkpoints(self.connection, self.queue)
        self.metrics = Metrics(self.connection, self.queue)
        self.views = Views(self.connection, self.queue)
        self.sweeps = Sweeps(self.connection, self.owners)
        if not self.connection.read_only:
            self.queue.take_back_set_aside()
            self.leases.mark_killed()

    @property
    def path(self) -> Path:
        """The SQLite file."""
        return self.connection.path

    @property
    def read_only(self) -> bool:
        """Opened read-only: listed and read, every write refused with the fix."""
        return self.connection.read_only

    @property
    def owner(self) -> str | None:
        """The logged-in user this store is opened for (recorded on new runs and sweeps); None: no logins."""
        return self.owners.owner

    @property
    def admin(self) -> bool:
        """Whether `owner` sees every user's runs and sweeps."""
        return self.owners.admin

    @property
    def on_busy(self) -> Callable[[str], None] | None:
        """What hears when another program's lock starts and stops holding writes back (a message)."""
        return self.connection.on_busy

    @on_busy.setter
    def on_busy(self, hear: Callable[[str], None] | None) -> None:
        self.connection.on_busy = hear

    @property
    def pending(self) -> int:
        """Metric rows, run updates, checkpoint records and views waiting to be written."""
        return self.queue.pending

    def flush(self) -> bool:
        """Write everything queued in one transaction; False (all kept queued) while another program holds the
        lock, True once written."""
        return self.queue.flush()

    def close(self) -> None:
        """Write what is queued (waiting up to `max_wait` for another program's lock, else saving it beside the
        store for the next process) and close the file."""
        self.queue.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
