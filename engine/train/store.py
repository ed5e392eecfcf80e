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
`HEARTBEAT_SECONDS` while it trains): silent for `STALE_SECONDS`, it is taken for dead. A run still `created` (it
never trained a step) records the process that made it the same way, and becomes `interrupted` once that process is
gone, so it is not listed as waiting to train for ever.

Metrics hold one value per (run, step, name): writing one again replaces it (a unique index; a store written before
it keeps the latest of its repeated rows when first opened).

A run keeps the latest snapshot of each of its diagnostics views (`save_views`, `views`; runstore/views.py), so a
page that opens it, or follows it while another process writes it, shows its pictures too.

A run has one writer: `claim_run` takes it for training in one transaction (a lease on those writer columns, see
`runstore/leases.py`); a second claimant is refused with a message naming the holder's process and host.
"""
from __future__ import annotations

import sqlite3  # noqa: F401 — `invlab.train.store.sqlite3` is where callers (and tests) reach the driver

from .runstore.connection import ADDED_COLUMNS, SCHEMA, SWEEP_INDEX, StoreConnection
from .runstore.faults import NoRunStore, RunStoreError, StoreLocked, fault_message
from .runstore.leases import LeasesMixin
from .runstore.owners import OwnersMixin
from .runstore.queue import WriteQueue
from .runstore.runs import RunRecord, RunsMixin
from .runstore.sweeps import SweepRecord, SweepsMixin
from .runstore.views import StoredViews, ViewsMixin
from .runstore.writers import (
    HEARTBEAT_SECONDS,
    LEASE_SECONDS,
    STALE_SECONDS,
    WRITER_COLUMNS,
    WritersMixin,
    _process_token,
    writer_alive,
    writer_identity,
)

__all__ = ["RunStore", "RunStoreError", "NoRunStore", "StoreLocked", "RunRecord", "SweepRecord", "fault_message",
           "writer_alive", "writer_identity", "HEARTBEAT_SECONDS", "LEASE_SECONDS", "STALE_SECONDS", "WRITER_COLUMNS",
           "SCHEMA", "ADDED_COLUMNS", "SWEEP_INDEX", "_process_token", "StoredViews"]


class RunStore(StoreConnection, WriteQueue, RunsMixin, SweepsMixin, WritersMixin, LeasesMixin, OwnersMixin,
               ViewsMixin):
    """Runs, their metrics, checkpoints and sweeps in one SQLite file (`runs.sqlite` under the data directory).

    `RunStore(path=None, on_busy=None, create=True, owner=None, admin=False)`: `path` defaults to the data directory's
    `runs.sqlite`; `on_busy(message)` hears when another program's lock starts and stops holding writes back; `owner`
    is the logged-in user a server page opens it for (runstore/owners.py)."""
