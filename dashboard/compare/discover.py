"""The Compare page's Discover study: which invariances does this data have?

A data box (the Training page's data by default, or any data set the page may read), the candidate invariances that
apply to it (ticked by default), seeds and steps, and ▶ Discover. The candidates train on Dask as one stored sweep
(`invlab.sweeps.discover.run_candidates` on a `DiscoverRunner` thread), and the ranking by whole-training-set ELBO
(`invlab.sweeps.discover_report`) fills in as each run is stored: mean ± sd over seeds, the log Bayes factor against
none, learned ranges, test figures, the verdict and notes. A click opens a candidate's run on the Training page; the
report downloads as the HTML file `invlab discover` writes. The form is discover_form.py, the ranking's rows
discover_ranking.py; this module runs the study and follows it. After van der Wilk, Bauer, John & Hensman, "Learning
Invariances using the Marginal Likelihood" (NeurIPS 2018, arXiv:1808.05563)."""
from __future__ import annotations

import io
import logging

import pandas as pd
import panel as pn

from invlab.dashboard.compare.data import progress_text
from invlab.dashboard.compare.discover_form import DEFAULT_SEEDS, DiscoverForm
from invlab.dashboard.compare.discover_ranking import COLUMNS, WIDTHS, ranking_frame, score_titles
from invlab.dashboard.compare.live import STATE_COLOURS
from invlab.dashboard.compare.runner import DiscoverRunner
from invlab.dashboard.compare.table import RunTable
from invlab.dashboard.safe_text import html_text, markdown_text
from invlab.dashboard.serving.periodic import background_periodic
from invlab.errors import ConfigError, InvlabError
from invlab.sweeps.discover import check_scheduler, create_sweep
from invlab.sweeps.discover_html import bayes_factor_svg, report_html
from invlab.sweeps.discover_report import discover_report
from invlab.train.states import RunStatus, StudyState

log = logging.getLogger("invlab.dashboard.compare")

HEADING = (
    "### Discover: which invariances does this data have?\n"
    "One invariant GP per candidate symmetry, each with the same kernel, inducing points, likelihood and training "
    "budget, ranked by the ELBO over the whole training set (a lower bound on the log marginal likelihood): the "
    "difference from **none** (no invariance) estimates the log Bayes factor. Learned ranges end where the data "
    "supports them. Click a candidate to open its run on the Training page."
)


def check_dask(scheduler: str | None, dataset: str) -> None:
    """Refuse ▶ Discover before anything is stored where Dask distributed is not installed: the page trains the
    study on Dask only, so the refusal says what works instead (installing the extra, or the command line's
    `--serial`, which trains in one process), then the `scheduler` address must answer as Dask."""
    from invlab.sweeps.scheduler import require_dask

    try:
        require_dask()
    except ConfigError:
        raise ConfigError("Discover trains its candidates on Dask distributed, which is not installed on this "
                          "server: install it with pip install 'invariance-lab[sweeps]' and restart the dashboard, "
                          f"or run the study from a terminal with `invlab discover --dataset {dataset} --serial` (one "
                          "run after another in one process, no Dask needed). Nothing was stored.") from None
    check_scheduler(scheduler)


class DiscoverStudy(pn.viewable.Viewer):
    """The Discover study of the Compare page `page` (see the module's doc): it reads the page's settings (the
    Training page's data), store, Dask workers and scheduler, and opens runs through the page."""

    def __init__(self, page, *, data_choices=None, limits=None):
        super().__init__()
        self.page = page
        self.form = DiscoverForm(page.settings, data_choices=data_choices, limits=limits,
                                 on_data=self.find_candidates)
        self.plan, self.report = None, None  # the DiscoverPlan of the data box (or the study's); the latest report
        self.sweep_id: int | None = None
        self.runner: DiscoverRunner | None = None
        self.state, self.message = StudyState.IDLE, ""
        self._callback = None
        form = self.form  # its widgets, by the names the page's layout and its tests use
        self.data_box, self.data_words, self.seeds, self.steps = form.data_box, form.data_words, form.seeds, form.steps
        self.candidates, self.candidate_words = form.candidates, form.candidate_words
        self.start_button = pn.widgets.Button(label="▶ Discover", color="success", width=130)
        self.stop_button = pn.widgets.Button(label="■ Stop discover", color="warning", width=150,
                                             disabled=True)
        self.error = pn.pane.Alert("", alert_type="danger", visible=False, sizing_mode="stretch_width",
                                   css_classes=["invlab-discover-error"])
        self.error_text = ""
        self.status = pn.pane.HTML("", sizing_mode="stretch_width", margin=(4, 10),
                                   css_classes=["invlab-discover-status"])
        # Widths set, not fitted: Tabulator fits the columns to the empty table the study starts with and keeps
        # those widths, so a learned range ("rotation [-25.0, 28.6], scale 0.91") ran into the next column.
        self.ranking = RunTable(pd.DataFrame(columns=COLUMNS), self._on_select, show_index=False, disabled=True,
                                selectable=1, pagination=None, layout="fit_data_table", widths=WIDTHS,
                                formatters={"learned range (final)": {"type": "textarea"}},  # wraps
                                sizing_mode="stretch_width", css_classes=["invlab-discover-table"])
        self.verdict = pn.pane.Markdown("", sizing_mode="stretch_width", css_classes=["invlab-discover-verdict"])
        self.chart = pn.pane.HTML("", width=660, css_classes=["invlab-discover-chart"])
        self.download = pn.widgets.FileDownload(callback=self._report_file, filename="discover.html",
                                                label="Download the report (HTML)", color="light", width=260,
                                                visible=False)
        self.start_button.on_click(lambda *_: self.start())
        self.stop_button.on_click(lambda *_: self.stop())
        self._show_status()

    @property
    def table(self) -> pn.widgets.Tabulator:
        """The ranking's table shown now (`RunTable.widget`)."""
        return self.ranking.widget

    # -- the form ------------------------------------------------------------------------------------------------------
    def data_config(self) -> dict:
        """The data the study fits (`DiscoverForm.data_config`)."""
        return self.form.data_config()

    def refresh(self) -> None:
        """Follow the Training page's data set (until one is chosen here) and list the candidates that apply (not
        while the study runs: its candidates stay listed)."""
        if self.running():
            return
        self.form.follow()
        self.find_candidates()

    def find_candidates(self) -> None:
        """List, ticked, the candidate invariances that apply to the data box's data, and say why the others do not;
        data that cannot be read, or to which no candidate applies, says so under the form."""
        if self.running():
            return  # the running study's candidates stay listed
        try:
            self.plan = self.form.plan()
        except (InvlabError, ValueError) as err:
            self.plan = None
            self._error(str(err))
        else:
            self._error("")
        self.form.show_candidates(self.plan)

    # -- running -------------------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Train the ticked candidates (and none) over the seeds, as one stored sweep on Dask; the ranking fills in as
        runs are stored. A bad form, unreadable data or an unreachable scheduler says so under the form."""
        if self.runner is not None and not self.runner.finished:
            self._error("the study is running: ■ Stop discover first, or wait for it to finish")
            return
        if self.page.busy():
            self._error("a sweep is running on this page: stop it first (■ Stop), or wait for it to finish")
            return
        store = self.page.store
        if store is None:
            self._error("this page has no run store to keep the study's runs in")
            return
        if not self.candidates.value and not self.form.group.value:
            self._error("tick at least one candidate invariance: none alone has nothing to be compared with")
            return
        try:
            plan = self.form.plan(orbits=self.form.orbits())  # the ticked candidates and a group of columns
            scheduler, shared = self.page.where_runs_train()  # an address the page may not choose is not contacted
            check_dask(scheduler, str(plan.data.get("dataset", "DATA")))
            sweep_id = create_sweep(plan, store)
        except (InvlabError, ValueError, TypeError) as err:
            self._error(str(err))
            return
        self._error("")
        self.plan, self.sweep_id, self.report = plan, sweep_id, None
        self.runner = DiscoverRunner(plan, store, sweep_id, scheduler=scheduler, n_workers=self.page.n_workers or None,
                                     shared=shared).start()
        self.state = StudyState.STARTING
        self.message = (f"{len(plan.candidates)} candidates × {len(plan.spec.seeds)} seeds, "
                        f"{int(self.steps.value)} steps each: starting Dask workers…")
        self.start_button.disabled, self.stop_button.disabled = True, False
        self.download.visible = False
        self._draw()
        self.page.discover_changed()
        if self._callback is None and pn.state.curdoc is not None:
            self._callback = background_periodic(self.tick, self.page.tick_ms)

    def stop(self) -> None:
        """Stop the study: runs in progress are abandoned; what finished is kept and ranked (the report is partial)."""
        if self.runner is not None and not self.runner.finished:
            self.runner.stop()
            self.state = StudyState.STOPPING
            self.message = "stopping: runs in progress are abandoned; finished runs stay stored and ranked"
            self._show_status()

    def running(self) -> bool:
        """Whether the study's runs are training."""
        return self.runner is not None and not self.runner.finished

    def tick(self) -> None:
        """The periodic update: rank the runs stored since the last tick; a failure to draw shows as the message."""
        try:
            self._tick()
        except Exception as err:  # noqa: BLE001 — a drawing failure must not stop the periodic callback
            log.exception("discover study update failed")
            self.message = f"Could not update the page ({type(err).__name__}: {err}); the study goes on."
            self._show_status()

    def _tick(self) -> None:
        runner = self.runner
        if runner is None:
            self._stop_ticking()
            return
        progress, results, finished, error = runner.drain()
        if progress is not None and not finished:
            self.state = StudyState.STOPPING if runner.stop_event.is_set() else StudyState.RUNNING
            self.message = progress_text(progress)
        for candidate, seed, run_id, status, message in results:
            tail = f": {message}" if status != RunStatus.FINISHED and message else ""
            self.message = f"{runner.plan.label(candidate)} seed {seed}: {status} (run {run_id}){tail}"
        if results or finished:
            self._read()
        if finished:
            self._stop_ticking()
            self.start_button.disabled, self.stop_button.disabled = False, True
            if error:
                self.state, self.message = StudyState.FAILED, f"the study failed: {error}"
            else:
                self.state = StudyState.STOPPED if runner.stop_event.is_set() else StudyState.FINISHED
                self.message = runner.lost or (f"{self.report.stored} of {self.report.total} runs stored"
                                               if self.report else "")
            self.page.refresh_sweeps()
        self._draw()

    def _stop_ticking(self) -> None:
        if self._callback is not None:
            self._callback.stop()
            self._callback = None

    def close(self) -> None:
        """The browser session ended: stop following and stop the study (finished runs stay stored)."""
        self._stop_ticking()
        if self.running():
            self.runner.stop()

    # -- a stored study ------------------------------------------------------------------------------------------------
    def show(self, sweep_id: int) -> bool:
        """Show stored discover sweep `sweep_id`'s ranking; False (with the reason under the form) when it is not one
        or cannot be read."""
        if self.running():
            if self.runner.sweep_id == int(sweep_id):
                return True
            self._error("the study is running: ■ Stop discover first, or wait for it to finish")
            return False
        if self.page.store is None:
            return False
        self.sweep_id, self.plan, self.runner = int(sweep_id), None, None
        if not self._read():
            self.sweep_id = None
            return False
        self.state = StudyState.STOPPED if self.report.partial else StudyState.FINISHED
        self.message = f"{self.report.stored} of {self.report.total} runs stored"
        self._error("")
        self._draw()
        return True

    def _read(self) -> bool:
        try:
            self.report = discover_report(self.page.store, self.sweep_id)
        except InvlabError as err:
            self._error(str(err))
            return False
        return True

    # -- drawing -------------------------------------------------------------------------------------------------------
    def rows(self) -> pd.DataFrame:
        """The ranking: one row per candidate, best first; candidates with no stored run yet after them."""
        return ranking_frame(self.report, self.plan, self.sweep_id, self.running())

    def _draw(self) -> None:
        frame = self.rows()
        self.ranking.show(frame, self.score_titles(self.report))
        report = self.report
        if report is not None and report.ranking:
            state = "Partial: " if report.partial else ""
            notes = "\n".join(f"- {markdown_text(n)}" for n in report.notes)
            self.verdict.object = f"**{state}Verdict:** {markdown_text(report.verdict)}\n\n{notes}"
            self.chart.object = bayes_factor_svg(report)  # every data string in it is escaped
            self.download.filename = f"discover-{report.sweep_id}.html"
            self.download.visible = True
        else:
            self.verdict.object, self.chart.object = "", ""
        self._show_status()

    @staticmethod
    def score_titles(report) -> dict[str, str]:
        """The ranking's column titles for `report` (`discover_ranking.score_titles`)."""
        return score_titles(report)

    def _report_file(self):
        return io.BytesIO(report_html(self.report).encode()) if self.report is not None else io.BytesIO(b"")

    def _show_status(self) -> None:
        sweep = f" · sweep <b>#{self.sweep_id}</b>" if self.sweep_id is not None else ""
        self.status.object = (f'<b style="color:{STATE_COLOURS.get(self.state, "#666")}" data-field="discover-state">'
                              f'{html_text(self.state)}</b>{sweep} · <span data-field="discover-message">'
                              f'{html_text(self.message)}</span>')

    def _error(self, text: str) -> None:
        self.error_text = text
        self.error.object = markdown_text(text)
        self.error.visible = bool(text)

    def _on_select(self, event) -> None:
        if not event.new or self.report is None:
            return
        frame = self.table.value
        if event.new[0] >= len(frame):
            return
        name = frame.iloc[event.new[0]]["candidate"]
        self.table.selection = []  # a later click on the same row opens it (again)
        row = self.report.row(name)
        try:
            status = {r.id: r.status for r in self.page.store.sweep_runs(self.sweep_id)}
        except InvlabError as err:
            self._error(str(err))
            return
        finished = [r for r in (row.run_ids if row is not None else []) if status.get(r) == "finished"]
        if not finished:
            self.message = (f"{name} has no finished run yet: it opens once one of its seeds has finished"
                            if row is None or not row.failed else f"{name} failed: {row.failed[0]}")
            self._show_status()
            return
        self.page.open_run(finished[0])

    def __panel__(self):
        # rows that wrap: on a tablet the buttons go under the boxes instead of past the screen's edge
        form = pn.FlexBox(pn.Column(self.data_box, self.data_words), self.seeds, self.steps, self.start_button,
                          self.stop_button, align_items="flex-start", sizing_mode="stretch_width")
        return pn.Column(pn.pane.Markdown(HEADING, sizing_mode="stretch_width"), form,
                         pn.pane.Markdown("**Candidates** (untick any to leave it out)", margin=(0, 10)),
                         self.candidates, self.form.group, self.candidate_words, self.error, self.status,
                         self.ranking, self.verdict,
                         pn.FlexBox(self.chart, self.download, align_items="flex-start", sizing_mode="stretch_width"),
                         sizing_mode="stretch_width", name="Discover",
                         css_classes=["invlab-discover"])


__all__ = ["COLUMNS", "DEFAULT_SEEDS", "HEADING", "DiscoverStudy"]
