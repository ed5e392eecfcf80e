"""The run store's metrics (`store.metrics`): one value per (run, step, name), logged through the write queue."""
from __future__ import annotations

from .connection import StoreConnection
from .faults import _guarded
from .queue import WriteQueue


class Metrics:
    """Each run's per-step metrics: logged into the write queue, read from the connection."""

    def __init__(self, connection: StoreConnection, queue: WriteQueue):
        """`connection`: the store's connection; `queue`: its write queue (metrics reach the file at its flush)."""
        self.connection, self.queue = connection, queue

    def log(self, run_id: int, step: int, metrics: dict[str, float | None]) -> None:
        """Buffer metrics for one step; they reach the database at the next `flush()`. A None value is stored as a
        gap (a missing value at that step). A run keeps one value per (step, name): a later one replaces it."""
        with self.connection.lock:
            self.queue.metrics.extend((run_id, int(step), name, None if value is None else float(value))
                                      for name, value in metrics.items())

    @_guarded
    def read(self, run_id: int, names: list[str] | None = None) -> dict[str, tuple[list[int], list[float | None]]]:
        """A run's metrics as {name: (steps, values)} in step order (a gap is None); `names`: only these."""
        with self.connection.lock:
            rows = self.connection.db.execute("SELECT name, step, value FROM metrics WHERE run_id = ? "
                                              "ORDER BY name, step", (int(run_id),)).fetchall()
        out: dict[str, tuple[list[int], list[float]]] = {}
        for name, step, value in rows:
            if names is None or name in names:
                steps, values = out.setdefault(name, ([], []))
                steps.append(step)
                values.append(value)
        return out

    @_guarded
    def written_after(self, run_id: int, row: int = 0) -> tuple[dict[str, tuple[list, list]], int]:
        """({name: (steps, values)} of a run's metric rows stored after row `row`, in the order written; the last
        row read): what a page following a run another process writes has not drawn yet (0: all of them)."""
        with self.connection.lock:
            rows = self.connection.db.execute("SELECT rowid, name, step, value FROM metrics WHERE run_id = ? AND "
                                              "rowid > ? ORDER BY rowid", (int(run_id), int(row))).fetchall()
        out: dict[str, tuple[list, list]] = {}
        for _, name, step, value in rows:
            steps, values = out.setdefault(name, ([], []))
            steps.append(step)
            values.append(value)
        return out, (rows[-1][0] if rows else int(row))
