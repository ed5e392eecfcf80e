"""Following a sweep on the Compare page (`SweepFollowing`, a part the `ComparePage` holds as `page.following`):
starting, stopping and opening a sweep, the periodic tick that drains the runner's progress on the server's event
loop, reading the sweep's comparison from the store, and drawing the status line, the table and the plots.
"""
from __future__ import annotations

import logging
import time

import pandas as pd
import panel as pn
import param

from invlab.dashboard.compare.context import CompareContext
from invlab.dashboard.compare.data import AxisData, axis_data, primary_axis, progress_text, score_of, target_name
from invlab.dashboard.compare.plots import against_setting_plot, curves_plot
from invlab.dashboard.compare.runner import SweepRunner
from invlab.dashboard.compare.sweep_rows import empty_frame, sweep_rows, titles
from invlab.dashboard.compare.table import RunTable
from invlab.dashboard.safe_text import html_text, markdown_text
from invlab.dashboard.serving.periodic import background_periodic
from invlab.dashboard.state_words import row_word, state_colour, state_word
from invlab.errors import InvlabError
from invlab.sweeps import SweepSpec, comparison
from invlab.train import RunStore
from invlab.train.states import PlannedRunState, RunStatus, StudyState, SweepEventKind

log = logging.getLogger("invlab.dashboard.compare")

ENDED = (RunStatus.FINISHED, RunStatus.FAILED)  # a stored run whose ELBO curve is read once


def _told() -> dict:
    """What the running sweep told of a run so far: nothing yet (queued)."""
    return {"status": PlannedRunState.QUEUED, "step": 0, "history": ([], [])}


class SweepFollowing(pn.viewable.Viewer):
    """The sweep the Compare page shows: its runner, its table and plots, Stop and Resume (see the module's doc).

    Parts it uses: `shown` (a Parameterized whose `sweep_id`, `state` and `message` this part sets and the status
    line shows) and `context` (a `CompareContext`: the run store, how often a running sweep is drawn; a click on a
    stored run asks it to open the run, a sweep that ended to re-read the stored sweeps). ▶ Resume raises `resume`."""

    resume = param.Event(doc="▶ Resume: the page runs the missing runs of the sweep shown.")
    busy_words = "a sweep is running: stop it first (■ Stop), or wait for it to finish"

    def __init__(self, shown, context: CompareContext):
        super().__init__(name="Sweep")
        self.shown, self.context = shown, context
        context.trains(self)
        self.runner: SweepRunner | None = None
        self.cmp = None  # the latest Comparison read from the store
        self.axes: list[str] = []
        self._planned: list = []  # PlannedRun of the sweep being run (rows before they are stored)
        self._live: dict[str, dict] = {}  # key → {"status", "step", "steps", "elbo", "history": ([s], [v])}
        self._histories: dict[str, tuple] = {}  # key → (steps, elbos) of stored runs
        self._target_of: tuple | None = None  # (sweep id, its regression's target column or None), once read
        self._stored_done = -1
        self._last_curves = 0.0
        self._callback = None
        self.stop_button = pn.widgets.Button(label="■ Stop", color="warning", width=100, disabled=True)
        self.resume_button = pn.widgets.Button(label="▶ Resume", color="success", width=110, visible=False,
                                               description="Run this sweep's missing runs")
        self.stop_button.on_click(lambda *_: self.stop())
        self.resume_button.on_click(lambda *_: self.param.trigger("resume"))
        self.status_pane = pn.pane.HTML("", sizing_mode="stretch_width", margin=(4, 10),
                                        css_classes=["invlab-sweep-status"])
        self.not_comparable = pn.pane.Alert("", alert_type="warning", visible=False, sizing_mode="stretch_width",
                                            css_classes=["invlab-not-comparable"])
        self.run_table = RunTable(empty_frame(), self._on_select, show_index=False, disabled=True, selectable=1,
                                  pagination=None, header_filters=True, layout="fit_data_table", max_height=420,
                                  sizing_mode="stretch_width", css_classes=["invlab-sweep-table"])
        self.elbo_pane = pn.pane.HoloViews(against_setting_plot(AxisData(None), "elbo"), linked_axes=False,
                                           name="elbo_vs_setting")
        self.error_pane = pn.pane.HoloViews(against_setting_plot(AxisData(None), "error"), linked_axes=False,
                                            name="error_vs_setting")
        self.curves_pane = pn.pane.HoloViews(curves_plot({}, [], None), linked_axes=False, name="elbo_curves")
        shown.param.watch(self._show_state, ["state", "message", "sweep_id"])
        self._show_state()

    @property
    def table(self) -> pn.widgets.Tabulator:
        """The table of the sweep's runs shown now (`RunTable.widget`)."""
        return self.run_table.widget

    @property
    def store(self) -> RunStore | None:
        """The page's run store (None without one)."""
        return self.context.store

    def __panel__(self) -> pn.Column:
        """Stop and Resume beside the status line, the warning that runs are not comparable, the table, the plots."""
        plots = pn.FlexBox(self.elbo_pane, self.error_pane, self.curves_pane, sizing_mode="stretch_width")
        return pn.Column(pn.Row(self.stop_button, self.resume_button, self.status_pane, sizing_mode="stretch_width"),
                         self.not_comparable, self.run_table, plots, sizing_mode="stretch_width")

    def _on_select(self, event) -> None:
        if not event.new:
            return
        index = event.new[0]
        frame = self.table.value
        if index >= len(frame):
            return
        run_id = frame.iloc[index]["run"]
        if run_id is None or pd.isna(run_id):
            self.shown.message = "this run is not stored yet: it opens once it has finished"
            return
        self.context.ask_to_open(int(run_id))

    # -- starting, stopping and opening a sweep ------------------------------------------------------------------------
    def start(self, spec: SweepSpec, planned: list, sweep_id: int | None, *, scheduler: str | None,
              n_workers: int | None, shared: bool) -> None:
        """Run `spec` (its runs `planned`; or resume sweep `sweep_id`) on a background thread and follow it."""
        runner = SweepRunner(spec, self.store, sweep_id=sweep_id, scheduler=scheduler, n_workers=n_workers,
                             shared=shared)
        self.follow(runner, planned, list(spec.vary))
        runner.start()

    def follow(self, runner, planned: list, axes: list[str]) -> None:
        """Follow `runner` (a `SweepRunner`, or anything whose `drain()` gives the same), its runs `planned` varying
        `axes`: the table lists them queued, and each tick draws what the runner told."""
        self._reset_view(planned, axes)
        self.shown.param.update(sweep_id=runner.sweep_id, state=StudyState.STARTING,
                                message=f"starting Dask workers for {len(planned)} runs…")
        self.runner = runner
        self.stop_button.disabled = False
        self.resume_button.visible = False
        self._start_ticking()

    def stop(self) -> None:
        """Stop the running sweep: runs in progress are abandoned, finished runs stay stored and Resume
        runs the rest."""
        if self.runner is not None and not self.runner.finished:
            self.runner.stop()
            self.shown.state = StudyState.STOPPING
            self.shown.message = "stopping: runs in progress are abandoned; finished runs stay stored"

    def close(self) -> None:
        """The browser session ended: stop following and stop the sweep (finished runs stay stored)."""
        self._stop_ticking()
        if self.runner is not None and not self.runner.finished:
            self.runner.stop()

    def running(self) -> bool:
        """Whether the sweep followed is still running."""
        return self.runner is not None and not self.runner.finished

    # -- the tick: drain the sweep's progress into the page (server thread) --------------------------------------------
    def _start_ticking(self) -> None:
        if self._callback is None and pn.state.curdoc is not None:
            self._callback = background_periodic(self.tick, self.context.tick_ms)

    def _stop_ticking(self) -> None:
        if self._callback is not None:
            self._callback.stop()
            self._callback = None

    def tick(self) -> None:
        """The periodic update: draw the runs that finished since the last tick; a failure to draw shows as the message
        and the sweep goes on."""
        try:
            self._tick()
        except Exception as err:  # noqa: BLE001 — a drawing failure must not stop the periodic callback
            log.exception("compare page update failed")
            self.shown.message = f"Could not update the page ({type(err).__name__}: {err}); the sweep goes on."

    def _tick(self) -> None:
        runner = self.runner
        if runner is None:
            self._stop_ticking()
            return
        progress, events, finished, error = runner.drain()
        if runner.sweep_id is not None and self.shown.sweep_id != runner.sweep_id:
            self.shown.sweep_id = runner.sweep_id
        stored = False
        for event in events:
            stored = self._told(event) or stored
        if progress is not None and not finished:
            self.shown.state = StudyState.STOPPING if runner.stop_event.is_set() else StudyState.RUNNING
            self.shown.message = progress_text(progress)
        if stored or finished or (self.cmp is None and self.shown.sweep_id is not None):
            self.refresh()
        else:
            self._show_table()
            if time.perf_counter() - self._last_curves > 2.0 and events:
                self._show_curves()
        if finished:
            self._finish(runner, progress, error)

    def _told(self, event) -> bool:
        """Note what `event` (a `SweepEvent`) tells of its run; whether a run was stored."""
        if event.key is None or event.run_status is None:
            return False
        live = self._live.setdefault(event.key, _told())
        live["status"] = event.run_status
        if event.kind == SweepEventKind.STEP:
            live["step"] = int(event.step if event.step is not None else live["step"])
            if event.elbo is not None:
                live["elbo"] = float(event.elbo)
                live["history"][0].append(live["step"])
                live["history"][1].append(float(event.elbo))
        if event.kind == SweepEventKind.STORED:
            live["message"] = event.message or ""
            return True
        return False

    def _finish(self, runner: SweepRunner, progress, error: str | None) -> None:
        self._stop_ticking()
        self.stop_button.disabled = True
        self.context.param.trigger("sweeps_changed")
        if error:
            self.shown.param.update(state=StudyState.FAILED, message=f"the sweep failed: {error}")
        elif runner.stop_event.is_set():  # stopped, or its scheduler was lost (`runner.lost` says so)
            done = progress.done if progress is not None else 0
            total = progress.total if progress is not None else len(self._planned)
            self.shown.param.update(state=StudyState.STOPPED, message=runner.lost or
                                    f"stopped with {done} of {total} runs stored; ▶ Resume runs the rest")
            self.resume_button.visible = self.shown.sweep_id is not None
        else:
            text = progress_text(progress) if progress is not None else ""
            self.shown.param.update(state=StudyState.FINISHED, message=text)
        for plan in self._planned:  # nothing runs any more: what did not finish says so
            live = self._live.setdefault(plan.key, _told())
            if live["status"] in (RunStatus.RUNNING, PlannedRunState.QUEUED):
                live["status"] = PlannedRunState.NOT_RUN
        self.refresh()

    # -- reading the store ---------------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the sweep's comparison from the store and redraw the table and plots."""
        if self.shown.sweep_id is None or self.store is None:
            self._show_table()
            return
        try:
            cmp = comparison(self.store, self.shown.sweep_id)
        except InvlabError as err:
            self.shown.message = str(err)
            return
        self.cmp = cmp
        self.axes = list(cmp.axes) or self.axes
        for run in cmp.runs:
            key = run.get("key")
            if run.get("run_id") is not None and key not in self._histories and run.get("status") in ENDED:
                try:
                    self._histories[key] = cmp.history(run["run_id"])
                except InvlabError:
                    pass
        self.not_comparable.object = (f"**These runs are not compared on one axis:** {markdown_text(cmp.reason)}"
                                      if not cmp.comparable else "")
        self.not_comparable.visible = not cmp.comparable
        self._show_table()
        self._show_plots()

    # -- drawing -------------------------------------------------------------------------------------------------------
    def rows(self) -> pd.DataFrame:
        """The table: one row per run, stored or planned, in the sweep's order (`sweep_rows`)."""
        frame = sweep_rows(self.axes, self._stored_runs(), self._planned, self._live, self._histories, self._score())
        frame["status"] = [row_word(status) for status in frame["status"]]
        return frame

    def _stored_runs(self) -> list[dict]:
        return list(self.cmp.runs) if self.cmp is not None else []

    def _score(self) -> str:
        """"rmse" once the sweep's stored runs are regressions, else "error" (see `score_of`)."""
        return score_of(self._stored_runs())

    def _target(self) -> str | None:
        """The target column of the sweep's regression (naming its RMSE's units), read once per sweep: the data is
        loaded to read it."""
        sweep_id = self.shown.sweep_id
        if self._target_of is None or self._target_of[0] != sweep_id:
            self._target_of = (sweep_id, target_name([plan.config.data for plan in self._planned]))
        return self._target_of[1]

    def _show_table(self) -> None:
        score = self._score()
        target = self._target() if score == "rmse" else None
        self.run_table.show(self.rows(), titles(self.axes, score, target))

    def _show_plots(self) -> None:
        data = AxisData(None)
        if self.cmp is not None:
            data = axis_data(self.cmp, self._target() if self._score() == "rmse" else None)
        self.axis_data = data
        self.elbo_pane.object = against_setting_plot(data, "elbo")
        self.error_pane.object = against_setting_plot(data, data.score)
        self._show_curves()

    def _show_curves(self) -> None:
        self._last_curves = time.perf_counter()
        histories = dict(self._histories)
        runs = list(self.cmp.runs) if self.cmp is not None else []
        keys = {r.get("key") for r in runs}
        planned = {p.key: p for p in self._planned}
        for key, live in self._live.items():
            if key not in histories and live["history"][0]:
                histories[key] = live["history"]
                if key not in keys and key in planned:
                    runs.append({"key": key, **planned[key].point, "learned": {}})
        x = primary_axis(self.axes, runs) if runs else None
        self.curves_pane.object = curves_plot(histories, runs, x)

    def _show_state(self, *_) -> None:
        colour, sweep_id = state_colour(self.shown.state, StudyState), self.shown.sweep_id
        sweep = f"sweep <b data-field=\"sweep\">#{sweep_id}</b>" if sweep_id is not None else "no sweep open"
        word = html_text(state_word(self.shown.state, StudyState))
        state = f'<b style="color:{colour}" data-field="sweep-state">{word}</b>'
        message = f'<span data-field="sweep-message">{html_text(self.shown.message)}</span>'
        self.status_pane.object = f"{state} · {sweep} · {message}"

    def open_sweep(self, sweep_id: int):
        """Show stored sweep `sweep_id` (a running sweep on this page keeps running in the background); returns its
        record, or None when it is followed live already. No store, or no such sweep, raises InvlabError saying so."""
        if self.store is None:
            raise InvlabError("this page has no run store")
        record = self.store.sweeps.get(int(sweep_id))
        if self.runner is not None and self.runner.sweep_id == int(sweep_id) and not self.runner.finished:
            return None  # already following it live
        try:
            self._reset_view(SweepSpec.from_json(record.spec).runs(), [])
        except InvlabError:  # a specification this version no longer accepts: show what is stored
            self._reset_view([], [])
        self.runner = None
        for plan in self._planned:  # until the store has them, the sweep's runs are runs it has not run
            self._live[plan.key] = {**_told(), "status": PlannedRunState.NOT_RUN}
        stored = sum(r.status == RunStatus.FINISHED for r in self.store.sweeps.runs(record.id))
        complete = stored >= (record.total or 0)
        self.shown.param.update(sweep_id=int(sweep_id), state=StudyState.FINISHED if complete else StudyState.STOPPED,
                                message=self._record_text(record) + ("" if complete else "; ▶ Resume runs the rest"))
        self.resume_button.visible = not complete
        self.stop_button.disabled = True
        self.refresh()
        return record

    def _record_text(self, record) -> str:
        stored = sum(r.status == RunStatus.FINISHED for r in self.store.sweeps.runs(record.id))
        total = getattr(record, "total", 0) or stored
        return f"{record.name or 'sweep'}: {stored} of {total} runs stored"

    def _reset_view(self, planned: list, axes: list[str]) -> None:
        self._planned = list(planned)
        self.axes = list(axes)
        self._live, self._histories = {}, {}
        self._stored_done = -1
        self.cmp = None
        self.not_comparable.visible = False
        self._show_table()
        self._show_plots()
