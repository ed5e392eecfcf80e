"""The Compare page's plots: the ELBO and the test score (error, or a regression's RMSE) against the swept setting,
and every run's ELBO curve.

HoloViews elements built from the shaped data of `data.py`; the page puts them in its panes.
"""
from __future__ import annotations

import math

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401 — registers Bokeh for the .opts() below
import numpy as np

from invlab.dashboard.compare.data import (
    RANGE_AXES,
    AxisData,
    _is_number,
    axis_label,
    field_name,
    is_learned_run,
    rmse_label,
    value_label,
)
from invlab.dashboard.views.panes import FRAME_HEIGHT, FRAME_WIDTH, _legend_opts, metric_label, y_limits

SERIES_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22")
PLOT_FRAME = dict(frame_width=FRAME_WIDTH + 80, frame_height=FRAME_HEIGHT + 40, framewise=True, show_grid=True)


SCORE_TITLES = {"elbo": "ELBO", "error": "Test error", "rmse": "Test RMSE"}


def against_setting_plot(data: AxisData, which: str):
    """ELBO ("elbo"), test error ("error") or test RMSE ("rmse", in the target's units) against the swept setting:
    mean over seeds as a line, ± sd as bars, each run as a faint point, and a dashed line where each learned-range
    run ended."""
    x = data.x
    ylabel = {"elbo": "ELBO over the training set (nats)", "error": metric_label("test_error"),
              "rmse": rmse_label(data.target)}[which]
    title = f"{SCORE_TITLES[which]} against {axis_label(x or 'the setting')}"
    if x is None:
        return hv.Curve([], "x", "y").opts(title=title)
    xdim = hv.Dimension(field_name(x), label=axis_label(x))
    mean = hv.Dimension(f"{which}_mean", label=ylabel)
    layers = []
    for i, (series, frame) in enumerate(data.groups.items()):
        colour = SERIES_COLOURS[i % len(SERIES_COLOURS)]
        label = series
        sd = frame[f"{which}_sd"].fillna(0.0)
        layers.append(hv.ErrorBars((frame[field_name(x)], frame[f"{which}_mean"], sd), xdim,
                                   [mean, f"{which}_sd"]).opts(color=colour, line_width=1.5, lower_head=None,
                                                               upper_head=None))
        layers.append(hv.Curve(frame, xdim, [mean, "n", f"{which}_sd"], label=label).opts(
            color=colour, line_width=2, tools=["hover"]))
        layers.append(hv.Scatter(frame, xdim, [mean]).opts(color=colour, size=6))
    if len(data.runs):
        layers.append(hv.Scatter(data.runs, xdim, [hv.Dimension(which, label=ylabel), "run"], label="single runs")
                      .opts(color="#555", alpha=0.35, size=4, tools=["hover"]))
    if len(data.learned):
        for value in data.learned["learned"]:
            layers.append(hv.VLine(float(value)).opts(color="#ff7f0e", line_dash="dashed", line_width=2))
        layers.append(hv.Scatter(data.learned.rename(columns={"learned": field_name(x)}), xdim,
                                 [hv.Dimension(which, label=ylabel), "run"],
                                 label=f"learned range (ends at {_fmt_range(data.learned['learned'], x)})")
                      .opts(color="#ff7f0e", marker="diamond", size=11, tools=["hover"]))
    if not layers:
        return hv.Curve([], xdim, mean).opts(title=title)
    return hv.Overlay(layers).opts(title=title, **PLOT_FRAME, **_legend_opts())


def _fmt_range(values, axis: str) -> str:
    unit = RANGE_AXES.get(axis, ("", ""))[1]
    return ", ".join(f"{v:.0f}{unit}" if unit == "°" else f"{v:.3g}{unit}" for v in values)


def curves_plot(histories: dict, cmp_runs: list[dict], x: str | None):
    """Every run's ELBO during training, one colour per value of the swept setting (seeds share it)."""
    title = "ELBO during training, by " + axis_label(x or "run")
    groups: dict[str, list] = {}
    order: list = []
    for run in cmp_runs:
        hist = histories.get(run["key"])
        if hist is None or len(hist[0]) == 0:
            continue
        learned = x in RANGE_AXES and is_learned_run(run)
        value = "learned range" if learned else run.get(x) if x is not None else run["key"]
        label = value if isinstance(value, str) else value_label(x, value)
        if label not in groups:
            order.append((0 if not learned else 1, value if _is_number(value) else math.inf, label))
        groups.setdefault(label, []).append((np.asarray(hist[0], dtype=np.float64),
                                             np.asarray(hist[1], dtype=np.float64), run.get("run_id")))
    order.sort(key=lambda t: (t[0], t[1], t[2]))
    palette = _palette(len(order))
    step = hv.Dimension("step", label="training step")
    elbo = hv.Dimension("run_elbo", label=metric_label("elbo") + ", minibatch estimate")
    layers = []
    for (_, _, label), colour in zip(order, palette):
        colour = "#ff7f0e" if label == "learned range" else colour
        for steps, values, run_id in groups[label]:  # seeds share the colour and the legend entry
            layers.append(hv.Curve({"step": steps, "run_elbo": values, "run": np.full(len(steps), run_id or -1)},
                                   step, [elbo, "run"], label=label).opts(color=colour, line_width=1.5, alpha=0.85,
                                                                          tools=["hover"]))
    if not layers:
        return hv.Curve([], step, elbo).opts(title=title)
    # the first steps' ELBO is far below where runs end up: the y axis shows the part where runs differ
    settled = [values[len(values) // 5:] for members in groups.values() for _, values, _ in members]
    ylim = y_limits(settled)
    frame = {**PLOT_FRAME, "frame_height": max(PLOT_FRAME["frame_height"], 20 * len(order) + 20)}  # legend fits
    return hv.Overlay(layers).opts(title=title, legend_limit=1000, **({"ylim": ylim} if ylim else {}), **frame,
                                   **_legend_opts())



def _palette(n: int) -> list[str]:
    if n <= len(SERIES_COLOURS):
        return list(SERIES_COLOURS[:n])
    from bokeh.palettes import Viridis256

    return [Viridis256[int(i * 230 / max(1, n - 1))] for i in range(n)]

