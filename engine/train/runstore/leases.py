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

A reader that finds a run marked `running` whose writer is gone marks it `killed` (`mark_killed`): resumable from its
latest checkpoint. A run still `created` whose maker is gone becomes `interrupted`.
"""
from __future__ import annotations

import sqlite3
import time
import uuid

from ..states import RunStatus
from .connection import StoreConnection
from .faults import RunStoreError, StoreLocked, _guarded, _is_busy
from .queue import WriteQueue
from .writers import LEASE_SECONDS, holder, writer_gone, writer_identity


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def heard(updated: float, now: float) -> str:
    """When a holder was last heard from (its heartbeat `updated`), in words; a heartbeat stamped ahead of `now` says
    so (its host's clock runs ahead of this one's: a heartbeat more than `LEASE_SECONDS` ahead counts as stale)."""
    if updated - now > 1.0:
        return (f"its last heartbeat is stamped {_when(updated)}, {updated - now:,.0f} s ahead of this machine's clock "
                "(check both machines' clocks)")
    return f"it was last heard from at {_when(updated)}"


class Leases:
    """Who may write a run or sweep (`store.leases`): claims, give-backs, the live writer, and runs whose writer is
    gone."""

    def __init__(self, connection: StoreConnection, queue: WriteQueue):
        """`connection`: the store's connection; `queue`: its write queue (flushed before a claim, so what this
        process queued for the row goes first)."""
        self.connection, self.queue = connection, queue

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
        con = self.connection
        with con.lock:
            con.waiting(lambda: con.db.execute(
                "UPDATE runs SET status = ?, message = ?, updated = ? WHERE id = ? AND writer_lease = ?",
                (status, message, time.time(), int(run_id), lease)), "to give the run back")

    def _claim(self, table: str, what: str, key: int, lease: str | None, resume: str, wait: bool) -> str:
        key, con = int(key), self.connection
        self.queue.flush()  # what this process queued for the row goes first

        def claim():
            con.db.execute("BEGIN IMMEDIATE")  # the check and the mark below are one transaction
            row = con.db.execute(f"SELECT status, updated, writer_pid, writer_host, writer_token, writer_lease "
                                 f"FROM {table} WHERE id = ?", (key,)).fetchone()
            if row is None:
                raise RunStoreError(f"no {what} with id {key} in {con.path}; `invlab {what}s` lists the stored "
                                    f"{what}s")
            _refuse_held(what, key, row, lease, resume)
            new = lease or uuid.uuid4().hex
            fields = {"status": RunStatus.RUNNING, "updated": time.time(), **writer_identity(), "writer_lease": new}
            con.db.execute(f"UPDATE {table} SET {', '.join(f'{k} = ?' for k in fields)} WHERE id = ?",
                           (*fields.values(), key))
            return new

        with con.lock:
            if wait:
                return con.waiting(claim, f"to claim {what} {key}")
            try:
                with con.db:
                    return claim()
            except sqlite3.OperationalError as err:
                if _is_busy(err):
                    raise StoreLocked(f"the run store {con.path} is locked by another program, so {what} {key} "
                                      "could not be claimed") from None
                raise

    def live_writer(self, run_id: int, lease: str | None = None) -> str | None:
        """"pid P on HOST" when another writer still trains run `run_id` (marked running, its writer alive and heard
        from lately, and not holding lease `lease`); None otherwise."""
        self.mark_killed()
        with self.connection.lock:
            row = self.connection.db.execute("SELECT status, updated, writer_pid, writer_host, writer_token, "
                                             "writer_lease FROM runs WHERE id = ?", (int(run_id),)).fetchone()
        return None if row is None else holder(*row, lease=lease)

    def mark_killed(self) -> list[int]:
        """Runs marked `running` whose writer process is gone become `killed` (resumable); returns their ids.

        Best effort: a store that cannot be written (read-only, locked) is left as it is."""
        con, now, found = self.connection, time.time(), []
        try:
            with con.lock:
                rows = con.db.execute("SELECT id, updated, step, writer_pid, writer_host, writer_token FROM runs "
                                      "WHERE status = ? AND writer_pid IS NOT NULL", (RunStatus.RUNNING,)).fetchall()
                for run_id, updated, step, pid, host, token in rows:
                    if not writer_gone(now, updated, pid, host, token):
                        continue
                    message = (f"its process (pid {pid} on {host}) ended while it trained, at or after step {step}; "
                               f"resume with: invlab train --resume {run_id}")
                    with con.db:
                        cur = con.db.execute("UPDATE runs SET status = ?, message = ?, updated = ? WHERE id = ? AND "
                                             "status = ? AND writer_pid = ?",
                                             (RunStatus.KILLED, message, now, run_id, RunStatus.RUNNING, pid))
                    if cur.rowcount:
                        found.append(int(run_id))
                self._mark_unstarted(now)
        except sqlite3.DatabaseError:  # read-only or locked: the statuses are corrected by a later reader
            pass
        return found

    def _mark_unstarted(self, now: float) -> None:
        """Runs still `created` (never trained a step) whose creating process is gone become `interrupted`, so they
        are not listed as waiting to train for ever; one recorded without its creator (an older version) counts as
        gone once silent for `STALE_SECONDS`."""
        db = self.connection.db
        rows = db.execute("SELECT id, updated, writer_pid, writer_host, writer_token FROM runs WHERE status = ?",
                          (RunStatus.CREATED,)).fetchall()
        for run_id, updated, pid, host, token in rows:
            if not writer_gone(now, updated, pid, host, token):
                continue
            who = f"its process (pid {pid} on {host})" if pid is not None else "the process that made it"
            message = (f"{who} ended before it trained a step; train these settings as a new run with: invlab "
                       f"train --resume {run_id} --restart")
            with db:
                db.execute("UPDATE runs SET status = ?, message = ?, updated = ? WHERE id = ? AND status = ? AND "
                           "writer_pid IS ?", (RunStatus.INTERRUPTED, message, now, run_id, RunStatus.CREATED, pid))


def _refuse_held(what: str, key: int, row: tuple, lease: str | None, resume: str) -> None:
    """Refuse a claim on `what` `key` (its writer columns `row`) that another claimant took since `lease` was
    given, or that another live writer holds."""
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
