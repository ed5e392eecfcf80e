"""The run store's runs: records, metrics, checkpoints (paths relative to the data directory)."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ..states import RunStatus
from .faults import RunStoreError, _guarded
from .writers import writer_identity


@dataclass
class RunRecord:
    """One stored run as read from the store (times in seconds since the epoch; `config` is the RunConfig JSON)."""

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
    owner: str | None = None  # the logged-in user who started it (a server with logins), else None
    name: str | None = None  # the name a watched loop gave it (`invlab.train.watch`), else None

    def summary(self) -> dict:
        """The fields `invlab runs --json` prints."""
        return {k: getattr(self, k) for k in ("id", "name", "model", "dataset", "status", "step", "elbo", "test_error",
                                              "test_rmse", "test_nlpd", "full_elbo")}


class RunsMixin:
    """The part of `RunStore` that creates and reads runs, their metrics and checkpoints."""

    @_guarded
    def create_run(self, config_json: str, model: str, dataset: str, status: str = RunStatus.CREATED,
                   name: str | None = None) -> int:
        """Add a run and return its id; `name`: what a watched loop calls it (shown by `invlab runs`). This process is
        recorded as its writer (no lease yet), so a run left `created` by a process that ended is no longer listed
        as waiting to train (see `mark_killed_runs`)."""
        now = time.time()
        cols = {"created": now, "updated": now, "model": model, "dataset": dataset, "config": config_json,
                "status": status, "owner": self.owner, "name": name, **writer_identity()}
        with self._lock:
            return int(self._waiting(lambda: self._db.execute(
                f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                tuple(cols.values())).lastrowid, "to create the run"))

    @_guarded
    def abandon_run(self, run_id: int, message: str) -> bool:
        """Mark run `run_id` `interrupted` with `message` if it is still `created` (it never trained a step: its page
        closed, or its process moved on); whether it was. A run claimed meanwhile is left as it is."""
        with self._lock:
            return bool(self._waiting(lambda: self._db.execute(
                "UPDATE runs SET status = 'interrupted', message = ?, updated = ? WHERE id = ? AND status = 'created'",
                (message, time.time(), int(run_id))).rowcount, "to mark the run interrupted"))

    @_guarded
    def forget_checkpoint(self, run_id: int, step: int, path: Path) -> None:
        """Remove a checkpoint file and its record (older checkpoints beyond `keep_checkpoints`)."""
        with self._lock, self._db:
            for stored_step, stored in self._db.execute("SELECT step, path FROM checkpoints WHERE run_id = ? AND "
                                                        "step = ?", (int(run_id), int(step))).fetchall():
                if self.resolve_checkpoint(stored) == path:
                    self._db.execute("DELETE FROM checkpoints WHERE run_id = ? AND step = ? AND path = ?",
                                     (int(run_id), int(stored_step), stored))
        path.unlink(missing_ok=True)

    @_guarded
    def truncate(self, run_id: int, after_step: int) -> None:
        """Drop metrics logged after `after_step` (a resumed run continues from its last checkpoint)."""
        with self._lock, self._db:
            self._db.execute("DELETE FROM metrics WHERE run_id = ? AND step > ?", (run_id, int(after_step)))

    # -- reading ------------------------------------------------------------------------------------------------
    @_guarded
    def get_run(self, run_id: int) -> RunRecord:
        """Stored run `run_id`; `RunStoreError` when there is none (or it is another user's)."""
        self.mark_killed_runs()
        return self._record_by_id(RunRecord, "runs", "run", run_id)

    @_guarded
    def list_runs(self, limit: int | None = None, *, offset: int = 0, search: str = "") -> list[RunRecord]:
        """The stored runs, newest first (only the owner's for a store opened for a user who is not an admin): at most
        `limit`, after skipping the `offset` newest; `search` keeps those it matches (see `count_runs`)."""
        self.mark_killed_runs()
        where, args = self._run_filter(search)
        page = f" LIMIT {int(limit) if limit else -1}" + (f" OFFSET {int(offset)}" if offset else "")
        return self._records(RunRecord, "runs", f"{where} ORDER BY id DESC{page}", args)

    @_guarded
    def count_runs(self, search: str = "") -> int:
        """How many runs `list_runs` would list without a limit: with `search`, those whose id is it ('7' or '#7') or
        whose name, model or data set holds it (any case)."""
        where, args = self._run_filter(search)
        with self._lock:
            return int(self._db.execute(f"SELECT COUNT(*) FROM runs {where}", args).fetchone()[0])

    def _run_filter(self, search: str) -> tuple[str, tuple]:
        """The WHERE clause (and its arguments) of the owner's runs that `search` matches; '' for every run."""
        clauses, args = ([], []) if not self.restricted else (["owner = ?"], [self.owner])
        text = (search or "").strip()
        if text:
            like = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            columns = [c for c in ("name", "model", "dataset") if c in self._has_columns("runs")]
            matches = [f"{c} LIKE ? ESCAPE '\\'" for c in columns]
            args += [like] * len(columns)
            if text.removeprefix("#").isascii() and text.removeprefix("#").isdigit():
                matches.append("id = ?")
                args.append(int(text.removeprefix("#")) if len(text) < 19 else -1)
            clauses.append(f"({' OR '.join(matches)})")
        return ("WHERE " + " AND ".join(clauses)) if clauses else "", tuple(args)

    def _record_by_id(self, record: type, table: str, what: str, key: int):
        """The row `key` of `table` as `record`; `RunStoreError` naming the listing command when there is none (an id
        beyond SQLite's integers included, rather than an OverflowError) or it belongs to another user."""
        found = [] if int(key).bit_length() > 63 else self._records(record, table, "WHERE id = ?", (int(key),))
        if not found:
            raise RunStoreError(f"no {what} with id {key} in {self.path}; `invlab {what}s` lists the stored {what}s")
        self._check_owner(what, key, found[0].owner)
        return found[0]

    def _records(self, record: type, table: str, tail: str, args: tuple = ()) -> list:
        """Rows of `table` as `record` dataclasses (its fields are the columns read; a column an old store opened
        read-only lacks reads as None), selected by `tail`."""
        have = self._has_columns(table)
        cols = ", ".join(name if name in have else "NULL" for name in record.__dataclass_fields__)
        with self._lock:
            rows = self._db.execute(f"SELECT {cols} FROM {table} {tail}", args).fetchall()
        return [record(*row) for row in rows]

    @_guarded
    def metrics(self, run_id: int, names: list[str] | None = None) -> dict[str, tuple[list[int], list[float | None]]]:
        """A run's metrics as {name: (steps, values)} in step order (a gap is None)."""
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

    @_guarded
    def metrics_written_after(self, run_id: int, row: int = 0) -> tuple[dict[str, tuple[list, list]], int]:
        """({name: (steps, values)} of a run's metric rows stored after row `row`, in the order written; the last
        row read): what a page following a run another process writes has not drawn yet (0: all of them)."""
        with self._lock:
            rows = self._db.execute("SELECT rowid, name, step, value FROM metrics WHERE run_id = ? AND rowid > ? "
                                    "ORDER BY rowid", (int(run_id), int(row))).fetchall()
        out: dict[str, tuple[list, list]] = {}
        for _, name, step, value in rows:
            steps, values = out.setdefault(name, ([], []))
            steps.append(step)
            values.append(value)
        return out, (rows[-1][0] if rows else int(row))

    def resolve_checkpoint(self, stored: str) -> Path:
        """Where a recorded checkpoint path is now: relative ones under the store's directory; an absolute one
        written by an older version that no longer exists is looked for under `checkpoints/` here (a moved data
        directory)."""
        path = Path(stored)
        if not path.is_absolute():
            return self.path.parent / path
        if not path.exists() and "checkpoints" in path.parts:
            parts = path.parts
            tail = parts[len(parts) - 1 - parts[::-1].index("checkpoints"):]
            moved = self.path.parent.joinpath(*tail)
            if moved.exists():
                return moved
        return path

    @_guarded
    def checkpoints(self, run_id: int) -> list[tuple[int, Path]]:
        """A run's recorded checkpoints, newest first, as (step, path now); the files may be missing."""
        with self._lock:
            rows = self._db.execute("SELECT step, path FROM checkpoints WHERE run_id = ? "
                                    "ORDER BY step DESC, created DESC, rowid DESC", (int(run_id),)).fetchall()
        return [(int(step), self.resolve_checkpoint(path)) for step, path in rows]

    def latest_checkpoint(self, run_id: int) -> tuple[int, Path] | None:
        """The newest recorded checkpoint whose file exists (not checked further; `Trainer.resume` reads it)."""
        for step, path in self.checkpoints(run_id):
            if path.exists():
                return step, path
        return None

    def checkpoint_dir(self, run_id: int) -> Path:
        """The folder holding run `run_id`'s checkpoints under the data directory (created if missing):
        `checkpoints/run_N` for the default store `runs.sqlite`, `checkpoints/<store file name>/run_N` for any
        other, so two stores in one folder never write each other's run N."""
        folder = self.path.parent / "checkpoints"
        if self.path.name != "runs.sqlite":
            folder = folder / self.path.name
        path = folder / f"run_{int(run_id)}"
        path.mkdir(parents=True, exist_ok=True)
        return path

