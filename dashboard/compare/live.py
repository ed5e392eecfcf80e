"""Following a sweep on the Compare page: the periodic tick that drains the runner's progress on the server's event
loop, reading the sweep's comparison from the store, and drawing the table, the plots and the status line.

Mixed into `ComparePage` (page.py), which holds the widgets and the page's state.
"""
from __future__ import annotations

import logging
import time

import pandas as pd
import panel as pn

from invlab.dashboard.compare.data import (
    AxisData,
    _finite,
    _is_number,
    _round,
    axis_data,
    field_name,
    primary_axis,
    progress_text,
)
from invlab.dashboard.compare.plots import against_setting_plot, curves_plot
from invlab.dashboard.compare.runner import SweepRunner
from invlab.dashboard.safe_text import html_text, markdown_text
from invlab.dashboard.serving.periodic import background_periodic
from invlab.dashboard.views.panes import RANGE_UNITS
from invlab.errors import InvlabError
from invlab.sweeps import comparison
from invlab.train.states import StudyState

log = logging.getLogger("invlab.dashboard.compare")

STATE_COLOURS = {StudyState.IDLE: "#666", StudyState.STARTING: "#9a6a00", StudyState.RUNNING: "#23843a",
                 StudyState.STOPPING: "#1f6fb5", StudyState.STOPPED: "#1f6fb5", StudyState.FINISHED: "#23843a",
                 StudyState.FAILED: "#c0392b"}


def change_table(table: pn.widgets.Tabulator, frame: pd.DataFrame, titles: dict) -> None:
    """Show `frame` in `table` with column `titles` ({field: title}), as one update of the page, and only what
    changed. Tabulator rebuilds itself a moment after its columns' titles change; titles and rows sent as two
    updates let the second reach a table still being rebuilt, which threw in the browser ("Cannot read
    properties of null (reading 'firstChild')") when a stored sweep was opened by its link."""
    changes = {}
    if table.titles != titles:
        changes["titles"] = titles
    if not frame.equals(table.value) or list(frame.columns) != list(table.value.columns):
        changes["value"] = frame
    if changes:
        table.param.update(**changes)


class SweepFollowing:
    """Mixed into `ComparePage`: following the sweep shown and drawing it (see the module's doc)."""

    # -- the tick: drain the sweep's progress into the page (server thread) --------------------------------------------
    def _start_ticking(self) -> None:
        if self._callback is None and pn.state.curdoc is not None:
            self._callback = background_periodic(self.tick, self.tick_ms)

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
            self.message = f"Could not update the page ({type(err).__name__}: {err}); the sweep goes on."

    def _tick(self) -> None:
        runner = self.runner
        if runner is None:
            self._stop_ticking()
            return
        progress, events, finished, error = runner.drain()
        if runner.sweep_id is not None and self.sweep_id != runner.sweep_id:
            self.sweep_id = runner.sweep_id
        stored = False
        for event in events:
            key = event.get("key")
            kind = event.get("kind", "")
            if key is None:
                continue
            live = self._live.setdefault(key, {"status": "queued", "step": 0, "history": ([], [])})
            if kind == "step":
                live["status"] = "running"
                live["step"] = int(event.get("step", live["step"]))
                if event.get("elbo") is not None:
                    live["elbo"] = float(event["elbo"])
                    live["history"][0].append(live["step"])
                    live["history"][1].append(float(event["elbo"]))
            elif kind in ("start", "started", "running"):
                live["status"] = "running"
            elif kind in ("done", "stored", "finished"):
                live["status"] = "done"
                stored = True
            elif kind in ("failed", "error"):
                live["status"] = "failed"
                live["message"] = str(event.get("message") or event.get("error") or "")
                stored = True
        if progress is not None and not finished:
            self.state = StudyState.STOPPING if runner.stop_event.is_set() else StudyState.RUNNING
            self.message = progress_text(progress)
        if stored or finished or (self.cmp is None and self.sweep_id is not None):
            self.refresh()
        else:
            self._show_table()
            if time.perf_counter() - self._last_curves > 2.0 and events:
                self._show_curves()
        if finished:
            self._finish(runner, progress, error)

    def _finish(self, runner: SweepRunner, progress, error: str | None) -> None:
        self._stop_ticking()
        self.stop_button.disabled = True
        self.refresh_sweeps()
        if error:
            self.param.update(state=StudyState.FAILED, message=f"the sweep failed: {error}")
        elif runner.stop_event.is_set():
            done = progress.done if progress is not None else 0
            total = progress.total if progress is not None else len(self._planned)
            self.param.update(state=StudyState.STOPPED,
                              message=f"stopped with {done} of {total} runs stored; ▶ Resume runs the rest")
            self.resume_button.visible = self.sweep_id is not None
        else:
            text = progress_text(progress) if progress is not None else ""
            self.param.update(state=StudyState.FINISHED, message=text)
        for plan in self._planned:  # nothing runs any more: what did not finish says so
            live = self._live.setdefault(plan.key, {"status": "queued", "step": 0, "history": ([], [])})
            if live["status"] in ("running", "queued"):
                live["status"] = "not run"
        self.refresh()

    # -- reading the store ---------------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the sweep's comparison from the store and redraw the table and plots."""
        if self.sweep_id is None or self.store is None:
            self._show_table()
            return
        try:
            cmp = comparison(self.store, self.sweep_id)
        except InvlabError as err:
            self.message = str(err)
            return
        self.cmp = cmp
        self.axes = list(cmp.axes) or self.axes
        for run in cmp.runs:
            key = run.get("key")
            if run.get("run_id") is not None and key not in self._histories and run.get("status") in (
                    "finished", "converged", "done", "failed", "stopped"):
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
        """The table: one row per run, stored or planned, in the sweep's order."""
        axes = self.axes
        stored = {r.get("key"): r for r in (self.cmp.runs if self.cmp is not None else [])}
        keys = [p.key for p in self._planned] or list(stored)
        keys += [k for k in stored if k not in keys]
        planned = {p.key: p for p in self._planned}
        records = []
        for key in keys:
            run, plan, live = stored.get(key), planned.get(key), self._live.get(key, {})
            point = dict(plan.point) if plan is not None else {a: run.get(a) for a in axes}
            row = {"run": run.get("run_id") if run else None,
                   "status": (run.get("status") if run else None) or live.get("status", "queued")}
            for a in axes:
                value = run.get(a) if run is not None and a in run else point.get(a)
                row[field_name(a)] = value if _is_number(value) else (None if value is None else str(value))
            row["seed"] = run.get("seed") if run else (plan.seed if plan is not None else None)
            history = self._histories.get(key)
            row["step"] = live.get("step") if run is None else (history[0][-1] if history and history[0] else None)
            elbo = run.get("full_elbo") if run else None
            row["ELBO"] = _round(elbo)
            row["test error (%)"] = _round(100 * _finite(run.get("test_error")), 2) if run else None
            row["NLPD"] = _round(run.get("nlpd"), 4) if run else None
            learned = ""
            if run and run.get("learned"):
                learned = ", ".join(f"{k.split('.')[-1]} {_finite(v):.3g}{RANGE_UNITS.get(k.split('.')[-1], '')}"
                                    for k, v in run["learned"].items())
            row["learned range"] = learned
            if run is None and live.get("elbo") is not None:
                row["ELBO"] = None
            records.append(row)
        frame = pd.DataFrame(records, columns=self._columns(axes))
        if not len(frame):
            return self._empty_frame() if not axes else frame
        for column in ("run", "seed", "step"):
            frame[column] = pd.array(frame[column], dtype="Int64")
        return frame

    def _show_table(self) -> None:
        frame = self.rows()
        titles = {field_name(a): a for a in self.axes}
        change_table(self.table, frame, titles)

    def _show_plots(self) -> None:
        data = axis_data(self.cmp) if self.cmp is not None else AxisData(None)
        self.axis_data = data
        self.elbo_pane.object = against_setting_plot(data, "elbo")
        self.error_pane.object = against_setting_plot(data, "error")
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
        colour = STATE_COLOURS.get(self.state, "#666")
        sweep = f"sweep <b data-field=\"sweep\">#{self.sweep_id}</b>" if self.sweep_id is not None else "no sweep open"
        state = f'<b style="color:{colour}" data-field="sweep-state">{html_text(self.state)}</b>'
        message = f'<span data-field="sweep-message">{html_text(self.message)}</span>'
        self.status_pane.object = f"{state} · {sweep} · {message}"
