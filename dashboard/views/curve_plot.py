"""One live training curve as Bokeh models: a figure whose line of this run is a `ColumnDataSource` appended with
`stream(new, rollover)`, and whose previous runs are drawn once per Reset.

What a send costs the page is the new points and at most four axis numbers, whatever the run's length: the figure,
its glyphs and its legend are made once (again only when the user switches the y axis between linear and log), each
previous run's line at the first Reset that needs it, and the previous runs are written once per Reset. Values are
drawn in the units of `METRICS` (errors in %), on a log axis as |value|; the y range follows the data with the
metric's minimum span (`y_limits`). A long gap in the steps breaks the line (`line_breaks`); a long metric name gets a
title wrapped between words and its full name on hover (`curve_names`).

A run's first points replace the line's data instead of being streamed into it: a new run's whole history arrives in
the same tick that cleared the old line, and Bokeh sends a replaced `data` as it is when the tick's message goes out,
so points streamed into it as well would reach the browser twice (a line from the last point back to the first).
"""
from __future__ import annotations

import numpy as np
from bokeh.core.properties import value
from bokeh.models import BasicTicker, ColumnDataSource, DataRange1d, HoverTool, Legend, LegendItem, Range1d
from bokeh.plotting import figure

from invlab.dashboard.safe_text import tooltip_text
from invlab.dashboard.views.curve_names import axis_label, curve_title, is_long
from invlab.dashboard.views.line_breaks import GapBreaks, with_breaks
from invlab.dashboard.views.style import FRAME_HEIGHT, FRAME_WIDTH, metric_spec, to_display, wrap_label, y_limits

PREVIOUS_RUNS = 5  # previous runs overlaid, newest last
COLOURS = ("#7f7f7f", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b")  # previous runs, oldest first
LIVE = "#1f77b4"
CURVE_MIN_WIDTH = FRAME_WIDTH + 140  # the data area's width and the legend beside it
# as many to a row as fit, each row's plots sharing its width (two or three columns on a laptop or a projector)
FLEX_ITEM = {"flex": f"1 1 {CURVE_MIN_WIDTH}px", "width": "auto", "max-width": f"{2 * CURVE_MIN_WIDTH}px"}
SPARSE = 50  # below this many points the points themselves are drawn too (test metrics are sparse)
# Text sizes and line widths: on a laptop, and larger for a projector (presenter mode)
NORMAL_SIZES = {"title": "13px", "label": "13px", "ticks": "11px", "legend": "8pt", "line": 2, "points": 5,
                "previous": 1.5}
PRESENTER_SIZES = {"title": "18px", "label": "17px", "ticks": "15px", "legend": "11pt", "line": 3.5,
                   "points": 8, "previous": 2.5}


class CurvePlot:
    """The live plot of one metric: `figure` (a Bokeh figure), `source` (its streamed ColumnDataSource, columns
    `step`, the metric's name — the value drawn — and `smoothed`) and one static source per previous run.

    `extend(steps, values)` streams new points; `show_previous(runs)` redraws the previous runs (a Reset);
    `restyle(smoothing, show)` changes smoothing or hides the previous runs; `rebuild` starts a new figure (the y
    axis changed between linear and log)."""

    def __init__(self, metric: str, *, length: int, logy: bool = False, smoothing: float = 0.0,
                 large: bool = False, label: str | None = None):
        self.metric, self.length, self.logy, self.smoothing = metric, length, logy, smoothing
        self.large = large
        self.label = label  # the y axis's label when not the metric's own (a table's target names RMSE's units)
        self.show = True
        self._runs: list[tuple[str, np.ndarray, np.ndarray]] = []  # previous runs: (label, steps, logged values)
        self._previous_extents: list = []  # (first step, last step, [min, max] drawn) of each previous run
        self._build()

    # -- the Bokeh models ----------------------------------------------------------------------------------------------
    def _build(self) -> None:
        spec, metric = metric_spec(self.metric), self.metric
        self.source = ColumnDataSource({"step": np.zeros(0, dtype=np.int64), metric: np.zeros(0),
                                        "smoothed": np.zeros(0)})
        # Previous runs' lines and the raw line are made when first needed (a Reset, smoothing turned on): the browser
        # restyles every renderer of a plot and redraws every legend entry at each repaint, hidden ones included, and
        # a plot repaints with each send.
        self.previous_sources: list[ColumnDataSource] = []
        self.previous_lines = []
        self.previous_items: list[LegendItem] = []
        self.x_range = Range1d(0, 1)
        self.y_range = DataRange1d() if self.logy else Range1d(0, 1)
        shown_label = self.label or axis_label(metric)
        fig = figure(title=curve_title(metric), x_axis_label="step", y_axis_label=shown_label,
                     sizing_mode="stretch_width",
                     min_width=CURVE_MIN_WIDTH, frame_height=FRAME_HEIGHT, styles=FLEX_ITEM, x_range=self.x_range,
                     y_range=self.y_range,
                     y_axis_type="log" if self.logy else "linear", tools="pan,wheel_zoom,box_zoom,reset,save",
                     toolbar_location="above")
        if spec.scale == 100.0 and not self.logy:  # a percentage (an error): ticks on whole percents, never 1.5 %
            fig.yaxis[0].ticker = BasicTicker(min_interval=1.0, desired_num_ticks=5)
        self.raw_line = self.raw_item = None
        self.line = fig.line("step", "smoothed", source=self.source, color=LIVE, line_width=2)
        self.points = fig.scatter("step", metric, source=self.source, color=LIVE, size=5)
        self.live_item = LegendItem(label=value("this run"), renderers=[self.line])
        self.legend = Legend(items=[self.live_item], label_text_font_size="8pt", glyph_width=14, spacing=2,
                             padding=4, location="top_left")
        fig.add_layout(self.legend, "right")
        # the full name its title and axis shorten, as text (Bokeh parses a tooltip as HTML)
        named = [("metric", tooltip_text(metric))] if is_long(metric) else []
        fig.add_tools(HoverTool(renderers=[self.line, self.points],
                                tooltips=[*named, ("step", "@step"), (shown_label, f"@{{{metric}}}")]))
        self.figure = fig
        self.enlarge(self.large)
        self._steps_lo = self._steps_hi = None
        self._lo = self._hi = None  # extent of this run's drawn values
        self._ema = (0.0, 0.0)  # running (sum, weight) of the smoothing
        self._count = 0
        self._negative = False
        self._breaks = GapBreaks()

    def _legend_items(self) -> list[LegendItem]:
        """The legend's entries, oldest previous run first, then the raw line's (when made), then this run's."""
        return [*self.previous_items, *([self.raw_item] if self.raw_item is not None else []), self.live_item]

    def _add_renderers_below(self, *renderers) -> None:
        """Put new renderers under the ones already drawn (a previous run's line never covers this run's)."""
        fig = self.figure
        fig.renderers = [*renderers, *[r for r in fig.renderers if r not in renderers]]

    def _previous_line(self, i: int):
        """The i-th previous run's (source, line, legend item), made on first use."""
        while len(self.previous_lines) <= i:
            k = len(self.previous_lines)
            src = ColumnDataSource({"step": np.zeros(0, dtype=np.int64), "y": np.zeros(0)})
            sizes = PRESENTER_SIZES if self.large else NORMAL_SIZES
            line = self.figure.line("step", "y", source=src, line_dash="dashed", line_width=sizes["previous"],
                                    alpha=0.6, color=COLOURS[k % len(COLOURS)], visible=False)
            self._add_renderers_below(*self.previous_lines, line)
            self.previous_sources.append(src)
            self.previous_lines.append(line)
            self.previous_items.append(LegendItem(label=value(""), renderers=[line], visible=False))
            self.legend.items = self._legend_items()
        return self.previous_sources[i], self.previous_lines[i], self.previous_items[i]

    def _show_raw(self, show: bool) -> None:
        """Draw this run's unsmoothed values faintly under the smoothed line (made the first time it is shown)."""
        if self.raw_line is None:
            if not show:
                return
            self.raw_line = self.figure.line("step", self.metric, source=self.source, color=LIVE, alpha=0.25,
                                             visible=False)
            self._add_renderers_below(*self.previous_lines, self.raw_line)
            self.raw_item = LegendItem(label=value("raw"), renderers=[self.raw_line], visible=False)
            self.legend.items = self._legend_items()
        self.raw_line.visible = self.raw_item.visible = show

    def relabel(self, label: str | None) -> None:
        """Label the y axis `label` (None: the metric's own label)."""
        self.label = label
        shown = label or axis_label(self.metric)
        self.figure.yaxis[0].axis_label = f"|{shown}|" if self._negative else shown

    def enlarge(self, large: bool) -> None:
        """Draw the title, axes, legend and this run's line at the projector's sizes (`large`) or the laptop's."""
        self.large = large
        sizes = PRESENTER_SIZES if large else NORMAL_SIZES
        fig = self.figure
        fig.title.text_font_size = sizes["title"]
        for axis in (*fig.xaxis, *fig.yaxis):
            axis.axis_label_text_font_size = sizes["label"]
            axis.major_label_text_font_size = sizes["ticks"]
        self.legend.label_text_font_size = sizes["legend"]
        self.line.glyph.line_width = sizes["line"]
        self.points.glyph.size = sizes["points"]
        for line in self.previous_lines:
            line.glyph.line_width = sizes["previous"]

    def rebuild(self, logy: bool, steps, values) -> None:
        """A new figure with the y axis linear or log, holding this run's `steps`/`values` and the previous runs."""
        self.logy = logy
        self._build()
        self._draw_previous()
        self.extend(steps, values)

    # -- this run ------------------------------------------------------------------------------------------------------
    def _display(self, values) -> np.ndarray:
        shown = to_display(self.metric, values)
        if self.logy:
            if not self._negative and np.nanmin(shown, initial=1.0) <= 0:
                self._negative = True
                self.figure.yaxis[0].axis_label = f"|{self.label or axis_label(self.metric)}|"
            shown = np.abs(shown)
        return shown

    def _smooth(self, shown: np.ndarray) -> np.ndarray:
        alpha = self.smoothing
        if alpha <= 0:
            return shown
        acc, weight = self._ema
        out = np.empty_like(shown)
        for i, v in enumerate(shown):
            acc = alpha * acc + (1 - alpha) * v
            weight = alpha * weight + (1 - alpha)
            out[i] = acc / weight
        self._ema = (acc, weight)
        return out

    def extend(self, steps, values) -> None:
        """Stream new points of this run (logged units) into the page: only they and the changed ranges travel."""
        steps = np.asarray(steps, dtype=np.int64)
        if not len(steps):
            return
        shown = self._display(values)
        drawn_steps, drawn, smoothed = self._breaks.add(steps, shown, self._smooth(shown))
        new = {"step": drawn_steps, self.metric: drawn, "smoothed": smoothed}
        before = self._count
        if before == 0:  # a run's first points: replaced, never streamed (see the module's doc)
            self.source.data = {k: v[-self.length:] for k, v in new.items()}
        else:
            self.source.stream(new, rollover=self.length)
        self._count = min(self._count + len(drawn_steps), self.length)
        if (before < SPARSE) != (self._count < SPARSE):
            self.points.visible = self._count < SPARSE
        finite = shown[np.isfinite(shown)]
        if finite.size:
            lo, hi = float(finite.min()), float(finite.max())
            self._lo = lo if self._lo is None else min(self._lo, lo)
            self._hi = hi if self._hi is None else max(self._hi, hi)
        lo_s, hi_s = int(steps.min()), int(steps.max())
        self._steps_lo = lo_s if self._steps_lo is None else min(self._steps_lo, lo_s)
        self._steps_hi = hi_s if self._steps_hi is None else max(self._steps_hi, hi_s)
        self._fit()

    def clear(self) -> None:
        """Empty this run's line (a new run begins)."""
        self.source.data = {"step": np.zeros(0, dtype=np.int64), self.metric: np.zeros(0), "smoothed": np.zeros(0)}
        self._lo = self._hi = self._steps_lo = self._steps_hi = None
        self._ema, self._count = (0.0, 0.0), 0
        self._breaks.clear()
        self.points.visible = True

    # -- previous runs and styles --------------------------------------------------------------------------------------
    def show_previous(self, runs: list[tuple[str, np.ndarray, np.ndarray]]) -> None:
        """Draw the previous runs, each (label, steps, logged values), the last PREVIOUS_RUNS of them; done once per
        Reset, never per send."""
        self._runs = [(label, np.asarray(s, dtype=np.int64), np.asarray(v, dtype=np.float64))
                      for label, s, v in runs[-PREVIOUS_RUNS:]]
        self._draw_previous()
        self._fit()

    def _draw_previous(self) -> None:
        extents = []
        for i in range(max(len(self._runs), len(self.previous_lines))):
            src, line, item = self._previous_line(i)
            if i < len(self._runs):
                label, steps, values = self._runs[i]
                shown = to_display(self.metric, values)
                if self.logy:
                    shown = np.abs(shown)
                y = ema(shown, self.smoothing)
                drawn_steps, drawn = with_breaks(steps, y)
                src.data = {"step": drawn_steps, "y": drawn}
                item.label = value(wrap_label(label))
                finite = y[np.isfinite(y)]
                if len(steps):
                    extents.append((int(steps.min()), int(steps.max()),
                                    np.array([finite.min(), finite.max()]) if finite.size else np.zeros(0)))
            elif len(src.data["step"]):
                src.data = {"step": np.zeros(0, dtype=np.int64), "y": np.zeros(0)}
            line.visible = item.visible = self.show and i < len(self._runs)
        self._previous_extents = extents

    def restyle(self, smoothing: float, show: bool, steps, values) -> None:
        """Change the smoothing (redraws this run from `steps`/`values` and the previous runs) or whether the
        previous runs show."""
        if smoothing != self.smoothing:
            self.smoothing = smoothing
            self.clear()
            self.extend(steps, values)
            self._draw_previous()
            self._show_raw(smoothing > 0)
        if show != self.show:
            self.show = show
            self._draw_previous()
        self._fit()

    def _fit(self) -> None:
        """Ranges that follow the drawn data (the y range with the metric's minimum span); unchanged values are not
        sent again."""
        xs = [(self._steps_lo, self._steps_hi)] if self._steps_lo is not None else []
        ys = [np.array([self._lo, self._hi])] if self._lo is not None else []
        if self.show:
            for x0, x1, y in self._previous_extents:
                xs.append((x0, x1))
                ys.append(y)
        if xs:
            lo, hi = min(a for a, _ in xs), max(b for _, b in xs)
            if hi > lo:
                _set_range(self.x_range, lo, hi)
            else:  # one point: from step 0, with room for it, as the curve it becomes (not lo to lo + 1)
                _set_range(self.x_range, min(lo, 0), max(lo * 1.1, lo + 1))
        if not self.logy:
            limits = y_limits(ys, metric_spec(self.metric).min_span)
            if limits is not None:
                _set_range(self.y_range, *limits)


def _set_range(rng: Range1d, start: float, end: float) -> None:
    if rng.start != start or rng.end != end:
        rng.update(start=start, end=end)


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
