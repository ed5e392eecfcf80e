"""The live training curves: one bounded `hv.streams.Buffer` per logged metric, previous runs overlaid faintly."""
from __future__ import annotations

import io

import holoviews as hv
import numpy as np
import pandas as pd
import panel as pn
import param

from .plot_style import (
    FRAME_HEIGHT,
    FRAME_WIDTH,
    _legend_opts,
    metric_spec,
    shows_curve,
    to_display,
    wrap_label,
    y_limits,
)


def ema(values: np.ndarray, alpha: float) -> np.ndarray:
    """Exponential moving average with smoothing α ∈ [0, 1) (0 = raw), bias-corrected at the start."""
    if alpha <= 0 or len(values) == 0:
        return values
    out = np.empty_like(values, dtype=np.float64)
    acc, weight = 0.0, 0.0
    for i, v in enumerate(values):
        acc = alpha * acc + (1 - alpha) * v
        weight = alpha * weight + (1 - alpha)
        out[i] = acc / weight
    return out


class CurveBoard(param.Parameterized):
    """Live curves of the trainer's history: one bounded Buffer per metric, previous runs overlaid faintly.

    Curves are drawn in the units of `METRICS` (errors in %), labelled in words, rescaled to their data on
    every update with a minimum y-span; previous runs carry the label `archive(label)` was given (what
    differs between runs), wrapped in a legend beside the plot. Metrics whose `Metric.curve` is False
    (learned ranges, the W2 parts: a model view shows them) and names passed to `hide` get no plot of their
    own; their data is still kept for the CSV download.
    """

    logy = param.Boolean(default=False, doc="Logarithmic y axis (of |value| for negative quantities such as the ELBO).")
    smoothing = param.Number(default=0.0, bounds=(0.0, 0.99), step=0.01,
                             doc="Exponential smoothing of the traces; the raw trace stays faint behind.")
    show_previous = param.Boolean(default=True, doc="Overlay the previous runs of this session.")

    PANELS = (("ELBO", ("elbo", "loss")), ("Test error / RMSE", ("test_error", "test_rmse")),
              ("Test NLPD", ("test_nlpd",)))
    COLOURS = ("#7f7f7f", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b")  # previous runs, oldest first

    def __init__(self, length: int = 20_000, **params):
        super().__init__(**params)
        self.length = length
        self.buffers: dict[str, hv.streams.Buffer] = {}
        self.previous: list[tuple[str, dict[str, pd.DataFrame]]] = []  # (label, metric → frame)
        self.previous_pipe = hv.streams.Pipe(data=[])
        self.plots = {}
        self.hidden: set[str] = set()
        self.layout = pn.FlexBox(sizing_mode="stretch_width")
        self.extra_layout = pn.FlexBox(sizing_mode="stretch_width")

    def shows(self, metric: str) -> bool:
        """Whether `metric` gets a plot of its own on this board."""
        return metric not in self.hidden and shows_curve(metric)

    def hide(self, *metrics: str) -> None:
        """Draw no curve for these metrics (e.g. those a model view already shows); removes existing plots."""
        for metric in metrics:
            self.hidden.add(metric)
            pane = self.plots.pop(metric, None)
            if pane is not None:
                for layout in (self.layout, self.extra_layout):
                    if pane in layout.objects:
                        layout.remove(pane)

    def buffer(self, metric: str) -> hv.streams.Buffer:
        """The bounded stream of (step, value) points of `metric`, made (with its plot, if shown) on first use."""
        if metric not in self.buffers:
            frame = pd.DataFrame({"step": np.zeros(0, dtype=np.int64), metric: np.zeros(0)})
            self.buffers[metric] = hv.streams.Buffer(frame, length=self.length, index=False)
            if self.shows(metric):
                self._add_plot(metric)
        return self.buffers[metric]

    def _add_plot(self, metric: str) -> None:
        params = hv.streams.Params(self, ["logy", "smoothing", "show_previous"])

        def render(data, logy, smoothing, show_previous, _previous=None, metric=metric):
            return self._render(metric, data, logy, smoothing, show_previous)

        dmap = hv.DynamicMap(render, streams=[self.buffers[metric], params,
                                              self.previous_pipe.rename(data="_previous")])
        pane = pn.pane.HoloViews(dmap, linked_axes=False, name=metric, sizing_mode="fixed")  # side by side in the row
        self.plots[metric] = pane
        main = {names[0] for _, names in self.PANELS} | {"test_rmse"}
        (self.layout if metric in main else self.extra_layout).append(pane)

    def _render(self, metric, data, logy, smoothing, show_previous):
        spec = metric_spec(metric)
        steps = np.asarray(data["step"], dtype=np.float64)
        values = to_display(metric, data[metric])
        negative = logy and np.nanmin(values, initial=1.0) <= 0  # e.g. the ELBO: plot |value| on a log axis
        transform = np.abs if negative else (lambda v: v)
        # the column keeps the metric's name (what tests and the CSV read); the axis shows words and units
        label = hv.Dimension(metric, label=f"|{spec.label}|" if negative else spec.label)
        layers, drawn = [], []
        if show_previous:
            for i, (run_label, frames) in enumerate(self.previous[-5:]):
                if metric in frames and len(frames[metric]):
                    f = frames[metric]
                    y = transform(ema(to_display(metric, f[metric].to_numpy()), smoothing))
                    drawn.append(y)
                    layers.append(hv.Curve((f["step"].to_numpy(), y), "step", label, label=wrap_label(run_label)).opts(
                        alpha=0.6, line_dash="dashed", line_width=1.5, color=self.COLOURS[i % len(self.COLOURS)]))
        current = transform(values)
        drawn.append(current)
        if len(steps) < 50:  # sparse series (test metrics): show the points themselves too
            layers.append(hv.Scatter((steps, current), "step", label).opts(color="#1f77b4", size=5))
        if smoothing > 0:
            layers.append(hv.Curve((steps, current), "step", label, label="raw").opts(alpha=0.25, color="#1f77b4"))
            layers.append(hv.Curve((steps, transform(ema(values, smoothing))), "step", label, label="this run").opts(
                color="#1f77b4", line_width=2))
        else:
            layers.append(hv.Curve((steps, current), "step", label, label="this run").opts(color="#1f77b4",
                                                                                            line_width=2))
        element_opts = dict(framewise=True, logy=logy)
        ylim = None if logy else y_limits(drawn, spec.min_span)
        if ylim is not None:
            element_opts["ylim"] = ylim
        return hv.Overlay(layers).opts(
            hv.opts.Curve(frame_width=FRAME_WIDTH, frame_height=FRAME_HEIGHT, tools=["hover"], **element_opts),
            hv.opts.Scatter(**element_opts),
            hv.opts.Overlay(title=spec.title, **_legend_opts()))

    def send(self, metric: str, steps, values) -> None:
        """Append the points `steps`, `values` to `metric`'s curve."""
        if len(steps):
            self.buffer(metric).send(pd.DataFrame({"step": np.asarray(steps, dtype=np.int64),
                                                   metric: np.asarray(values, dtype=np.float64)}))

    def archive(self, label: str) -> None:
        """Keep the current run's curves as a faint overlay labelled `label` (say what differs between the runs,
        e.g. "lr 0.05, rotate 90°"; long labels wrap in the legend) and clear the live buffers for a new run."""
        frames = {m: b.data.copy() for m, b in self.buffers.items() if len(b.data)}
        if frames:
            self.previous.append((label, frames))
        for b in self.buffers.values():
            b.clear()
        self.previous_pipe.send(list(self.previous))

    def to_csv(self) -> io.StringIO:
        """All curves of this session (previous runs and the current one) as long-format CSV."""
        rows = []
        for label, frames in self.previous + [("current", {m: b.data for m, b in self.buffers.items()})]:
            for metric, f in frames.items():
                rows.append(pd.DataFrame({"run": label, "metric": metric, "step": f["step"], "value": f[metric]}))
        out = io.StringIO()
        (pd.concat(rows) if rows else pd.DataFrame(columns=["run", "metric", "step", "value"])).to_csv(out, index=False)
        out.seek(0)
        return out
