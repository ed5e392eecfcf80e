"""Renderers: one per diagnostic view type (invlab.diagnostics), and the pane that streams a view to the page.

A `ViewPane` owns an `hv.streams.Pipe` and a DynamicMap fed by it, made once with the view's first data; the
server thread calls `update(view)` with plain numpy data and HoloViews updates the same plot's data in the browser.
The live training curves are Bokeh sources streamed point by point (`curve_board`, `curve_plot`).
Nothing here touches the engine's tensors or runs on the training thread.

Which renderer draws which view type is one registry, `renderers` (`register_renderer`); the renderers live by job:
`maps` (image grids, heatmaps, fields), `charts` (spectra, model curves, scatters), `tables` (scalars); `style`
holds the sizes, the metric labels and units and the legend rules every plot follows, and `curve_board` the live
training curves. Their public names are importable from here too.
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
from invlab.dashboard.views.renderers import (
    PRESENTER_FIELD,
    RENDERERS,
    Look,
    Renderer,
    missing_renderer_html,
    register_renderer,
    renderer_for,
)
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
           "Look", "missing_renderer_html", "PRESENTER_FIELD", "register_renderer", "Renderer",
           "SEQUENTIAL", "shows_curve", "spectrum_values", "tile_grid", "TITLE_STYLE", "to_display", "ViewPane",
           "WIDTH", "wrap_label", "y_limits"]


PRESENTER_SCALE = 1.3  # presenter mode's text (the page's presenter zoom is 1.35); a field's frame: PRESENTER_FIELD
# a caption under a view: smaller and fainter than the page's text in either theme (a fixed grey is dark on dark)
CAPTION_STYLE = {"font-size": "0.85em", "opacity": "0.75"}


def _title_pane(title: str) -> pn.pane.HTML:
    return pn.pane.HTML(_title_html(title), styles=TITLE_STYLE, max_width=WIDTH + 80, margin=(4, 10, 0, 10))


def _title_html(title: str) -> str:
    return f'<div class="invlab-view-title">{html_text(title or "")}</div>'


class ViewPane(param.Parameterized):
    """One diagnostic, streamed: `update(view)` sends the new data through a Pipe to the browser.

    The title is wrapping text above the plot (a long title is never clipped) and the description below it; the
    view's type picks its renderer from the registry (renderers.py): a table (Scalars) is HTML as tall as its rows,
    redrawn whole when its rows change, and a view type with no renderer is a sentence saying so.
    """

    log_x = param.Boolean(default=True, doc="Histogram of log10 eigenvalues (spectra only).")
    large = param.Boolean(default=False, doc="Presenter mode: text and axis labels larger, a field over the plane "
                                             "drawn larger (the page's presenter mode sets it).")

    def __init__(self, name: str, view: dg.View, **params):
        super().__init__(**params)
        self.key, self.kind = name, type(view)
        self.renderer: Renderer | None = renderer_for(view)  # None: the pane says so instead of drawing
        self.pipe = hv.streams.Pipe(data=view)
        self.title = _title_pane(view.title or name.replace("_", " "))
        self.description = pn.pane.HTML(_description_html(view.description), visible=bool(view.description),
                                         styles=dict(CAPTION_STYLE), max_width=WIDTH + 80,
                                         margin=(0, 10, 6, 10))
        extra = []
        if self.renderer is None or self.renderer.html:
            self.dmap = None
            self.body = pn.pane.HTML(self._html(view), max_width=WIDTH, sizing_mode="stretch_width")
        else:
            streams = [self.pipe]
            if self.renderer.log_toggle:
                self.log_x = bool(getattr(view, "log", True))
                streams.append(hv.streams.Params(self, ["log_x"]))
                extra = [pn.widgets.Checkbox.from_param(self.param.log_x, name="log x")]
            self.dmap = hv.DynamicMap(self._render, streams=streams)
            self.body = pn.pane.HoloViews(self.dmap, sizing_mode="fixed", linked_axes=False)
        self.panel = pn.Column(self.title, self.body, *extra, self.description, name=view.title or name,
                               css_classes=[VIEW_CLASS, view_class(name)])  # the page says when it is on screen
        self._enlarge_text()

    def _html(self, view: dg.View) -> str:
        """A view drawn as text (a table), or the sentence saying its type has no renderer."""
        return missing_renderer_html(view) if self.renderer is None else self.renderer.draw(view, Look(self.large))

    def _render(self, data, log_x=True):
        element = self.renderer.draw(data, Look(large=self.large, log_x=log_x))
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
            self.body.object = self._html(view)
        else:
            self.pipe.send(view)


def _description_html(text: str) -> str:
    return f'<div class="invlab-view-description">{html_text(text or "")}</div>'
