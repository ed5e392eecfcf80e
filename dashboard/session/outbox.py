"""`Outbox`: what a page's training thread hands its server thread, batched: new curve points (point by point, never
the whole history copied), the latest snapshot with views, a new run's label, config and curve layout, and the
model's tunables. The training thread fills it as it trains; the server thread takes it all a few times a second
(`drain`, as one `Update`), however fast training runs, so the thread never touches Bokeh."""
from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import replace

from invlab.dashboard.session.update import Update
from invlab.train import RunConfig


def _points() -> defaultdict:
    return defaultdict(lambda: ([], []))


class Outbox:
    """The batched hand-over from a `TrainingSession`'s thread to the page (see the module's doc), under its own lock.
    It keeps, per metric, how much of the trainer's history went out already (`publish` sends only what is new)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._points: dict[str, tuple[list, list]] = _points()
        self._cursor: dict[str, int] = {}
        self._snapshot = None
        self._tunables = None
        self._new_run = False
        self._run_label = ""
        self._run_config: RunConfig | None = None
        self._layout: tuple[str, ...] = ()

    def drain(self) -> Update:
        """Take what was put in since the last call as one `Update` (the new run's config and layout only with a
        new run)."""
        with self._lock:
            update = Update({k: v for k, v in self._points.items() if v[0]}, self._snapshot, self._new_run,
                            self._run_label, self._run_config if self._new_run else None, self._tunables,
                            self._layout if self._new_run else ())
            self._points = _points()
            self._snapshot, self._new_run, self._tunables = None, False, None
        return update

    def new_run(self, label: str, config: RunConfig, layout: tuple[str, ...], history: dict | None = None) -> None:
        """A new run replaces the last: what was queued of the old one is dropped, its stored `history` ({metric:
        (steps, values)}) goes first, and the next drain says so, with its label, config and curve layout."""
        with self._lock:
            self._points = _points()
            for name, (steps, values) in (history or {}).items():
                self._points[name] = (list(steps), list(values))
            self._cursor = {}
            self._new_run, self._run_label, self._run_config, self._layout = True, label, config, layout

    def add_points(self, new: dict) -> None:
        """Points not from a trainer's history ({metric: (steps, values)}: a followed run's) go with the next drain."""
        with self._lock:
            for name, (steps, values) in new.items():
                old_steps, old_values = self._points[name]
                self._points[name] = (old_steps + steps, old_values + values)

    def show_views(self, snapshot) -> None:
        """Hand a stored run's views (a `Snapshot`, or None when none are new) to the page with the next drain."""
        if snapshot is not None:
            with self._lock:
                self._snapshot = snapshot

    def publish(self, history: dict, snapshot=None, tunables=None) -> None:
        """The trainer's `history` points not sent yet, and `snapshot` (with `tunables`) if given: a view the page
        has not taken yet is kept, whatever the new snapshot left out."""
        with self._lock:
            for metric, (steps, values) in list(history.items()):
                start = self._cursor.get(metric, 0)
                if len(steps) > start:
                    out_s, out_v = self._points[metric]
                    out_s.extend(steps[start:])
                    out_v.extend(values[start:])
                    self._cursor[metric] = len(steps)
            if snapshot is not None:
                old = self._snapshot
                self._snapshot = snapshot if old is None else replace(snapshot, views={**old.views, **snapshot.views})
                self._tunables = tunables
