"""The run store's sweeps: their records and their runs, each (sweep, point × seed) stored exactly once."""
from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass

from ..states import SweepStatus
from .faults import RunStoreError, _guarded
from .runs import RunRecord
from .writers import writer_gone


@dataclass
class SweepRecord:
    """One stored sweep as read from the store (times in seconds since the epoch)."""

    id: int
    created: float
    updated: float
    name: str
    spec: str  # the SweepSpec as JSON
    status: str  # running, interrupted, finished
    total: int  # planned runs
    owner: str | None = None  # the logged-in user who started it (a server with logins), else None

    def summary(self) -> dict:
        """The fields `invlab sweeps --json` prints."""
        return {k: getattr(self, k) for k in ("id", "name", "status", "total", "created", "updated")}


class SweepsMixin:
    """The part of `RunStore` that stores sweeps and their runs."""

    @_guarded
    def create_sweep(self, name: str, spec_json: str, total: int = 0) -> int:
        """Store a new sweep (its name, spec JSON and planned number of runs), owned by the store's user; returns its
        id."""
        now = time.time()
        with self._lock, self._db:
            cur = self._db.execute("INSERT INTO sweeps (created, updated, name, spec, status, total, owner) "
                                   "VALUES (?, ?, ?, ?, ?, ?, ?)",
                                   (now, now, name, spec_json, SweepStatus.CREATED, int(total), self.owner))
            return int(cur.lastrowid)

    @_guarded
    def update_sweep(self, sweep_id: int, **fields) -> None:
        """Update a stored sweep's `status`, `total` or `spec` (any other field raises RunStoreError) and its update
        time."""
        bad = set(fields) - {"status", "total", "spec"}
        if bad:
            raise RunStoreError(f"cannot update sweep fields {sorted(bad)}")
        fields["updated"] = time.time()
        cols = ", ".join(f"{k} = ?" for k in fields)
        with self._lock, self._db:
            self._db.execute(f"UPDATE sweeps SET {cols} WHERE id = ?", (*fields.values(), int(sweep_id)))

    @_guarded
    def get_sweep(self, sweep_id: int) -> SweepRecord:
        """Stored sweep `sweep_id`; `RunStoreError` when there is none (or it is another user's)."""
        self.mark_interrupted_sweeps()
        return self._record_by_id(SweepRecord, "sweeps", "sweep", sweep_id)

    @_guarded
    def list_sweeps(self, limit: int | None = None) -> list[SweepRecord]:
        """The stored sweeps, newest first (only the owner's for a store opened for a user who is not an admin)."""
        self.mark_interrupted_sweeps()
        return self._records(SweepRecord, "sweeps", *self._owned("ORDER BY id DESC" + (f" LIMIT {int(limit)}"
                                                                                       if limit else "")))

    def mark_interrupted_sweeps(self) -> list[int]:
        """Sweeps marked `running` whose writer process is gone (killed: it could not say so itself) become
        `interrupted`, as a stopped sweep is (resumable); returns their ids. A writer on another host counts as gone
        once its heartbeat is `STALE_SECONDS` old (`writer_gone`). Best effort, like `mark_killed_runs`: a store that
        cannot be written is left as it is."""
        now, found = time.time(), []
        try:
            with self._lock:
                rows = self._db.execute("SELECT id, updated, writer_pid, writer_host, writer_token FROM sweeps "
                                        "WHERE status = 'running' AND writer_pid IS NOT NULL").fetchall()
                for sweep_id, updated, pid, host, token in rows:
                    if not writer_gone(now, updated, pid, host, token):
                        continue
                    with self._db:
                        cur = self._db.execute("UPDATE sweeps SET status = 'interrupted', updated = ? WHERE id = ? "
                                               "AND status = 'running' AND writer_pid = ?", (now, sweep_id, pid))
                    if cur.rowcount:
                        found.append(int(sweep_id))
        except sqlite3.DatabaseError:  # read-only or locked: a later reader corrects the status
            pass
        return found

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
            if row is not None and row[1] == SweepStatus.FINISHED:
                return int(row[0]), False
            cols = {"updated": now, "model": model, "dataset": dataset, "config": config_json, "status": status,
                    "step": int(step), "message": message, "sweep_info": json.dumps(info), **figures}
            if row is None:
                cols.update(created=now, sweep_id=int(sweep_id), sweep_key=key, owner=self.owner)
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
            self._db.executemany("INSERT OR REPLACE INTO metrics (run_id, step, name, value) VALUES (?, ?, ?, ?)",
                                 rows)  # a history holding a step twice keeps its later value
        return run_id, True

