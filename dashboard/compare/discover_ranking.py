"""What the Discover study's ranking table shows: its columns and widths, one row per candidate (best first, the
candidates with no stored run yet after them) and its score column's title. The study (discover.py) draws it."""
from __future__ import annotations

import pandas as pd

from invlab.dashboard.safe_text import html_text
from invlab.dashboard.state_words import row_word
from invlab.sweeps.discover_html import score_header, table_rows
from invlab.train.states import PlannedRunState, RunStatus

# the ranking's columns; "test error" reads "test RMSE" for a regression data set
COLUMNS = ["#", "candidate", "status", "seeds", "ELBO (whole data)", "log BF vs none", "learned range (final)",
           "test error", "NLPD", "s / run"]
WIDTHS = {"#": 40, "candidate": 150, "status": 90, "seeds": 64, "ELBO (whole data)": 150, "log BF vs none": 140,
          "learned range (final)": 300, "test error": 120, "NLPD": 130, "s / run": 70}  # px


def ranking_frame(report, plan, sweep_id: int | None, running: bool) -> pd.DataFrame:
    """The ranking of `report` (a `DiscoverReport` or None): one row per candidate, best first; the candidates of
    `plan` (the study's `DiscoverPlan` or None) that sweep `sweep_id` holds no run of yet after them, running while
    the study is `running`, else not run. A candidate's status is finished once every seed ended and one finished,
    failed when none did, running before; each said in the page's words (words.py). A group on columns is named
    by the columns (its label: a cell is shown as text, never read as HTML)."""
    records, shown, columns = [], set(), list(COLUMNS)
    seeds = len(plan.spec.seeds) if plan is not None else None
    if report is not None:
        headers, cells = table_rows(report, limit=2)
        for c, row in zip(report.ranking, cells):
            cell = dict(zip(headers, row))
            cell["test error"] = cell[headers[6]]  # "test RMSE (price)" for a table's regression: its title
            done = c.finished + len(c.failed)
            ended = RunStatus.FAILED if c.finished == 0 else RunStatus.FINISHED
            status = ended if seeds is None or done >= seeds else RunStatus.RUNNING
            records.append({**{k: cell[k] for k in columns if k in cell}, "candidate": c.label,
                            "status": row_word(status)})
            shown.add(c.candidate)
    waiting = row_word(RunStatus.RUNNING if running else PlannedRunState.NOT_RUN)
    for name in (plan.names if plan is not None and sweep_id is not None else []):
        if name not in shown:
            records.append({**{c: "" for c in columns}, "candidate": plan.label(name), "status": waiting,
                            "seeds": "0"})
    return pd.DataFrame(records, columns=columns)


def score_titles(report) -> dict[str, str]:
    """The ranking's column titles for `report` (a `DiscoverReport` or None): "test RMSE" for regression, "test
    RMSE (price_keur)" for a table's named target; escaped (Tabulator shows a title as HTML)."""
    score = score_header(report) if report is not None else "test error"
    return {"test error": html_text(score)} if score != "test error" else {}


__all__ = ["COLUMNS", "WIDTHS", "ranking_frame", "score_titles"]
