"""`PageFeed`: what a page's training thread publishes for the page, apart from the loop that trains: a run's curves
begun (its label, settings, stored history and curve layout), then its new points and, when due, a snapshot with the
views the page has on screen (`ShownViews`) and the model's tunables, all put into the `Outbox` that the server thread
drains."""
from __future__ import annotations

from invlab.dashboard.session.outbox import Outbox
from invlab.dashboard.views.run_layout import curve_layout
from invlab.dashboard.views.watch import ShownViews
from invlab.train import RunConfig, Trainer


class PageFeed:
    """Publishes a session's runs into `outbox`, computing only the views `shown` says the page has on screen."""

    def __init__(self, outbox: Outbox, shown: ShownViews):
        self.outbox, self.shown = outbox, shown

    def begin_run(self, label: str, config: RunConfig, trainer: Trainer | None, history: dict | None = None,
                  layout: tuple[str, ...] | None = None) -> None:
        """A new run's curves replace the last's: `label`, its `config`, its stored `history` ({metric: (steps,
        values)}) and `layout` (its metric names; None: the family's, from `config` and `trainer`'s data)."""
        if layout is None:  # the family's curves (a user's own loop's run names its own: `OwnLoop.layout`)
            task = trainer.dataset.task if trainer is not None else None
            layout = curve_layout(config.model, task, list(history or {}) + list(getattr(trainer, "history", {})))
        self.shown.new_run()  # a new run's first views are all computed: the page makes their panes
        self.outbox.new_run(label, config, layout, history)

    def publish(self, trainer: Trainer | None, force_views: bool = False, every_view: bool = False) -> None:
        """Copy `trainer`'s new history points (and, with `force_views`, a snapshot with views: those on screen, or
        all with `every_view`) into the outbox; nothing without a trainer."""
        if trainer is None:
            return
        snapshot = None
        if force_views:
            only = None if every_view else self.shown.selection()
            snapshot = trainer.report.snapshot(views=True, history=False, only=only)
            self.shown.computed(snapshot.views)
        tunables = trainer.model.tunables() if force_views and hasattr(trainer.model, "tunables") else None
        self.outbox.publish(trainer.history, snapshot, tunables)
