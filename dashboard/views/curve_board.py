"""The live training curves: one streamed Bokeh plot per logged metric (`curve_plot.CurvePlot`), laid out when the
run's layout is known, previous runs overlaid faintly; the points themselves are kept in a bounded
`hv.streams.Buffer` per metric (what the CSV download and readers of `buffers[metric].data` get)."""
from __future__ import annotations

import io
import re

import holoviews as hv
import numpy as np
import pandas as pd
import panel as pn
import param

from invlab.dashboard.views.curve_plot import CurvePlot, ema
from invlab.dashboard.views.style import metric_spec, shows_curve, to_display

TARGET_UNITS = "(target units)"  # how METRICS names the units of an error in the target's own units
CSV_COLUMNS = ["run", "label", "metric", "unit", "step", "value"]

__all__ = ["CurveBoard", "ema"]


class CurveBoard(param.Parameterized):
    """Live curves of the trainer's history: one plot per metric, previous runs overlaid faintly.

    `prepare(metrics)` creates the plots of a run's layout before any of its data arrives (a metric not named
    there gets its plot on its first points); `send` streams points into them. Curves are drawn in the units of
    `METRICS` (errors in %), labelled in words, rescaled to their data with a minimum y-span; previous runs carry
    the label `archive(label)` was given (what differs between runs), wrapped in a legend beside the plot.
    Metrics whose `Metric.curve` is False (learned ranges, the W2 parts: a model view shows them) and names passed
    to `hide` get no plot of their own; their data is still kept for the CSV download.
    """

    logy = param.Boolean(default=False, doc="Logarithmic y axis (of |value| for negative quantities such as the ELBO).")
    smoothing = param.Number(default=0.0, bounds=(0.0, 0.99), step=0.01,
                             doc="Exponential smoothing of the traces; the raw trace stays faint behind.")
    show_previous = param.Boolean(default=True, doc="Overlay the previous runs of this session.")
    large = param.Boolean(default=False, doc="Larger text and lines, for a projector (the page's presenter mode).")
    target_name = param.String(default=None, allow_None=True,
                               doc="The run's target column (a table's), naming the units of errors in target units.")
    run_name = param.String(default="this page's run",
                            doc="The run the live lines show, as the CSV names it (e.g. 'run 7', 'run 12 my-loop').")

    PANELS = (("ELBO", ("elbo", "loss")), ("Test error / RMSE", ("test_error", "test_rmse")),
              ("Test NLPD", ("test_nlpd",)))
    MAIN = ("elbo", "loss", "test_error", "test_rmse", "test_nlpd")  # the first row, in this order

    def __init__(self, length: int = 20_000, **params):
        super().__init__(**params)
        self.length = length
        self.buffers: dict[str, hv.streams.Buffer] = {}
        self.previous: list[tuple[str, dict[str, pd.DataFrame]]] = []  # (label, metric → frame)
        self.previous_names: list[str] = []  # the run each of `previous` was (`run_name` when it was archived)
        self.plots: dict[str, pn.pane.Bokeh] = {}  # metric → the pane showing its CurvePlot's figure
        self.curve_plots: dict[str, CurvePlot] = {}
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
            self.curve_plots.pop(metric, None)
            if pane is not None:
                for layout in (self.layout, self.extra_layout):
                    if pane in layout.objects:
                        layout.remove(pane)

    def prepare(self, metrics) -> bool:
        """Create the plots (and buffers) of a run's layout, before its first data: `metrics` are the names the run
        will log. Plots of names no longer in the layout stay (their previous runs are still worth seeing) unless
        hidden. True if any plot was created."""
        created = False
        for metric in sorted(metrics, key=self._order):
            created = self._ensure(metric) or created
        return created

    def _order(self, metric: str):
        return (self.MAIN.index(metric) if metric in self.MAIN else len(self.MAIN), metric)

    def _ensure(self, metric: str) -> bool:
        if metric not in self.buffers:
            frame = pd.DataFrame({"step": np.zeros(0, dtype=np.int64), metric: np.zeros(0)})
            self.buffers[metric] = hv.streams.Buffer(frame, length=self.length, index=False)
        if metric in self.plots or not self.shows(metric):
            return False
        self._add_plot(metric)
        return True

    def buffer(self, metric: str) -> hv.streams.Buffer:
        """The bounded store of `metric`'s points of this run (created with its plot if it has none yet)."""
        self._ensure(metric)
        return self.buffers[metric]

    def _add_plot(self, metric: str) -> None:
        plot = CurvePlot(metric, length=self.length, logy=self.logy, smoothing=self.smoothing, large=self.large,
                         label=self._label(metric))
        plot.show = self.show_previous
        plot.show_previous(self._previous_of(metric))
        self.curve_plots[metric] = plot
        pane = pn.pane.Bokeh(plot.figure, name=metric, sizing_mode="stretch_width")  # the figure sets its own flex
        self.plots[metric] = pane
        if metric in self.MAIN:
            index = sum(1 for m in self.MAIN[:self.MAIN.index(metric)] if m in self.plots
                        and self.plots[m] in self.layout.objects)
            self.layout.insert(index, pane)
        else:
            self.extra_layout.append(pane)

    def _previous_of(self, metric: str) -> list:
        return [(label, frames[metric]["step"].to_numpy(), frames[metric][metric].to_numpy())
                for label, frames in self.previous if metric in frames and len(frames[metric])]

    @param.depends("logy", watch=True)
    def _switch_axis(self) -> None:
        for metric, plot in self.curve_plots.items():  # a new figure: a Bokeh axis cannot change its scale
            data = self.buffers[metric].data
            plot.rebuild(self.logy, data["step"].to_numpy(), data[metric].to_numpy())
            self.plots[metric].object = plot.figure

    def _label(self, metric: str) -> str | None:
        """`metric`'s axis label naming the target column ("test RMSE (price_keur)"), or None for its own."""
        label = metric_spec(metric).label
        if self.target_name and label.endswith(TARGET_UNITS):
            return f"{label[:-len(TARGET_UNITS)]}({self.target_name})"
        return None

    @param.depends("target_name", watch=True)
    def _relabel(self) -> None:
        for metric, plot in self.curve_plots.items():
            plot.relabel(self._label(metric))

    @param.depends("large", watch=True)
    def _enlarge(self) -> None:
        for plot in self.curve_plots.values():
            plot.enlarge(self.large)

    @param.depends("smoothing", "show_previous", watch=True)
    def _restyle(self) -> None:
        for metric, plot in self.curve_plots.items():
            data = self.buffers[metric].data
            plot.restyle(self.smoothing, self.show_previous, data["step"].to_numpy(), data[metric].to_numpy())

    def send(self, metric: str, steps, values) -> None:
        """Append `metric`'s new points (logged units): kept in its buffer and streamed to its plot."""
        if not len(steps):
            return
        steps = np.asarray(steps, dtype=np.int64)
        values = np.asarray(values, dtype=np.float64)
        self.buffer(metric).send(pd.DataFrame({"step": steps, metric: values}))
        plot = self.curve_plots.get(metric)
        if plot is not None:
            plot.extend(steps, values)

    def archive(self, label: str, keep: bool = True) -> None:
        """Keep the current run's curves as a faint overlay labelled `label` (say what differs between the runs,
        e.g. "lr 0.05, rotate 90°"; long labels wrap in the legend) and clear the live lines for a new run; with
        `keep=False` (the same run drawn again, say now followed) they are cleared without an overlay."""
        frames = {m: b.data.copy() for m, b in self.buffers.items() if len(b.data)} if keep else {}
        if frames:
            self.previous.append((label, frames))
            self.previous_names.append(self.run_name)
        for b in self.buffers.values():
            b.clear()
        for metric, plot in self.curve_plots.items():
            plot.clear()
            if frames:
                plot.show_previous(self._previous_of(metric))

    def to_csv(self) -> io.StringIO:
        """All curves of this session (previous runs and the current one) as long-format CSV: per point the run it
        belongs to (`run_name`), its label on the plots (what differed, or "this run"), the metric, its unit and the
        value in that unit (as drawn: errors in %)."""
        runs = [*zip(self.previous_names, self.previous),
                (self.run_name, ("this run", {m: b.data for m, b in self.buffers.items()}))]
        rows = [pd.DataFrame({"run": name, "label": label, "metric": metric, "unit": self.unit(metric),
                              "step": f["step"], "value": to_display(metric, f[metric])})
                for name, (label, frames) in runs for metric, f in frames.items() if len(f)]
        out = io.StringIO()
        (pd.concat(rows) if rows else pd.DataFrame(columns=CSV_COLUMNS)).to_csv(out, index=False)
        out.seek(0)
        return out

    def unit(self, metric: str) -> str:
        """The unit `metric` is drawn in, from its label ("ELBO (nats)" → "nats", "test error (%)" → "%"); "" when its
        label names none."""
        found = re.search(r"\(([^()]*)\)\s*$", self._label(metric) or metric_spec(metric).label)
        return found.group(1) if found else ""

    def csv_filename(self) -> str:
        """The CSV download's file name, naming the run shown: "invlab_curves_run-7-my-loop.csv"."""
        slug = re.sub(r"[^A-Za-z0-9_.]+", "-", self.run_name).strip("-._")[:60]
        return f"invlab_curves_{slug or 'run'}.csv"
