"""The run store's runs (`store.runs`): creating, reading, listing, updating and truncating run records."""
from __future__ import annotations

import time

from ..states import RunStatus
from .connection import StoreConnection
from .faults import RunStoreError, _guarded
from .leases import Leases
from .owners import Owners
from .queue import WriteQueue
from .records import RunRecord, read_records, record_by_id
from .writers import writer_identity

__all__ = ["Runs", "RunRecord"]

# the fields `update` may set (the writer columns are the leases' own)
UPDATABLE = {"status", "step", "elbo", "test_error", "test_rmse", "test_nlpd", "message", "config", "full_elbo"}


class Runs:
    """The stored runs (`store.runs`), each user's own on a server with logins."""

    def __init__(self, connection: StoreConnection, queue: WriteQueue, owners: Owners, leases: Leases):
        """`connection`: the store's connection; `queue`: its write queue (updates go out with the metrics);
        `owners`: whose runs are shown; `leases`: marks runs whose writer is gone before they are read."""
        self.connection, self.queue, self.owners, self.leases = connection, queue, owners, leases

    @_guarded
    def create(self, config_json: str, model: str, dataset: str, status: str = RunStatus.CREATED,
               name: str | None = None) -> int:
        """Add a run and return its id; `name`: what a watched loop calls it (shown by `invlab runs`). This process is
        recorded as its writer (no lease yet), so a run left `created` by a process that ended is no longer listed
        as waiting to train (see `Leases.mark_killed`)."""
        now, con = time.time(), self.connection
        cols = {"created": now, "updated": now, "model": model, "dataset": dataset, "config": config_json,
                "status": status, "owner": self.owners.owner, "name": name, **writer_identity()}
        with con.lock:
            return int(con.waiting(lambda: con.db.execute(
                f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                tuple(cols.values())).lastrowid, "to create the run"))

    def update(self, run_id: int, **fields) -> None:
        """Set fields of a run; queued with the metrics (and written with them) while the store is locked."""
        bad = set(fields) - UPDATABLE
        if bad:
            raise RunStoreError(f"cannot update run fields {sorted(bad)}")
        fields["updated"] = time.time()
        if fields.get("status") == RunStatus.RUNNING:  # this process now writes the run: a later reader can check on it
            fields.update(writer_identity())
        with self.connection.lock:
            self.queue.updates.setdefault(run_id, {}).update(fields)
            self.queue.flush()

    @_guarded
    def abandon(self, run_id: int, message: str) -> bool:
        """Mark run `run_id` `interrupted` with `message` if it is still `created` (it never trained a step: its page
        closed, or its process moved on); whether it was. A run claimed meanwhile is left as it is."""
        con = self.connection
        with con.lock:
            return bool(con.waiting(lambda: con.db.execute(
                "UPDATE runs SET status = ?, message = ?, updated = ? WHERE id = ? AND status = ?",
                (RunStatus.INTERRUPTED, message, time.time(), int(run_id), RunStatus.CREATED)).rowcount,
                "to mark the run interrupted"))

    @_guarded
    def truncate(self, run_id: int, after_step: int) -> None:
        """Drop the metrics and views stored after `after_step` (a resumed run continues from its checkpoint there,
        and its page must not show values or pictures of steps it no longer has), queued ones included."""
        run_id, after_step, con, queue = int(run_id), int(after_step), self.connection, self.queue
        with con.lock:
            queue.metrics = [row for row in queue.metrics if row[0] != run_id or row[1] <= after_step]
            queue.views = {k: v for k, v in queue.views.items() if k[0] != run_id or v[0] <= after_step}
            with con.db:
                con.db.execute("DELETE FROM metrics WHERE run_id = ? AND step > ?", (run_id, after_step))
                if "views" in con.tables():
                    con.db.execute("DELETE FROM views WHERE run_id = ? AND step > ?", (run_id, after_step))

    @_guarded
    def get(self, run_id: int) -> RunRecord:
        """Stored run `run_id`; `RunStoreError` when there is none (or it is another user's)."""
        self.leases.mark_killed()
        return record_by_id(self.connection, self.owners, RunRecord, "runs", "run", run_id)

    @_guarded
    def list(self, limit: int | None = None, *, offset: int = 0, search: str = "") -> list[RunRecord]:
        """The stored runs, newest first (only the owner's for a store opened for a user who is not an admin): at most
        `limit`, after skipping the `offset` newest; `search` keeps those it matches (see `count`)."""
        self.leases.mark_killed()
        where, args = self._filter(search)
        page = f" LIMIT {int(limit) if limit else -1}" + (f" OFFSET {int(offset)}" if offset else "")
        return read_records(self.connection, RunRecord, "runs", f"{where} ORDER BY id DESC{page}", args)

    @_guarded
    def count(self, search: str = "") -> int:
        """How many runs `list` would list without a limit: with `search`, those whose id is it ('7' or '#7') or
        whose name, model or data set holds it (any case)."""
        where, args = self._filter(search)
        with self.connection.lock:
            return int(self.connection.db.execute(f"SELECT COUNT(*) FROM runs {where}", args).fetchone()[0])

    def _filter(self, search: str) -> tuple[str, tuple]:
        """The WHERE clause (and its arguments) of the owner's runs that `search` matches; '' for every run."""
        clauses, args = ([], []) if not self.owners.restricted else (["owner = ?"], [self.owners.owner])
        text = (search or "").strip()
        if text:
            like = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            columns = [c for c in ("name", "model", "dataset") if c in self.connection.has_columns("runs")]
            matches = [f"{c} LIKE ? ESCAPE '\\'" for c in columns]
            args += [like] * len(columns)
            if text.removeprefix("#").isascii() and text.removeprefix("#").isdigit():
                matches.append("id = ?")
                args.append(int(text.removeprefix("#")) if len(text) < 19 else -1)
            clauses.append(f"({' OR '.join(matches)})")
        return ("WHERE " + " AND ".join(clauses)) if clauses else "", tuple(args)
