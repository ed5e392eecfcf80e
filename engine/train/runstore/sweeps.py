"""The run store's sweeps: their records and their runs, each (sweep, point × seed) stored exactly once."""
from __future__ import annotations

import json
import sqlite3
import time

from ..states import RunStatus, SweepStatus
from .connection import StoreConnection
from .faults import RunStoreError, _guarded
from .owners import Owners
from .records import RunRecord, SweepRecord, read_records, record_by_id
from .writers import writer_gone

__all__ = ["Sweeps", "SweepRecord"]


class Sweeps:
    """The stored sweeps and their runs (`store.sweeps`), each user's own on a server with logins."""

    def __init__(self, connection: StoreConnection, owners: Owners):
        """`connection`: the store's connection; `owners`: whose sweeps are shown (and who owns new ones)."""
        self.connection, self.owners = connection, owners

    @_guarded
    def create(self, name: str, spec_json: str, total: int = 0) -> int:
        """Store a new sweep (its name, spec JSON and planned number of runs), owned by the store's user; returns its
        id."""
        now, db = time.time(), self.connection.db
        with self.connection.lock, db:
            cur = db.execute("INSERT INTO sweeps (created, updated, name, spec, status, total, owner) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (now, now, name, spec_json, SweepStatus.CREATED, int(total), self.owners.owner))
            return int(cur.lastrowid)

    @_guarded
    def update(self, sweep_id: int, **fields) -> None:
        """Update a stored sweep's `status`, `total` or `spec` (any other field raises RunStoreError) and its update
        time."""
        bad = set(fields) - {"status", "total", "spec"}
        if bad:
            raise RunStoreError(f"cannot update sweep fields {sorted(bad)}")
        fields["updated"] = time.time()
        cols = ", ".join(f"{k} = ?" for k in fields)
        with self.connection.lock, self.connection.db:
            self.connection.db.execute(f"UPDATE sweeps SET {cols} WHERE id = ?", (*fields.values(), int(sweep_id)))

    @_guarded
    def get(self, sweep_id: int) -> SweepRecord:
        """Stored sweep `sweep_id`; `RunStoreError` when there is none (or it is another user's)."""
        self.mark_interrupted()
        return record_by_id(self.connection, self.owners, SweepRecord, "sweeps", "sweep", sweep_id)

    @_guarded
    def list(self, limit: int | None = None) -> list[SweepRecord]:
        """The stored sweeps, newest first (only the owner's for a store opened for a user who is not an admin)."""
        self.mark_interrupted()
        tail, args = self.owners.owned("ORDER BY id DESC" + (f" LIMIT {int(limit)}" if limit else ""))
        return read_records(self.connection, SweepRecord, "sweeps", tail, args)

    def mark_interrupted(self) -> list[int]:
        """Sweeps marked `running` whose writer process is gone (killed: it could not say so itself) become
        `interrupted`, as a stopped sweep is (resumable); returns their ids. A writer on another host counts as gone
        once its heartbeat is `STALE_SECONDS` old (`writer_gone`). Best effort, like `Leases.mark_killed`: a store
        that cannot be written is left as it is."""
        now, found, db = time.time(), [], self.connection.db
        try:
            with self.connection.lock:
                rows = db.execute("SELECT id, updated, writer_pid, writer_host, writer_token FROM sweeps "
                                  "WHERE status = ? AND writer_pid IS NOT NULL", (SweepStatus.RUNNING,)).fetchall()
                for sweep_id, updated, pid, host, token in rows:
                    if not writer_gone(now, updated, pid, host, token):
                        continue
                    with db:
                        cur = db.execute("UPDATE sweeps SET status = ?, updated = ? WHERE id = ? AND status = ? "
                                         "AND writer_pid = ?",
                                         (SweepStatus.INTERRUPTED, now, sweep_id, SweepStatus.RUNNING, pid))
                    if cur.rowcount:
                        found.append(int(sweep_id))
        except sqlite3.DatabaseError:  # read-only or locked: a later reader corrects the status
            pass
        return found

    @_guarded
    def runs(self, sweep_id: int) -> list[RunRecord]:
        """The runs stored for a sweep, in the order they were stored."""
        return read_records(self.connection, RunRecord, "runs", "WHERE sweep_id = ? ORDER BY id", (int(sweep_id),))

    @_guarded
    def info(self, run_id: int) -> dict:
        """What a sweep's task reported beside the figures (likelihood, estimator, learned values, timings)."""
        with self.connection.lock:
            row = self.connection.db.execute("SELECT sweep_info FROM runs WHERE id = ?", (int(run_id),)).fetchone()
        return json.loads(row[0]) if row and row[0] else {}

    @_guarded
    def store_run(self, sweep_id: int, key: str, *, config_json: str, model: str, dataset: str, status: str,
                  step: int, figures: dict, history: dict, info: dict, message: str | None = None
                  ) -> tuple[int, bool]:
        """Store one finished (or failed) run of a sweep with its metrics, in one transaction: (run id, stored now).

        A (sweep, key) already stored as finished is never stored again (its id comes back with False); a failed one
        is replaced by this attempt. `history` is {metric: (steps, values)}; `figures` the run's final figures."""
        figures = {k: v for k, v in figures.items() if k in _FIGURES and v is not None}
        now, db = time.time(), self.connection.db
        with self.connection.lock, db:
            row = db.execute("SELECT id, status FROM runs WHERE sweep_id = ? AND sweep_key = ?",
                             (int(sweep_id), key)).fetchone()
            if row is not None and row[1] == RunStatus.FINISHED:
                return int(row[0]), False
            cols = {"updated": now, "model": model, "dataset": dataset, "config": config_json, "status": status,
                    "step": int(step), "message": message, "sweep_info": json.dumps(info), **figures}
            if row is None:
                cols.update(created=now, sweep_id=int(sweep_id), sweep_key=key, owner=self.owners.owner)
                run_id = int(db.execute(f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                                        tuple(cols.values())).lastrowid)
            else:
                run_id = int(row[0])
                db.execute("DELETE FROM metrics WHERE run_id = ?", (run_id,))
                db.execute(f"UPDATE runs SET {', '.join(f'{k} = ?' for k in cols)} WHERE id = ?",
                           (*cols.values(), run_id))
            rows = [(run_id, int(s), name, float(v)) for name, (steps, values) in history.items()
                    for s, v in zip(steps, values)]
            db.executemany("INSERT OR REPLACE INTO metrics (run_id, step, name, value) VALUES (?, ?, ?, ?)",
                           rows)  # a history holding a step twice keeps its later value
        return run_id, True


# the final figures a sweep's run stores beside its metrics
_FIGURES = {"elbo", "test_error", "test_rmse", "test_nlpd", "full_elbo"}
