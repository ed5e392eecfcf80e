"""A run (or sweep) has one writer: claiming it to train is one SQLite transaction (`BEGIN IMMEDIATE`).

The claim reads who holds the run and marks it `running` with this process as its writer (pid, host, boot id +
start time: the `writers` columns) and a new lease id (`writer_lease`), all before another process can read it; of
two claimants racing, the second sees the first's mark and is refused with a message naming its process and host.
The holder's heartbeat is the row's `updated`, refreshed by the trainer at least every `HEARTBEAT_SECONDS`. A lease
is taken over when its holder has died (`writer_alive` is False) or its heartbeat is older than `LEASE_SECONDS`, or
stamped more than that ahead of this machine's clock (a clock set wrong must not hold a run for years). A refusal names
the holder, when it was last heard from and when its lease lapses (when the run can be taken over without it).

A trainer renews its own lease when it trains again (after a pause); if another claimant took the run in between,
the renewal is refused, so a paused page never writes over steps trained elsewhere.
"""
from __future__ import annotations

import sqlite3
import time
import uuid

from ..states import RunStatus
from .faults import RunStoreError, StoreLocked, _guarded, _is_busy
from .writers import LEASE_SECONDS, holder, writer_identity


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def heard(updated: float, now: float) -> str:
    """When a holder was last heard from (its heartbeat `updated`), in words; a heartbeat stamped ahead of `now` says
    so (its host's clock runs ahead of this one's: a heartbeat more than `LEASE_SECONDS` ahead counts as stale)."""
    if updated - now > 1.0:
        return (f"its last heartbeat is stamped {_when(updated)}, {updated - now:,.0f} s ahead of this machine's clock "
                "(check both machines' clocks)")
    return f"it was last heard from at {_when(updated)}"


class LeasesMixin:
    """The part of `RunStore` that claims runs and sweeps for one writer (needs `_db`, `_lock`, `_waiting`)."""

    @_guarded
    def claim_run(self, run_id: int, lease: str | None = None, *, wait: bool = True) -> str:
        """Take run `run_id` for training in one transaction and mark it `running`; returns the lease id.

        `lease`: the id an earlier claim by this trainer returned (a renewal). Raises `RunStoreError` naming the
        holder's process and host when another live writer holds the run, or when another claimant took it since
        `lease` was given. While another program holds the store locked it waits up to `max_wait` seconds, or
        with `wait=False` only `busy_timeout`, then raises `StoreLocked`."""
        return self._claim("runs", "run", run_id, lease, "invlab train --resume", wait)

    @_guarded
    def claim_sweep(self, sweep_id: int, lease: str | None = None) -> str:
        """Take sweep `sweep_id` for running in one transaction and mark it `running`; returns the lease id (as
        `claim_run`)."""
        return self._claim("sweeps", "sweep", sweep_id, lease, "invlab sweep --resume", True)

    @_guarded
    def release_run(self, run_id: int, lease: str, status: str, message: str | None) -> None:
        """Give a claimed run back with `status` and `message` (a claim whose training never started); nothing
        changes when another claimant holds it now."""
        with self._lock:
            self._waiting(lambda: self._db.execute(
                "UPDATE runs SET status = ?, message = ?, updated = ? WHERE id = ? AND writer_lease = ?",
                (status, message, time.time(), int(run_id), lease)), "to give the run back")

    def _claim(self, table: str, what: str, key: int, lease: str | None, resume: str, wait: bool) -> str:
        key = int(key)
        self.flush()  # what this process queued for the row goes first

        def claim():
            self._db.execute("BEGIN IMMEDIATE")  # the check and the mark below are one transaction
            row = self._db.execute(f"SELECT status, updated, writer_pid, writer_host, writer_token, writer_lease "
                                   f"FROM {table} WHERE id = ?", (key,)).fetchone()
            if row is None:
                raise RunStoreError(f"no {what} with id {key} in {self.path}; `invlab {what}s` lists the stored "
                                    f"{what}s")
            status, updated, pid, host, _, held = row
            if lease is not None and held not in (None, lease):
                raise RunStoreError(f"{what} {key} was taken over by another process (pid {pid} on {host}) since this "
                                    f"one last ran it, so it is not continued here; open it again ({resume} "
                                    f"{key}) to continue from its latest checkpoint")
            other = holder(*row, lease=lease)
            if other is not None:
                doing = "trained" if what == "run" else "run"
                raise RunStoreError(f"{what} {key} is still being {doing} by another process ({other}); "
                                    f"{heard(updated, time.time())}. Stop it first (Ctrl-C, or kill -TERM, which "
                                    f"saves what it has), then resume. If that process is gone (on another machine, "
                                    f"this one cannot tell), its lease lapses at {_when(updated + LEASE_SECONDS)}, "
                                    f"and then `{resume} {key}` takes the {what} over")
            new = lease or uuid.uuid4().hex
            fields = {"status": RunStatus.RUNNING, "updated": time.time(), **writer_identity(), "writer_lease": new}
            self._db.execute(f"UPDATE {table} SET {', '.join(f'{k} = ?' for k in fields)} WHERE id = ?",
                             (*fields.values(), key))
            return new

        with self._lock:
            if wait:
                return self._waiting(claim, f"to claim {what} {key}")
            try:
                with self._db:
                    return claim()
            except sqlite3.OperationalError as err:
                if _is_busy(err):
                    raise StoreLocked(f"the run store {self.path} is locked by another program, so {what} {key} "
                                      "could not be claimed") from None
                raise
