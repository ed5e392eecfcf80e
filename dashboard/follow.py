"""Following a stored run that another process writes (a user's loop under `engine.train.watch`, or `invlab train`):
the page draws the points it stores as they arrive, read a few times a second, and hears when it has stopped."""
from __future__ import annotations

import math

from engine.train import RunRecord, RunStore

FOLLOW_SECONDS = 0.25  # a followed run is read again this often for new points


def gaps_as_nan(history: dict) -> dict:
    """{metric: (steps, values)} with a stored gap (None) as NaN, which a line plot leaves out."""
    return {name: (list(steps), [math.nan if v is None else v for v in values])
            for name, (steps, values) in history.items()}


class RunFollower:
    """Reads run `run_id` of `store` for metric rows written since the last read (by row, so a value stored late for
    an early step is not missed)."""

    def __init__(self, store: RunStore, run_id: int):
        self.store, self.run_id, self._row = store, int(run_id), 0

    def read(self) -> tuple[dict, RunRecord]:
        """(new points as {metric: (steps, values)}, gaps as NaN; the run's record now). Raises `InvlabError` when
        the store cannot be read."""
        record = self.store.get_run(self.run_id)  # first: a run that ended has stored all its points before
        points, self._row = self.store.metrics_written_after(self.run_id, self._row)
        return gaps_as_nan(points), record
