"""What the run store reads back: a run or sweep row as a dataclass, its status as the enum member it names."""
from __future__ import annotations

from dataclasses import dataclass

from ..states import RunStatus, SweepStatus
from .connection import StoreConnection
from .faults import RunStoreError
from .owners import Owners


def _member(enum: type, text):
    """`text` as `enum`'s member when it names one (so `record.status is RunStatus.KILLED`); other text (a status an
    older or newer version wrote) as it is."""
    try:
        return enum(text)
    except ValueError:
        return text


@dataclass
class RunRecord:
    """One stored run as read from the store (times in seconds since the epoch; `config` is the RunConfig JSON)."""

    id: int
    created: float
    updated: float
    model: str
    dataset: str
    config: str
    status: str  # a RunStatus member
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

    def __post_init__(self):
        self.status = _member(RunStatus, self.status)

    def summary(self) -> dict:
        """The fields `invlab runs --json` prints."""
        return {k: getattr(self, k) for k in ("id", "name", "model", "dataset", "status", "step", "elbo", "test_error",
                                              "test_rmse", "test_nlpd", "full_elbo")}


@dataclass
class SweepRecord:
    """One stored sweep as read from the store (times in seconds since the epoch)."""

    id: int
    created: float
    updated: float
    name: str
    spec: str  # the SweepSpec as JSON
    status: str  # a SweepStatus member: running, interrupted, finished, ...
    total: int  # planned runs
    owner: str | None = None  # the logged-in user who started it (a server with logins), else None

    def __post_init__(self):
        self.status = _member(SweepStatus, self.status)

    def summary(self) -> dict:
        """The fields `invlab sweeps --json` prints."""
        return {k: getattr(self, k) for k in ("id", "name", "status", "total", "created", "updated")}


def read_records(connection: StoreConnection, record: type, table: str, tail: str, args: tuple = ()) -> list:
    """Rows of `table` as `record` dataclasses (its fields are the columns read; a column an old store opened
    read-only lacks reads as None), selected by `tail`."""
    have = connection.has_columns(table)
    cols = ", ".join(name if name in have else "NULL" for name in record.__dataclass_fields__)
    with connection.lock:
        rows = connection.db.execute(f"SELECT {cols} FROM {table} {tail}", args).fetchall()
    return [record(*row) for row in rows]


def record_by_id(connection: StoreConnection, owners: Owners, record: type, table: str, what: str, key: int):
    """The row `key` of `table` as `record`; `RunStoreError` naming the listing command when there is none (an id
    beyond SQLite's integers included, rather than an OverflowError) or it belongs to another user."""
    found = [] if int(key).bit_length() > 63 else read_records(connection, record, table, "WHERE id = ?", (int(key),))
    if not found:
        raise RunStoreError(f"no {what} with id {key} in {connection.path}; `invlab {what}s` lists the stored {what}s")
    owners.check(what, key, found[0].owner)
    return found[0]
