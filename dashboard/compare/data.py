"""The Compare page's data: a sweep's `Comparison` shaped for its table and plots.

Which swept setting goes on the x axis, which split the runs into separate curves, the group means ± sd over seeds
and where each learned-range run's range ended; the words for settings and their values; the progress line; and
the reading of the launch form's typed values. No Panel, no plots: plain values and pandas frames.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

# Invariance ranges a sweep may vary: the swept name → the learned range's name and its unit.
RANGE_AXES = {"model.init_rotation": ("rotation", "°"), "model.init_affine": ("affine", ""),
              "model.init_deformation": ("deformation", "px")}
AXIS_LABELS = {"model.init_rotation": "rotation range α (°)", "data.rotate": "data rotated by up to ± (°)",
               "model.init_affine": "affine range (half-width)", "model.init_deformation": "deformation strength (px)",
               "model.num_inducing": "inducing points M", "train.learning_rate": "learning rate",
               "model": "model family"}


def axis_label(name: str) -> str:
    """The words shown on an axis for a dotted setting name (the name itself when none are known)."""
    return AXIS_LABELS.get(name, name)


def field_name(axis: str) -> str:
    """A table column for a dotted setting name (Tabulator reads dots in a field as nesting)."""
    return axis.replace(".", "·")


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _finite(value) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return math.nan
    return value if math.isfinite(value) else math.nan


def _fmt_value(value) -> str:
    if isinstance(value, float):
        return format(value, "g")
    return str(value)


# -- what the plots show, from a Comparison ----------------------------------------------------------------------------
def learned_value(run: dict, axis: str) -> float | None:
    """Where a learned-range run's range ended, for the range `axis` varies (None when it has none)."""
    if axis not in RANGE_AXES:
        return None
    learned = run.get("learned") or {}
    name = RANGE_AXES[axis][0]
    for key, value in learned.items():
        if key == name or key.split(".")[-1] == name or key == axis:
            value = _finite(value)
            return None if math.isnan(value) else value
    return None


def is_learned_run(run: dict) -> bool:
    """A run that learned its invariance range (its value on the swept range axis is only where it started)."""
    if "model.learn_ranges" in run:
        return bool(run["model.learn_ranges"])
    return bool(run.get("learned"))


def primary_axis(axes: list[str], runs: list[dict]) -> str | None:
    """The setting the plots put on x: the first swept name with more than one numeric value among the runs
    (an invariance range first), else the first one that varies at all."""
    if not axes:
        return None

    def values(axis):
        return {run.get(axis) for run in runs if not (axis in RANGE_AXES and is_learned_run(run))}

    ranked = sorted(axes, key=lambda a: (a not in RANGE_AXES, axes.index(a)))
    for axis in ranked:  # a range swept beside learned-range runs: the learned runs are marked on its axis
        if axis in RANGE_AXES and any(is_learned_run(run) for run in runs) and values(axis) - {None}:
            return axis
    for axis in ranked:
        vals = values(axis) - {None}
        if len(vals) > 1 and all(_is_number(v) for v in vals):
            return axis
    for axis in ranked:
        if len(values(axis) - {None}) > 1:
            return axis
    return axes[0]


def series_axes(axes: list[str], entries: list[dict], x: str) -> list[str]:
    """The swept names, other than `x`, that split the entries into separate curves: those not already fixed by
    the value of `x` (in a list sweep names vary together, e.g. the family and its augmentation)."""
    out = []
    for axis in axes:
        if axis == x:
            continue
        seen: dict[str, set] = {}
        for entry in entries:
            seen.setdefault(repr(entry.get(x)), set()).add(repr(entry.get(axis)))
        if any(len(values) > 1 for values in seen.values()):
            out.append(axis)
    return out


def series_key(entry: dict, rest: list[str]) -> str:
    """The label of the curve an entry belongs to: its values of the swept names in `rest`."""
    return ", ".join(f"{a.split('.')[-1]} {_fmt_value(entry.get(a))}" for a in rest) or "mean ± sd over seeds"


# -- the test score a sweep's runs have: the test error of a classification, the test RMSE of a regression -------------
def score_of(runs: list[dict]) -> str:
    """"rmse" when the runs are regressions (a test RMSE and no test error among them), else "error"."""
    has = {name: any(not math.isnan(_finite(run.get(f"test_{name}"))) for run in runs) for name in ("error", "rmse")}
    return "rmse" if has["rmse"] and not has["error"] else "error"


def rmse_label(target: str | None) -> str:
    """"test RMSE (price_keur)": the RMSE is in the target's units, named by a table's target column when it has one
    (control characters shown as "?"), else "test RMSE (target units)"."""
    from invlab.errors import printable

    return f"test RMSE ({printable(target)})" if target else "test RMSE (target units)"


def target_name(data_settings: list[dict]) -> str | None:
    """The target column the runs' data settings (`RunConfig.data` each) share, which names their RMSE's units; None
    when they name none (a bundled data set, data that cannot be read now) or different ones."""
    import json

    from invlab.sweeps.discover_report import target_column

    names = {target_column(json.dumps(data, sort_keys=True, default=str)) for data in data_settings}
    return names.pop() if len(names) == 1 else None


@dataclass
class AxisData:
    """What the ELBO / test score against the swept setting shows, one frame per series (other swept values).
    `score`: "error" (test error, %) or "rmse" (test RMSE, in the units of the target column `target`)."""

    x: str | None
    groups: dict[str, pd.DataFrame] = field(default_factory=dict)  # series → x, n, elbo_*, error_*, rmse_*
    runs: pd.DataFrame = field(default_factory=pd.DataFrame)  # the single runs (faint points)
    learned: pd.DataFrame = field(default_factory=pd.DataFrame)  # learned-range runs: learned, elbo, error, rmse
    score: str = "error"
    target: str | None = None


def _scores(row: dict, prefix: str = "test_", suffix: str = "") -> dict:
    """The test error (as %) and test RMSE of a run (`test_error`, `test_rmse`) or a group (`error_mean`, ...)."""
    return {"error" + suffix: 100 * _finite(row.get(f"{prefix}error{suffix}")),
            "rmse" + suffix: _finite(row.get(f"{prefix}rmse{suffix}"))}


def axis_data(cmp, target: str | None = None) -> AxisData:
    """Group means ± sd of the fixed-setting runs against the primary swept setting; learned-range runs apart.
    `target`: the regression's target column, naming the RMSE's units."""
    x = primary_axis(list(cmp.axes), list(cmp.runs))
    out = AxisData(x, score=score_of(list(cmp.runs)), target=target)
    if x is None:
        return out
    fixed_groups = [g for g in cmp.groups if not (x in RANGE_AXES and is_learned_run(g))]
    rest = series_axes(list(cmp.axes), fixed_groups, x)
    frames: dict[str, list[dict]] = {}
    for g in fixed_groups:
        if g.get("n", 0) == 0 or g.get(x) is None:
            continue
        frames.setdefault(series_key(g, rest), []).append(
            {x: _x_value(g[x]), "n": g["n"], "elbo_mean": _finite(g.get("elbo_mean")),
             "elbo_sd": _finite(g.get("elbo_sd")), **_scores(g, "", "_mean"), **_scores(g, "", "_sd")})
    for key, rows in frames.items():
        frame = pd.DataFrame(rows)
        if _is_number(rows[0][x]):
            frame = frame.sort_values(x, kind="stable")
        out.groups[key] = frame.reset_index(drop=True).rename(columns={x: field_name(x)})
    singles, learned = [], []
    for run in cmp.runs:
        if run.get("full_elbo") is None:
            continue
        if x in RANGE_AXES and is_learned_run(run):
            value = learned_value(run, x)
            if value is not None:
                learned.append({"run": run["run_id"], "learned": value, "elbo": _finite(run.get("full_elbo")),
                                **_scores(run)})
            continue
        if run.get(x) is None:
            continue
        singles.append({field_name(x): _x_value(run.get(x)), "elbo": _finite(run.get("full_elbo")), **_scores(run),
                        "series": series_key(run, rest), "run": run["run_id"]})
    out.runs = pd.DataFrame(singles)
    out.learned = pd.DataFrame(learned)
    return out


def _x_value(value):
    """A value on the plots' x axis: numbers as they are, anything else (families, true / false) as text."""
    return value if _is_number(value) else _fmt_value(value)


def value_label(axis: str, value) -> str:
    """"init_rotation 45°": a swept setting's short name and value, with its unit."""
    unit = RANGE_AXES.get(axis, ("", ""))[1]
    return f"{axis.split('.')[-1]} {_fmt_value(value)}{unit if _is_number(value) else ''}"



def progress_text(progress) -> str:
    """"5 of 12 runs done · 2 running · 0 failed · best ELBO −1234.5 · about 40 s left"."""
    parts = [f"{progress.done} of {progress.total} runs done", f"{progress.running} running",
             f"{progress.failed} failed"]
    best = _finite(progress.best_elbo)
    if not math.isnan(best):
        parts.append(f"best ELBO {best:.1f}")
    eta = _finite(progress.eta_s)
    if not math.isnan(eta) and progress.done < progress.total:
        parts.append(f"about {eta:.0f} s left" if eta < 120 else f"about {eta / 60:.0f} min left")
    return " · ".join(parts)


def _round(value, digits: int = 2):
    value = _finite(value)
    return None if math.isnan(value) else round(value, digits)


def _parse_token(token: str):
    """A typed value: 45 → 45, 0.5 → 0.5, true → True, anything else as text (checked by the setting itself)."""
    lowered = token.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return int(token)
    except ValueError:
        pass
    try:
        return float(token)
    except ValueError:
        return token


def _spread(lo, hi, default) -> list:
    if lo is None or hi is None:
        return [default] if default is not None else []
    if isinstance(lo, int) and isinstance(hi, int) and not isinstance(lo, bool):
        return sorted({lo, (lo + hi) // 2, hi})
    return [lo, (lo + hi) / 2, hi]


def data_words(data: dict) -> str:
    """The data settings that come from the Training page, in words: "with rotate 90, subset 300 (the Training
    page's data settings)", or "with its default settings" for another data set."""
    from invlab.data import DataConfig

    if set(data) == {"dataset"}:
        return "with its default settings (the Training page's data settings apply to the data set it trains)"

    shown = [f"{k.replace('_', ' ')} {v:g}" if isinstance(v, float) else f"{k.replace('_', ' ')} {v}"
             for k, v in data.items()
             if k not in ("dataset", "name") and k in DataConfig.param and v != DataConfig.param[k].default]
    if data.get("source_options"):
        shown.append(f"options {data['source_options']}")
    return ("with " + ", ".join(shown) + " (the Training page's data settings)") if shown else \
        "with the Training page's data settings"
