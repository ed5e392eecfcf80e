"""The run store's diagnostics views: the latest snapshot of each view of a run (not a history), so a page or notebook
that opens or follows the run shows its pictures (image grids, spectra, fields, scatters) as the run's own page did.

Views are queued like metrics (the newest per view replaces an older one not yet written) and written with the next
`flush()`; each is stored by `invlab.view_codec` (numbers, text and arrays of numbers only) and read back as the
engine's own view types. A stored view that cannot be read back is skipped and named, never run."""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...view_codec import ViewCodecError, decode_view, encode_view
from .faults import _guarded

if TYPE_CHECKING:
    from .connection import StoreConnection
    from .queue import WriteQueue

VIEWS_SCHEMA = """
CREATE TABLE IF NOT EXISTS views (
    id INTEGER PRIMARY KEY AUTOINCREMENT, run_id INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL,
    step INTEGER NOT NULL, kind TEXT NOT NULL, payload BLOB NOT NULL, updated REAL NOT NULL, UNIQUE (run_id, name)
);
"""


@dataclass
class StoredViews:
    """A run's stored views: `views` {name: View} in the order they were stored; `step`: the step of the newest;
    `skipped`: (name, why) of stored views that could not be read back; `last`: the newest row read (for
    `written_after`)."""

    views: dict = field(default_factory=dict)
    step: int | None = None
    skipped: list = field(default_factory=list)
    last: int = 0


def write_views(db, queued: dict) -> None:
    """Inside `flush`'s transaction on `db`: write the `queued` views ({(run id, name): (step, view)}), one row per
    (run, view) replacing the older one. A view that holds something other than numbers and text is left out, with a
    warning naming it."""
    now = time.time()
    for (run_id, name), (step, view) in queued.items():
        try:
            kind, payload = encode_view(view)
        except ViewCodecError as err:
            warnings.warn(f"run {run_id}: view {name!r} cannot be stored ({err}); the page shows it only while "
                          "this process runs", UserWarning, stacklevel=5)
            continue
        db.execute("INSERT OR REPLACE INTO views (run_id, name, step, kind, payload, updated) "
                   "VALUES (?, ?, ?, ?, ?, ?)", (run_id, name, step, kind, payload, now))


class Views:
    """Each run's latest diagnostics views (`store.views`): saved through the write queue, read from the connection."""

    def __init__(self, connection: StoreConnection, queue: WriteQueue):
        """`connection`: the store's connection; `queue`: its write queue (views go out with the next flush)."""
        self.connection, self.queue = connection, queue

    def save(self, run_id: int, step: int, views: dict) -> None:
        """Queue `views` ({name: View}) as run `run_id`'s latest at `step`; written with the next `flush()`. A view
        that holds something other than numbers and text is left out, with a warning naming it."""
        with self.connection.lock:
            for name, view in (views or {}).items():
                self.queue.views[(int(run_id), str(name))] = (int(step), view)

    @_guarded
    def read(self, run_id: int) -> StoredViews:
        """Run `run_id`'s stored views (see `StoredViews`); empty for a run that stored none."""
        return self.written_after(run_id, 0)

    @_guarded
    def written_after(self, run_id: int, row: int = 0) -> StoredViews:
        """The views of run `run_id` stored after row `row` (0: all), with the newest row read in `last`: what a page
        following a run another process writes has not shown yet."""
        if "views" not in self.connection.tables():
            return StoredViews(last=int(row))
        with self.connection.lock:
            rows = self.connection.db.execute("SELECT id, name, step, payload FROM views WHERE run_id = ? AND id > ? "
                                              "ORDER BY id", (int(run_id), int(row))).fetchall()
        out = StoredViews(last=rows[-1][0] if rows else int(row))
        for _, name, step, payload in rows:
            try:
                out.views[name] = decode_view(payload)
            except ViewCodecError as err:
                out.skipped.append((name, str(err)))
                continue
            out.step = step if out.step is None else max(out.step, step)
        return out
