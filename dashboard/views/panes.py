"""Renderers: one per diagnostic view type (invlab.diagnostics), and the pane that streams a view to the page.

A `ViewPane` owns an `hv.streams.Pipe` and a DynamicMap fed by it, made once with the view's first data; the
server thread calls `update(view)` with plain numpy data and HoloViews updates the same plot's data in the browser.
The live training curves are Bokeh sources streamed point by point (`curve_board`, `curve_plot`).
Nothing here touches the engine's tensors or runs on the training thread.

The renderers live by job: `map_views` (image grids, heatmaps, fields), `chart_views` (spectra, model curves, scatters),
`table_views` (scalars); `plot_style` holds the sizes, the metric labels and units and the legend rules every plot
follows, and `curve_board` the live training curves. Their public names are importable from here too.
"""
from __future__ import annotations

import holoviews as hv
import panel as pn
import param

from invlab import diagnostics as dg
from invlab.dashboard.safe_text import html_text
from invlab.dashboard.views.charts import EIGEN_FLOOR, render_curves, render_scatter, render_spectrum, spectrum_values
from invlab.dashboard.views.curve_board import CurveBoard, ema
from invlab.dashboard.views.maps import GUTTER, is_signed, render_field, render_heatmap, render_image_grid, tile_grid
from invlab.dashboard.views.style import (
    DIVERGING,
    FRAME_HEIGHT,
    FRAME_WIDTH,
    GREY,
    HEIGHT,
    LEGEND_CHARS,
    METRICS,
    RANGE_UNITS,
    SEQUENTIAL,
    TITLE_STYLE,
    WIDTH,
    Metric,
    _legend_opts,
    metric_label,
    metric_spec,
    percent,
    shows_curve,
    to_display,
    wrap_label,
    y_limits,
)
from invlab.dashboard.views.tables import render_scalars, scalars_html
from invlab.dashboard.views.watch import VIEW_CLASS, view_class

__all__ = ["_legend_opts", "CAPTION_STYLE", "CurveBoard", "DIVERGING", "EIGEN_FLOOR", "ema", "FRAME_HEIGHT",
           "FRAME_WIDTH", "GREY", "GUTTER", "HEIGHT", "is_signed", "LEGEND_CHARS", "Metric", "metric_label",
           "metric_spec", "METRICS",
           "percent", "RANGE_UNITS", "render_curves", "render_field", "render_heatmap", "render_image_grid",
           "render_scalars", "render_scatter", "render_spectrum", "renderer_for", "RENDERERS", "scalars_html",
           "SEQUENTIAL", "shows_curve", "spectrum_values", "tile_grid", "TITLE_STYLE", "to_display", "ViewPane",
           "WIDTH", "wrap_label", "y_limits"]


PRESENTER_SCALE = 1.3  # presenter mode's text (the page's presenter zoom is 1.35)
PRESENTER_FIELD = 1.2  # and a field's frame: a two-moons lesson's key view, whole under the banner at 1280×720
# a caption under a view: smaller and fainter than the page's text in either theme (a fixed grey is dark on dark)
CAPTION_STYLE = {"font-size": "0.85em", "opacity": "0.75"}


def _title_pane(title: str) -> pn.pane.HTML:
    return pn.pane.HTML(_title_html(title), styles=TITLE_STYLE, max_width=WIDTH + 80, margin=(4, 10, 0, 10))


def _title_html(title: str) -> str:
    return f'<div class="invlab-view-title">{html_text(title or "")}</div>'


RENDERERS = {
    dg.ImageGrid: render_image_grid,
    dg.Spectrum: render_spectrum,
    dg.Heatmap: render_heatmap,
    dg.Field2D: render_field,
    dg.Scalars: render_scalars,
    dg.Curves: render_curves,
    dg.Scatter: render_scatter,
}


def renderer_for(view: dg.View):
    """The renderer registered for `view`'s type (or the nearest base type); TypeError when none is."""
    for cls in type(view).__mro__:
        if cls in RENDERERS:
            return RENDERERS[cls]
    raise TypeError(f"no renderer for view type {type(view).__name__}")


class ViewPane(param.Parameterized):
    """One diagnostic, streamed: `update(view)` sends the new data through a Pipe to the browser.

    The title is wrapping text above the plot (a long title is never clipped) and the description below it;
    a table (Scalars) is HTML as tall as its rows, redrawn whole when its rows change.
    """

    log_x = param.Boolean(default=True, doc="Histogram of log10 eigenvalues (spectra only).")
    large = param.Boolean(default=False, doc="Presenter mode: text and axis labels larger, a field over the plane "
                                             "drawn larger (the page's presenter mode sets it).")

    def __init__(self, name: str, view: dg.View, **params):
        super().__init__(**params)
        self.key, self.kind = name, type(view)
        self.pipe = hv.streams.Pipe(data=view)
        self.title = _title_pane(view.title or name.replace("_", " "))
        self.description = pn.pane.HTML(_description_html(view.description), visible=bool(view.description),
                                         styles=dict(CAPTION_STYLE), max_width=WIDTH + 80,
                                         margin=(0, 10, 6, 10))
        extra = []
        if isinstance(view, dg.Scalars):
            self.dmap = None
            self.body = render_scalars(view)
        else:
            streams = [self.pipe]
            if isinstance(view, dg.Spectrum):
                self.log_x = view.log
                streams.append(hv.streams.Params(self, ["log_x"]))
                extra = [pn.widgets.Checkbox.from_param(self.param.log_x, name="log x")]
            self.dmap = hv.DynamicMap(self._render, streams=streams)
            self.body = pn.pane.HoloViews(self.dmap, sizing_mode="fixed", linked_axes=False)
        self.panel = pn.Column(self.title, self.body, *extra, self.description, name=view.title or name,
                               css_classes=[VIEW_CLASS, view_class(name)])  # the page says when it is on screen
        self._enlarge_text()

    def _render(self, data, log_x=True):
        if isinstance(data, dg.Spectrum):
            element = render_spectrum(data, log=log_x)
        elif isinstance(data, dg.Field2D):
            element = render_field(data, scale=PRESENTER_FIELD if self.large else 1.0)
        else:
            element = renderer_for(data)(data)
        return element.opts(fontscale=PRESENTER_SCALE) if self.large else element

    @param.depends("large", watch=True)
    def _enlarge(self) -> None:
        """Presenter mode on or off: the text panes at their new size, the plot drawn again (a Bokeh plot keeps the
        frame it was made with, so a field drawn larger is a new plot)."""
        self._enlarge_text()
        if self.dmap is not None:
            streams = [stream for stream in self.dmap.streams if stream is not self.pipe]
            self.pipe = hv.streams.Pipe(data=self.pipe.data)  # the old plot's pipe goes with it
            self.dmap = hv.DynamicMap(self._render, streams=[self.pipe, *streams])
            self.body.object = self.dmap

    def _enlarge_text(self) -> None:
        """The title and a table's rows at presenter mode's size, or the page's own (a CSS zoom: text panes, never a
        plot's canvas). The caption keeps its size: the key view, caption included, fits a projector's first screen."""
        zoom = {"zoom": str(PRESENTER_SCALE) if self.large else "1"}
        for pane in (self.title, *([self.body] if self.dmap is None else [])):  # a caption keeps its size
            pane.styles = {**(pane.styles or {}), **zoom}

    def update(self, view: dg.View) -> None:
        """Redraw the pane with `view`: title and description when they changed, the data through its pipe."""
        old = self.pipe.data
        if view.title != getattr(old, "title", None):
            self.title.object = _title_html(view.title or self.key.replace("_", " "))
        if view.description != getattr(old, "description", None):
            self.description.object = _description_html(view.description)
            self.description.visible = bool(view.description)
        if self.dmap is None:
            self.pipe.send(view)  # no plot listens: keeps the data for readers of `pipe.data`
            self.body.object = scalars_html(view)
        else:
            self.pipe.send(view)


def _description_html(text: str) -> str:
    return f'<div class="invlab-view-description">{html_text(text or "")}</div>'
