"""What the Compare page's Discover study shows (`DiscoverTable`): its status line, the ranking by whole-training-set
ELBO (one row per candidate, discover_ranking.py), the verdict, its second opinion from held-out data and the notes,
the log Bayes factor chart and the report to download. A click on a candidate opens its first finished run on the
Training page (a request the page's `CompareContext` carries)."""
from __future__ import annotations

import io

import pandas as pd
import panel as pn

from invlab.dashboard.compare.discover_ranking import COLUMNS, WIDTHS, ranking_frame, score_titles
from invlab.dashboard.compare.table import RunTable
from invlab.dashboard.safe_text import html_text, markdown_text
from invlab.dashboard.state_words import state_colour, state_word
from invlab.errors import InvlabError
from invlab.sweeps.discover_html import bayes_factor_svg, report_html
from invlab.sweeps.discover_report import discover_report
from invlab.train.states import RunStatus, StudyState


class DiscoverTable(pn.viewable.Viewer):
    """The Discover study's ranking and what goes with it (see the module's doc). `shown`: the study (a Parameterized
    whose `sweep_id`, `state` and `message` the status line shows; a click on a candidate with no finished run says
    so in its `message`); `context`: the page's `CompareContext` (the run store; asked to open a run); `say_error`:
    says what could not be read, under the form."""

    def __init__(self, shown, context, say_error):
        super().__init__()
        self.shown, self.context, self._say_error = shown, context, say_error
        self.plan, self.report = None, None  # the DiscoverPlan shown (or None: a stored study); its latest report
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
        shown.param.watch(self.show_status, ["state", "message", "sweep_id"])
        self.show_status()

    @property
    def table(self) -> pn.widgets.Tabulator:
        """The ranking's table shown now (`RunTable.widget`)."""
        return self.ranking.widget

    def read(self, sweep_id: int) -> bool:
        """Read stored study `sweep_id`'s report from the store; False (said under the form) when it cannot be."""
        try:
            self.report = discover_report(self.context.store, sweep_id)
        except InvlabError as err:
            self._say_error(str(err))
            return False
        return True

    def rows(self, running: bool) -> pd.DataFrame:
        """The ranking: one row per candidate, best first; candidates with no stored run yet after them (`running`:
        the study trains them)."""
        return ranking_frame(self.report, self.plan, self.shown.sweep_id, running)

    def draw(self, running: bool) -> None:
        """Draw the ranking, the verdict, the chart and the download from the report read last."""
        self.ranking.show(self.rows(running), score_titles(self.report))
        report = self.report
        if report is not None and report.ranking:
            state = "Partial: " if report.partial else ""
            notes = "\n".join(f"- {markdown_text(n)}" for n in report.notes)
            second = (f"\n\n**Second opinion:** {markdown_text(report.second.text)}"
                      if report.second is not None else "")  # the held-out test figures on the verdict's choice
            self.verdict.object = f"**{state}Verdict:** {markdown_text(report.verdict)}{second}\n\n{notes}"
            self.chart.object = bayes_factor_svg(report)  # every data string in it is escaped
            self.download.filename = f"discover-{report.sweep_id}.html"
            self.download.visible = True
        else:
            self.verdict.object, self.chart.object = "", ""
        self.show_status()

    def show_status(self, *_) -> None:
        """The status line: the study's state in words, its sweep and its message."""
        state, sweep_id = self.shown.state, self.shown.sweep_id
        sweep = f" · sweep <b>#{sweep_id}</b>" if sweep_id is not None else ""
        word = html_text(state_word(state, StudyState))
        self.status.object = (f'<b style="color:{state_colour(state, StudyState)}" data-field="discover-state">'
                              f'{word}</b>{sweep} · <span data-field="discover-message">'
                              f'{html_text(self.shown.message)}</span>')

    def _report_file(self):
        return io.BytesIO(report_html(self.report).encode()) if self.report is not None else io.BytesIO(b"")

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
            status = {r.id: r.status for r in self.context.store.sweeps.runs(self.shown.sweep_id)}
        except InvlabError as err:
            self._say_error(str(err))
            return
        finished = [r for r in (row.run_ids if row is not None else []) if status.get(r) == RunStatus.FINISHED]
        if not finished:
            self.shown.message = (f"{name} has no finished run yet: it opens once one of its seeds has finished"
                                  if row is None or not row.failed else f"{name} failed: {row.failed[0]}")
            return
        self.context.ask_to_open(finished[0])

    def __panel__(self):
        return pn.Column(self.status, self.ranking, self.verdict,
                         pn.FlexBox(self.chart, self.download, align_items="flex-start", sizing_mode="stretch_width"),
                         sizing_mode="stretch_width")


__all__ = ["DiscoverTable"]
