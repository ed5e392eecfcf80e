"""LiveFeed: the periodic tick that drains a TrainingSession into the page's curves and views.

Runs on the server thread (or the notebook kernel's loop), about once a second however fast training
goes. A new run's curves are laid out when the run is built (`Update.layout`), before any of its data; the
points then go out as `ColumnDataSource.stream` appends (in a notebook, pushed at the end of the tick). Plots that
are still new are attached to the document before data is streamed into them; secondary curves go out every few
seconds; the tick's period stretches with its own cost (never more than `max_period_ms`)
so a busy page never starves the event loop nor falls seconds behind.
"""
from __future__ import annotations

import contextlib
import logging
import time
import weakref

import panel as pn

from invlab.dashboard.serving.periodic import background_periodic
from invlab.dashboard.session.training import TrainingSession
from invlab.dashboard.session.update import Update
from invlab.dashboard.views.panes import CurveBoard, ViewPane
from invlab.train.states import RunStatus

log = logging.getLogger(__name__)

MAIN_CURVES = {"elbo", "test_error", "test_rmse", "test_nlpd"}
TICKING: "weakref.WeakSet[LiveFeed]" = weakref.WeakSet()  # the feeds of this process's pages that are ticking


class LiveFeed:
    """Moves what the training thread produced onto the page at a few Hz: curve points into their buffers, snapshots
    into the diagnostic panes, however fast training runs."""
    MAIN_EVERY = 1.0  # seconds between updates of the main curves (ELBO, test metrics)
    EXTRA_EVERY = 2.0  # seconds between updates of the secondary curves (loss terms)

    def __init__(self, session: TrainingSession, *, tick_ms: int = 1000, max_period_ms: int = 2000):
        self.session = session
        self.tick_ms, self.max_period_ms = tick_ms, max_period_ms
        self.curves = CurveBoard()
        self.view_panes: dict[str, ViewPane] = {}
        self.views_area = pn.FlexBox(sizing_mode="stretch_width")
        self.callback = None
        self.last_snapshot = None
        self._pending_main: dict[str, tuple[list, list]] = {}
        self._pending_extra: dict[str, tuple[list, list]] = {}
        self._last_main = self._last_extra = 0.0

    # -- lifecycle -----------------------------------------------------------------------------------------------------
    def start(self, tick) -> None:
        """Run `tick` periodically (under a server or in a notebook)."""
        if self.callback is None:
            self.callback = background_periodic(tick, self.tick_ms)
            TICKING.add(self)

    def stop(self) -> None:
        """Stop the periodic callback (the page or notebook closed)."""
        TICKING.discard(self)
        if self.callback is not None:
            self.callback.stop()
            self.callback = None

    # -- one tick ------------------------------------------------------------------------------------------------------
    def drain(self, on_new_run, flush=lambda: None) -> Update:
        """Take what the session produced and send it to the page; `on_new_run(update)` runs before a new run's data,
        `flush()` (`one_message`'s) once new plots are attached, before data is streamed into them."""
        started = time.perf_counter()
        notebook_roots = self._hold_notebook_documents()
        update = self.session.drain()
        building = 0.0
        with batched_recompute(pn.state.curdoc) as attach_new_models:
            created = False
            if update.new_run:
                self._pending_main, self._pending_extra = {}, {}
                on_new_run(update)  # the old run's curves archived under its name first
                self.curves.run_name = self._run_name(update.run_label)
                created = self.curves.prepare(update.layout)  # every curve of the run, before its data
            sends = self._curves_to_send(update)
            if self._add_panes([metric for metric, _, _ in sends], update.snapshot, update.new_run) or created:
                attach_new_models()  # before any data is streamed into the new plots
                flush()  # and sent to the page as they are
            building = time.perf_counter() - started
            for metric, steps, values in sends:
                self.curves.send(metric, steps, values)
            if update.snapshot is not None:
                self.last_snapshot = update.snapshot
                self._show_views(update.snapshot.views)
        self._push_to_notebook(notebook_roots)
        # creating plots is a one-off (about 1.5 s when a run's first data arrives): pace on the steady-state work
        self._pace(time.perf_counter() - started - building)
        return update

    def _run_name(self, label: str) -> str:
        """The run the curves show, as their CSV names it: "run 7" (its id in the store), with a watched loop's own
        name after it ("run 7 my-loop")."""
        name = label.removeprefix("stored ")
        loop = self.session.opened.shown_loop()
        return f"{name} {loop.name}" if loop is not None else name

    def _curves_to_send(self, update) -> list[tuple[str, list, list]]:
        """New points, batched: main curves at most every MAIN_EVERY seconds, secondary ones (loss terms) every
        EXTRA_EVERY; a curve's first points, a new run and a run that stops go out at once.

        Every send redraws its plot in the browser, so batching is what keeps several pages on one server
        responsive; a second's delay on a curve is invisible next to a status that lags."""
        has_elbo = "elbo" in update.points or "elbo" in self.curves.buffers or "elbo" in update.layout
        urgent = update.new_run or (update.snapshot is not None and update.snapshot.status != RunStatus.RUNNING)
        for metric, (steps, values) in update.points.items():
            if metric == "loss" and has_elbo:
                continue  # −ELBO: the same curve upside down
            main = metric in MAIN_CURVES or metric == "loss"
            pending = (self._pending_main if main else self._pending_extra).setdefault(metric, ([], []))
            pending[0].extend(steps)
            pending[1].extend(values)
            buffer = self.curves.buffers.get(metric)
            urgent = urgent or (main and (buffer is None or len(buffer.data) == 0))  # a curve's first points
        now = time.perf_counter()
        sends = []
        if urgent or now - self._last_main >= self.MAIN_EVERY:
            sends.extend((metric, steps, values) for metric, (steps, values) in self._pending_main.items())
            self._pending_main, self._last_main = {}, now
        if urgent or now - self._last_extra >= self.EXTRA_EVERY:
            sends.extend((metric, steps, values) for metric, (steps, values) in self._pending_extra.items())
            self._pending_extra, self._last_extra = {}, now
        return [(metric, steps, values) for metric, steps, values in sends if len(steps)]

    def _add_panes(self, metrics, snapshot, new_run: bool = False) -> bool:
        """Create the plots about to receive data; True if any were created.

        A new plot's data source must be attached to the document before its first data is streamed: a
        detached source emits no events, so the browser would keep the empty copy it received with the plot."""
        created = False
        for metric in metrics:
            if metric not in self.curves.buffers:
                self.curves.buffer(metric)
                created = True
        if snapshot is not None:
            for view in snapshot.views.values():  # one view per quantity: a model curve covers history metrics
                covers = getattr(view, "covers", None)
                if covers:
                    self.curves.hide(*covers)
            for name, view in snapshot.views.items():
                pane = self.view_panes.get(name)
                if pane is None or pane.kind is not type(view):
                    if pane is not None:
                        self.detach(pane.panel)
                    self.view_panes[name] = ViewPane(name, view, large=self.curves.large)  # presenter mode
                    self.views_area.append(self.view_panes[name].panel)
                    created = True
            stale = [k for k in self.view_panes if k not in snapshot.views] if new_run else []
            for name in stale:  # a new run of another family: its views replace the old ones
                self.detach(self.view_panes.pop(name).panel)
        return created

    def detach(self, panel) -> None:
        """Take a view's panel off the page: from the views' grid, or from the first row of curves where a lesson's
        key view is placed (`page_layout.KeyViewPlacer`)."""
        for layout in (self.views_area, self.curves.layout):
            if panel in layout.objects:
                layout.remove(panel)

    def _hold_notebook_documents(self) -> list[str]:
        """In a notebook, the root ids of the outputs showing this feed, their documents held so that every change
        of this tick (new plots included) waits for `_push_to_notebook`. (An unheld notebook document hands the
        events of a layout change made outside a cell or comm message to no one: the page would never get the new
        plots, and later data would refer to models it does not know.) Nothing under a server."""
        doc = pn.state.curdoc
        if doc is not None and doc.session_context is not None:
            return []
        roots = []
        for ref in list(self.curves.layout._models):
            entry = pn.state._views.get(ref)
            if entry is not None and entry[3] is not None:  # (viewable, root, document, comm)
                if not entry[2].callbacks.hold_value:
                    entry[2].hold("combine")
                roots.append(ref)
        return roots

    @staticmethod
    def _push_to_notebook(roots: list[str]) -> None:
        """In a notebook, send the tick's changes now (a served page's document sends its own)."""
        if roots:
            from panel.io.notebook import push_on_root

            for ref in roots:
                push_on_root(ref)

    def _show_views(self, views) -> None:
        for name, view in views.items():
            pane = self.view_panes[name]
            if pane.pipe.data is not view:
                pane.update(view)

    def _pace(self, elapsed: float) -> None:
        """Keep all pages' ticks together under about a quarter of the server's event loop (in a notebook: the
        kernel's), each period within [tick_ms, max_period_ms].

        A periodic callback that overruns its period is re-run at once without yielding, which would starve the
        loop (clicks wait behind ticks; in a notebook no cell runs); the cap keeps a page from lagging."""
        cb = self.callback
        if cb is None:
            return
        pages = max(1, len(TICKING))
        period = min(max(self.tick_ms, int(4000 * elapsed * pages)), self.max_period_ms)
        if abs(period - cb.period) > 0.25 * cb.period:
            cb.period = period


@contextlib.contextmanager
def batched_recompute(doc):
    """Recompute the Bokeh document's model graph at most once, and only if some update changed it.

    Each plot update otherwise freezes and re-walks the whole graph (≈35 ms on this page, several times
    per tick). Uses Bokeh's model manager internals; without them (another Bokeh) it does nothing special.
    """
    models = getattr(doc, "models", None)
    if models is None or not all(hasattr(models, a) for a in ("_push_freeze", "_freeze_count", "recompute")):
        yield lambda: None
        return
    dirty = []

    def attach_new_models():
        """Recompute now: models added so far join the document (and get their document) before the block ends."""
        if dirty:
            dirty.clear()
            models.recompute()

    models._push_freeze()
    models.invalidate = lambda: dirty.append(True)  # instance attribute shadows the method while batching
    try:
        yield attach_new_models
    finally:
        del models.invalidate
        models._freeze_count -= 1
        if models._freeze_count == 0 and dirty:
            models.recompute()
