"""Following the Compare page's Discover study while it trains (`DiscoverFollower`): its runner on a background
thread (`DiscoverRunner`, runner.py), ■ Stop discover, and the periodic tick that drains what the runner told into
the study's state and message on the server's event loop. Each tick that brings stored runs raises `stored`, so the
study's ranking is read again; a study that ended raises `ended` and asks the page to re-read its stored sweeps."""
from __future__ import annotations

import logging

import panel as pn
import param

from invlab.dashboard.compare.data import progress_text
from invlab.dashboard.compare.runner import DiscoverRunner
from invlab.dashboard.serving.periodic import background_periodic
from invlab.train.states import RunStatus, StudyState

log = logging.getLogger("invlab.dashboard.compare")


class DiscoverFollower(pn.viewable.Viewer):
    """The running Discover study (see the module's doc). `shown`: the study (a Parameterized whose `state` and
    `message` this part sets); `context`: the page's `CompareContext` (how often to draw; its stored sweeps)."""

    stored = param.Event(doc="Runs were stored since the last tick: the ranking is read again.")
    ended = param.Event(doc="The study ended (finished, stopped or failed).")
    busy_words = "the Discover study is running: ■ Stop discover first, or wait for it to finish"

    def __init__(self, shown, context):
        super().__init__()
        self.shown, self.context = shown, context
        context.trains(self)
        self.runner: DiscoverRunner | None = None
        self._callback = None
        self.stop_button = pn.widgets.Button(label="■ Stop discover", color="warning", width=150, disabled=True)
        self.stop_button.on_click(lambda *_: self.stop())

    def start(self, runner: DiscoverRunner) -> None:
        """Follow `runner` (not started yet) and start it: its state is starting until the first progress."""
        self.runner = runner.start()
        self.stop_button.disabled = False
        if self._callback is None and pn.state.curdoc is not None:
            self._callback = background_periodic(self.tick, self.context.tick_ms)

    def forget(self) -> None:
        """Follow nothing (a stored study is shown)."""
        self.runner = None

    def stop(self) -> None:
        """Stop the study: runs in progress are abandoned; what finished is kept and ranked (the report is partial)."""
        if self.running():
            self.runner.stop()
            self.shown.param.update(state=StudyState.STOPPING, message="stopping: runs in progress are abandoned; "
                                                                     "finished runs stay stored and ranked")

    def running(self) -> bool:
        """Whether the study's runs are training."""
        return self.runner is not None and not self.runner.finished

    def tick(self) -> None:
        """The periodic update: tell what was stored since the last tick; a failure to draw shows as the message."""
        try:
            self._tick()
        except Exception as err:  # noqa: BLE001 — a drawing failure must not stop the periodic callback
            log.exception("discover study update failed")
            self.shown.message = f"Could not update the page ({type(err).__name__}: {err}); the study goes on."

    def _tick(self) -> None:
        runner = self.runner
        if runner is None:
            self._stop_ticking()
            return
        progress, results, finished, error = runner.drain()
        if progress is not None and not finished:
            self.shown.param.update(state=StudyState.STOPPING if runner.stop_event.is_set() else StudyState.RUNNING,
                                    message=progress_text(progress))
        for candidate, seed, run_id, status, message in results:
            tail = f": {message}" if status != RunStatus.FINISHED and message else ""
            self.shown.message = f"{runner.plan.label(candidate)} seed {seed}: {status} (run {run_id}){tail}"
        if results or finished:
            self.param.trigger("stored")
        if finished:
            self._stop_ticking()
            self.stop_button.disabled = True
            if error:
                self.shown.param.update(state=StudyState.FAILED, message=f"the study failed: {error}")
            else:
                self.shown.param.update(state=StudyState.STOPPED if runner.stop_event.is_set() else StudyState.FINISHED,
                                        message=runner.lost)
            self.param.trigger("ended")
            self.context.param.trigger("sweeps_changed")

    def _stop_ticking(self) -> None:
        if self._callback is not None:
            self._callback.stop()
            self._callback = None

    def close(self) -> None:
        """The browser session ended: stop following and stop the study (finished runs stay stored)."""
        self._stop_ticking()
        if self.running():
            self.runner.stop()

    def __panel__(self):
        return self.stop_button


__all__ = ["DiscoverFollower"]
