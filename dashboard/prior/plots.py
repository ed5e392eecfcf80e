"""The prior page's plots, drawn with Bokeh models made once and updated in place.

A slider move on the prior page changes the data of up to five plots at once. Re-rendering them through HoloViews
(a new element per view, its plot diffed against the old) cost about 0.75 s of server time per move on one core,
most of it building HoloViews' multi-path datasets; here each plot is a Bokeh figure built the first time its view
is shown, and a new view only replaces its data source's columns (and a heat map's colour range), one message to
the browser. Titles and descriptions are text panes above and below the plot, as on the Training page.

`PriorPlot(name, view)` takes the typed views the engine's `PriorExplorer` returns: `Spectrum` (a histogram of
log10 eigenvalues, counts up), `Curves` (interchangeable function draws, one multi-line glyph) and `Heatmap` (a
matrix with a colour bar, row 0 at the top).
"""
from __future__ import annotations

import numpy as np
import panel as pn
from bokeh.models import ColorBar, ColumnDataSource, HoverTool, LinearColorMapper
from bokeh.palettes import Category10_10, Viridis256
from bokeh.plotting import figure

from invlab import diagnostics as dg
from invlab.dashboard.safe_text import html_text
from invlab.dashboard.views.charts import spectrum_values
from invlab.dashboard.views.panes import CAPTION_STYLE
from invlab.dashboard.views.style import FRAME_HEIGHT, FRAME_WIDTH, TITLE_STYLE, WIDTH


def _title_html(title: str) -> str:
    return f'<div class="invlab-view-title">{html_text(title or "")}</div>'


def _description_html(text: str) -> str:
    return f'<div class="invlab-view-description">{html_text(text or "")}</div>'


def _figure(xlabel: str, ylabel: str, *, width: int = FRAME_WIDTH):
    fig = figure(frame_width=width, frame_height=FRAME_HEIGHT, x_axis_label=xlabel, y_axis_label=ylabel,
                 tools="pan,wheel_zoom,box_zoom,reset,save", toolbar_location="right")
    fig.title.text = ""  # the title is the text pane above: it wraps instead of being clipped
    return fig


def histogram_columns(view: dg.Spectrum) -> dict[str, np.ndarray]:
    """The bars of a spectrum's histogram of log10 eigenvalues: left and right edges [B] and counts [B]."""
    values = spectrum_values(view, log=True)
    if values.size == 0:
        values = np.zeros(1)
    counts, edges = np.histogram(values, bins=min(40, max(5, values.size // 3)))
    return {"left": edges[:-1], "right": edges[1:], "top": counts.astype(np.float64)}


def curve_columns(view: dg.Curves) -> dict[str, list]:
    """One multi-line row per series: xs [T] and ys [T] lists and a colour each."""
    xs = [np.asarray(x, dtype=np.float64) for x, _ in view.series.values()]
    ys = [np.asarray(y, dtype=np.float64) for _, y in view.series.values()]
    colours = [Category10_10[k % 10] for k in range(len(xs))]
    return {"xs": xs, "ys": ys, "color": colours, "name": list(view.series)}


def heatmap_columns(view: dg.Heatmap) -> tuple[dict[str, list], tuple[float, float]]:
    """The image column (drawn in a y range that runs down, so that row 0 is at the top) and its colour range."""
    m = np.asarray(view.matrix, dtype=np.float64)
    finite = m[np.isfinite(m)]
    if view.symmetric:
        vmax = float(np.abs(finite).max()) if finite.size else 1.0
        low, high = -(vmax or 1.0), vmax or 1.0
    else:
        low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        high = high if high > low else low + 1e-12
    rows, cols = m.shape
    return {"image": [m], "x": [0], "y": [0], "dw": [cols], "dh": [rows]}, (low, high)


class PriorPlot:
    """One view of the prior page: its title, a Bokeh plot made once, its description; `update(view)` replaces the
    data in place. `view` is the view shown now."""

    def __init__(self, name: str, view: dg.View):
        self.key, self.kind, self.view = name, type(view), view
        self.title = pn.pane.HTML(_title_html(view.title or name.replace("_", " ")), styles=TITLE_STYLE,
                                  max_width=WIDTH + 80, margin=(4, 10, 0, 10))
        self.description = pn.pane.HTML(_description_html(view.description), visible=bool(view.description),
                                         styles=dict(CAPTION_STYLE), max_width=WIDTH + 80,
                                         margin=(0, 10, 6, 10))
        self.mapper = None
        if isinstance(view, dg.Spectrum):
            self.source = ColumnDataSource(histogram_columns(view))
            fig = _figure("log10 eigenvalue", "number of eigenvalues")
            fig.quad(left="left", right="right", top="top", bottom=0, source=self.source, color="#4c72b0",
                     line_color=None)
            fig.add_tools(HoverTool(tooltips=[("log10 eigenvalue", "@left{0.00} to @right{0.00}"),
                                              ("number", "@top")]))
        elif isinstance(view, dg.Curves):
            self.source = ColumnDataSource(curve_columns(view))
            fig = _figure(view.xlabel, view.ylabel or "value")
            fig.multi_line(xs="xs", ys="ys", line_color="color", line_width=1.5, source=self.source)
        elif isinstance(view, dg.Heatmap):
            columns, (low, high) = heatmap_columns(view)
            self.source = ColumnDataSource(columns)
            self.mapper = LinearColorMapper(palette=Viridis256, low=low, high=high)
            fig = _figure(view.xlabel, view.ylabel, width=FRAME_WIDTH - 40)
            fig.image(image="image", x="x", y="y", dw="dw", dh="dh", color_mapper=self.mapper, source=self.source)
            fig.add_layout(ColorBar(color_mapper=self.mapper, width=10), "right")
            fig.add_tools(HoverTool(tooltips=[("value", "@image{0.000}")]))
            fig.y_range.flipped = True  # row 0 at the top, as a matrix is read
        else:
            raise TypeError(f"the prior page draws no {type(view).__name__}")
        self.figure = fig
        self.panel = pn.Column(self.title, pn.pane.Bokeh(fig, sizing_mode="fixed"), self.description,
                               name=view.title or name)

    def update(self, view: dg.View) -> None:
        """Show `view` (of the same kind): new text if it changed, then the plot's data replaced in place."""
        old, self.view = self.view, view
        if view.title != old.title:
            self.title.object = _title_html(view.title or self.key.replace("_", " "))
        if view.description != old.description:
            self.description.object = _description_html(view.description)
            self.description.visible = bool(view.description)
        if isinstance(view, dg.Spectrum):
            self.source.data = histogram_columns(view)
        elif isinstance(view, dg.Curves):
            self.source.data = curve_columns(view)
        else:
            columns, (low, high) = heatmap_columns(view)
            self.mapper.update(low=low, high=high)
            self.source.data = columns
