"""The run store: runs, their configs, status, per-step metrics and checkpoint paths in SQLite (WAL).

Metrics are buffered in memory and written by `flush()` in one transaction; with WAL a process killed
mid-run loses at most what was logged since the last flush, and never corrupts what was committed.
One connection is shared by the threads of a process under a lock (the dashboard trains in a
background thread and reads from the server thread).

A run's `elbo` is the last minibatch estimate logged while it trained; `full_elbo` is the ELBO over the whole
training set computed when it finished (`Trainer.full_elbo`), the figure to compare runs by (on the same data,
likelihood and estimator).
"""
from __future__ import annotations

import json
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
CREATE TABLE IF NOT EXISTS sweeps (
    id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL NOT NULL, updated REAL NOT NULL,
    name TEXT NOT NULL, spec TEXT NOT NULL, status TEXT NOT NULL, total INTEGER NOT NULL DEFAULT 0
);
"""

# columns added after the first release: a store written before them gains them (empty) when opened
ADDED_COLUMNS = (("full_elbo", "REAL"), ("sweep_id", "INTEGER"), ("sweep_key", "TEXT"), ("sweep_info", "TEXT"))
# a run belongs to at most one (sweep, point × seed): a sweep's run is stored exactly once, whatever retries happen
SWEEP_INDEX = "CREATE UNIQUE INDEX IF NOT EXISTS runs_by_sweep_key ON runs (sweep_id, sweep_key)"


class RunStoreError(InvlabError):
    pass


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
        except sqlite3.DatabaseError as err:
            raise RunStoreError(f"the run store {self.path} cannot be opened ({err}). It was left untouched; move it "
                                "aside (or point INVLAB_DATA elsewhere) to start a new store.") from None

    def _add_missing_columns(self) -> None:
        """A store written before a column existed gets it (empty for its old runs)."""
        have = {row[1] for row in self._db.execute("PRAGMA table_info(runs)")}
        for name, kind in ADDED_COLUMNS:
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
        cols = ", ".join(f"{k} = ?" for k in fields)
        with self._lock, self._db:
            self._db.execute(f"UPDATE runs SET {cols} WHERE id = ?", (*fields.values(), run_id))

    def add_checkpoint(self, run_id: int, step: int, path: str | Path) -> None:
        with self._lock, self._db:
            self._db.execute("INSERT INTO checkpoints (run_id, step, path, created) VALUES (?, ?, ?, ?)",
                             (run_id, int(step), str(path), time.time()))

    def truncate(self, run_id: int, after_step: int) -> None:
        """Drop metrics logged after `after_step` (a resumed run continues from its last checkpoint)."""
        with self._lock, self._db:
            self._db.execute("DELETE FROM metrics WHERE run_id = ? AND step > ?", (run_id, int(after_step)))

    # -- reading ------------------------------------------------------------------------------------------------
    def get_run(self, run_id: int) -> RunRecord:
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

    def latest_checkpoint(self, run_id: int) -> tuple[int, Path] | None:
        with self._lock:
            rows = self._db.execute("SELECT step, path FROM checkpoints WHERE run_id = ? "
                                    "ORDER BY step DESC, created DESC",
                                    (int(run_id),)).fetchall()
        for step, path in rows:
            if Path(path).exists():
                return int(step), Path(path)
        return None

    def checkpoint_dir(self, run_id: int) -> Path:
        path = self.path.parent / "checkpoints" / f"run_{int(run_id)}"
        path.mkdir(parents=True, exist_ok=True)
        return path

    # -- sweeps ---------------------------------------------------------------------------------------------------
    def create_sweep(self, name: str, spec_json: str, total: int = 0) -> int:
        now = time.time()
        with self._lock, self._db:
            cur = self._db.execute("INSERT INTO sweeps (created, updated, name, spec, status, total) "
                                   "VALUES (?, ?, ?, ?, ?, ?)", (now, now, name, spec_json, "created", int(total)))
            return int(cur.lastrowid)

    def update_sweep(self, sweep_id: int, **fields) -> None:
        bad = set(fields) - {"status", "total", "spec"}
        if bad:
            raise RunStoreError(f"cannot update sweep fields {sorted(bad)}")
        fields["updated"] = time.time()
        cols = ", ".join(f"{k} = ?" for k in fields)
        with self._lock, self._db:
            self._db.execute(f"UPDATE sweeps SET {cols} WHERE id = ?", (*fields.values(), int(sweep_id)))

    def get_sweep(self, sweep_id: int) -> SweepRecord:
        with self._lock:
            row = self._db.execute(f"SELECT {', '.join(SweepRecord.__dataclass_fields__)} FROM sweeps WHERE id = ?",
                                   (int(sweep_id),)).fetchone()
        if row is None:
            raise RunStoreError(f"no sweep with id {sweep_id} in {self.path}; `invlab sweeps` lists the stored sweeps")
        return SweepRecord(*row)

    def list_sweeps(self, limit: int | None = None) -> list[SweepRecord]:
        sql = f"SELECT {', '.join(SweepRecord.__dataclass_fields__)} FROM sweeps ORDER BY id DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        with self._lock:
            return [SweepRecord(*row) for row in self._db.execute(sql).fetchall()]

    def sweep_runs(self, sweep_id: int) -> list[RunRecord]:
        """The runs stored for a sweep, in the order they were stored."""
        with self._lock:
            rows = self._db.execute(f"SELECT {', '.join(RunRecord.__dataclass_fields__)} FROM runs "
                                    "WHERE sweep_id = ? ORDER BY id", (int(sweep_id),)).fetchall()
        return [RunRecord(*row) for row in rows]

    def sweep_info(self, run_id: int) -> dict:
        """What a sweep's task reported beside the figures (likelihood, estimator, learned values, timings)."""
        with self._lock:
            row = self._db.execute("SELECT sweep_info FROM runs WHERE id = ?", (int(run_id),)).fetchone()
        return json.loads(row[0]) if row and row[0] else {}

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
        with self._lock:
            self.flush()
            self._db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
