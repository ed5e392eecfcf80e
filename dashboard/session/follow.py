"""Following a stored run that another process writes (a user's loop under `invlab.train.watch`, or `invlab train`):
the page draws the points it stores as they arrive, read a few times a second, and hears when it has stopped; while it
runs, the page judges its health (`invlab.train.health.assess`: collapsed, diverging, stalled) from what it stored.
The run's stored diagnostics views (its latest snapshot: image grids, spectra, ...) are shown as they are replaced."""
from __future__ import annotations

import math

from invlab.train import RunConfig, RunRecord, RunStore
from invlab.train.evaluation import Snapshot
from invlab.train.health import Health, assess

FOLLOW_SECONDS = 0.25  # a followed run is read again this often for new points


def gaps_as_nan(history: dict) -> dict:
    """{metric: (steps, values)} with a stored gap (None) as NaN, which a line plot leaves out."""
    return {name: (list(steps), [math.nan if v is None else v for v in values])
            for name, (steps, values) in history.items()}


class RunFollower:
    """Reads run `run_id` of `store` for metric rows written since the last read (by row, so a value stored late for
    an early step is not missed)."""

    def __init__(self, store: RunStore, run_id: int):
        self.store, self.run_id, self._row, self._view_row = store, int(run_id), 0, 0
        self.history: dict[str, tuple[list, list]] = {}  # everything read so far, {metric: (steps, values)}
        self.views: dict = {}  # the run's latest stored views read so far, {name: View}

    def read(self) -> tuple[dict, RunRecord]:
        """(new points as {metric: (steps, values)}, gaps as NaN; the run's record now). Raises `InvlabError` when
        the store cannot be read."""
        record = self.store.runs.get(self.run_id)  # first: a run that ended has stored all its points before
        points, self._row = self.store.metrics.written_after(self.run_id, self._row)
        points = gaps_as_nan(points)
        for name, (steps, values) in points.items():
            old_steps, old_values = self.history.get(name, ([], []))
            self.history[name] = (old_steps + steps, old_values + values)
        return points, record

    def read_views(self, record: RunRecord) -> Snapshot | None:
        """A snapshot holding all the run's stored views when some were stored since the last look, else None."""
        stored = self.store.views.written_after(self.run_id, self._view_row)
        self._view_row = stored.last
        if not stored.views:
            return None
        self.views.update(stored.views)
        return stored_snapshot(record, dict(self.views))

    def health(self, config: RunConfig) -> Health:
        """The run's health verdict from what it stored so far (see `followed_health`)."""
        return followed_health(self.history, config)


def stored_snapshot(record: RunRecord, views: dict) -> Snapshot:
    """A `Snapshot` of stored run `record` that carries its stored `views` ({name: View}) for the page to draw; the
    numbers a live trainer adds (speed, numerics, health) are unknown here and left at their defaults."""
    return Snapshot(step=record.step, status=record.status, parts={}, metrics={}, history={}, views=views,
                    run_id=record.id)


def followed_health(history: dict, config: RunConfig) -> Health:
    """The health verdict of a run another process writes, from its stored `history` ({metric: (steps, values)},
    in step order per read) and its stored `config`: no numerics and no data are at hand, so the verdict rests on the
    loss (or, for a loop that logs only the ELBO, the negative ELBO) and any logged test error or RMSE. Its hints say
    what to change in that loop (the page's buttons do not drive it)."""
    history = {name: _in_step_order(steps, values) for name, (steps, values) in history.items()}
    if "loss" not in history and "elbo" in history:
        steps, values = history["elbo"]
        history["loss"] = (steps, [-v for v in values])
    task = "classification" if "test_error" in history else "regression"
    rate = config.train.get("learning_rate")
    try:
        optimizer = config.optimizer_name()
    except Exception:  # noqa: BLE001 — a stored family no longer registered: judge it as a gradient loop
        optimizer = "adam"
    return assess(history, None, task=task, num_classes=None, optimizer=optimizer,
                  learning_rate=float(rate) if rate is not None else None, own_loop=True)


def _in_step_order(steps: list, values: list) -> tuple[list, list]:
    """One metric's points sorted by step (a value stored late for an early step joins where it belongs)."""
    pairs = sorted(zip(steps, values), key=lambda pair: pair[0])
    return [s for s, _ in pairs], [v for _, v in pairs]
