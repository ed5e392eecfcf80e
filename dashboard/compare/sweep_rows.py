"""What the Compare page's sweep table shows: its columns and their titles, and one row per run, stored or planned,
in the sweep's order. No Panel: plain values and a pandas frame that `SweepFollowing` (live.py) hands to its table.

A classification's runs show their test error (%) and NLPD; a regression's their test RMSE, in the target's units
(the title names a table's target column: "test RMSE (price_keur)"), and test NLPD.
"""
from __future__ import annotations

import math

import pandas as pd

from invlab.dashboard.compare.data import _finite, _is_number, _round, field_name, rmse_label
from invlab.dashboard.safe_text import html_text
from invlab.dashboard.views.panes import RANGE_UNITS
from invlab.train.states import PlannedRunState

# the test score's columns (field names, fixed: a target's name is only in a title, which is escaped)
SCORE_COLUMNS = {"error": ("test error (%)", "NLPD"), "rmse": ("test RMSE", "test NLPD")}


def columns(axes: list[str], score: str = "error") -> list[str]:
    """The sweep table's columns when the sweep varies `axes`; `score`: "error" (a classification's) or "rmse"."""
    return ["run", "status", *[field_name(a) for a in axes], "seed", "step", "ELBO", *SCORE_COLUMNS[score],
            "learned range"]


def titles(axes: list[str], score: str = "error", target: str | None = None) -> dict[str, str]:
    """The column titles other than the field names, as HTML (Tabulator shows a title as HTML; a setting's name and a
    target column's come from a stored run, a file): the swept settings' dotted names, the RMSE's units."""
    out = {field_name(a): html_text(a) for a in axes}
    if score == "rmse":
        out["test RMSE"] = html_text(rmse_label(target))
    return out


def empty_frame() -> pd.DataFrame:
    """The table before any sweep is shown."""
    return pd.DataFrame({c: pd.Series(dtype=object) for c in columns([])})


def _scores(run: dict | None, score: str) -> dict:
    error, nlpd = SCORE_COLUMNS[score]
    if run is None:
        return {error: None, nlpd: None}
    if score == "error":
        value = _round(100 * _finite(run.get("test_error")), 2)
    else:  # in the target's units, whatever their scale: significant digits, not decimals
        rmse = _finite(run.get("test_rmse"))
        value = None if math.isnan(rmse) else float(format(rmse, ".5g"))
    return {error: value, nlpd: _round(run.get("nlpd"), 4)}


def sweep_rows(axes: list[str], stored_runs: list[dict], planned: list, live: dict, histories: dict,
               score: str = "error") -> pd.DataFrame:
    """One row per run: the `stored_runs` (a `Comparison`'s rows) and the `planned` runs (`PlannedRun`s) not stored
    yet, in the sweep's order; `live`: key → what the running sweep told of a run (status, step); `histories`: key →
    (steps, ELBOs) of a stored run."""
    stored = {r.get("key"): r for r in stored_runs}
    keys = [p.key for p in planned] or list(stored)
    keys += [k for k in stored if k not in keys]
    plans = {p.key: p for p in planned}
    records = []
    for key in keys:
        run, plan, told = stored.get(key), plans.get(key), live.get(key, {})
        point = dict(plan.point) if plan is not None else {a: run.get(a) for a in axes}
        row = {"run": run.get("run_id") if run else None,
               "status": (run.get("status") if run else None) or told.get("status", PlannedRunState.QUEUED)}
        for a in axes:
            value = run.get(a) if run is not None and a in run else point.get(a)
            row[field_name(a)] = value if _is_number(value) else (None if value is None else str(value))
        row["seed"] = run.get("seed") if run else (plan.seed if plan is not None else None)
        history = histories.get(key)
        row["step"] = told.get("step") if run is None else (history[0][-1] if history and history[0] else None)
        row["ELBO"] = _round(run.get("full_elbo")) if run else None
        row.update(_scores(run, score))
        learned = ""
        if run and run.get("learned"):
            learned = ", ".join(f"{k.split('.')[-1]} {_finite(v):.3g}{RANGE_UNITS.get(k.split('.')[-1], '')}"
                                for k, v in run["learned"].items())
        row["learned range"] = learned
        records.append(row)
    frame = pd.DataFrame(records, columns=columns(axes, score))
    if not len(frame):
        return empty_frame() if not axes else frame
    for column in ("run", "seed", "step"):
        frame[column] = pd.array(frame[column], dtype="Int64")
    return frame


__all__ = ["SCORE_COLUMNS", "columns", "empty_frame", "sweep_rows", "titles"]
