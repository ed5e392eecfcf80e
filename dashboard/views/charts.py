"""Renderers of the views that are charts: spectra (a histogram of eigenvalues), a model's own curves, and scatters
of paired values (predictions against the truth)."""
from __future__ import annotations

import holoviews as hv
import numpy as np

from invlab import diagnostics as dg
from invlab.dashboard.views.style import FRAME_HEIGHT, FRAME_WIDTH, VIEW_TOOLS, _legend_opts, wrap_label, y_limits

EIGEN_FLOOR = 1e-16  # relative to the largest eigenvalue: below this an eigenvalue is zero up to rounding


def spectrum_values(view: dg.Spectrum, log: bool = True) -> np.ndarray:
    """The numbers the histogram bins: log10 eigenvalues, with those below EIGEN_FLOOR × the largest (zero up to
    rounding, or clipped negatives) drawn at that floor rather than dropped."""
    values = np.asarray(view.values, dtype=np.float64).ravel()
    values = values[np.isfinite(values)]
    if not log or values.size == 0:
        return values
    top = float(values.max()) if values.size and values.max() > 0 else 1.0
    return np.log10(np.clip(values, top * EIGEN_FLOOR, None))


def render_spectrum(view: dg.Spectrum, log: bool = True) -> hv.Histogram:
    """A histogram of the eigenvalues (of their log10 with `log`), counts on the y axis."""
    values = spectrum_values(view, log)
    label = "log10 eigenvalue" if log else "eigenvalue"
    if values.size == 0:
        values = np.zeros(1)
    freq, edges = np.histogram(values, bins=min(40, max(5, values.size // 3)))
    return hv.Histogram((edges, freq), kdims=[label], vdims=["number of eigenvalues"]).opts(
        frame_width=FRAME_WIDTH, frame_height=FRAME_HEIGHT, color="#4c72b0", line_color=None, **VIEW_TOOLS,
        framewise=True)


def _on_axis(y, log: bool) -> np.ndarray:
    """Values to draw: on a log axis a value at or below zero has no place, so it is a gap (NaN) in the line."""
    y = np.asarray(y, dtype=np.float64)
    return np.where(y > 0, y, np.nan) if log else y


def render_curves(view: dg.Curves):
    """The view's series as lines over its x axis, y range following the data with the view's minimum span; a legend
    beside the data when there is more than one named series, one multi-line glyph for interchangeable draws."""
    min_span = getattr(view, "min_span", 0.0)
    ylabel = view.ylabel or "value"
    ys = [np.asarray(y, dtype=np.float64) for _, y in view.series.values()]
    ylim = None if view.logy else y_limits(ys, min_span)
    if not getattr(view, "legend", True) and view.series:  # interchangeable draws: one multi-line glyph, fast to redraw
        paths = [{view.xlabel: np.asarray(x, dtype=np.float64), ylabel: np.asarray(y, dtype=np.float64), "draw": k}
                 for k, (x, y) in enumerate(view.series.values())]
        opts = dict(frame_width=FRAME_WIDTH, frame_height=FRAME_HEIGHT, color="draw", cmap="Category10",
                    line_width=1.5, **VIEW_TOOLS, framewise=True, show_legend=False, colorbar=False)
        if ylim is not None:
            opts["ylim"] = ylim
        return hv.Path(paths, kdims=[view.xlabel, ylabel], vdims=["draw"]).opts(**opts)
    labels = getattr(view, "labels", None) or {}
    curves = [hv.Curve((np.asarray(x), _on_axis(y, view.logy)), view.xlabel, ylabel,
                       label=wrap_label(labels.get(name, name))) for name, (x, y) in view.series.items()]
    overlay = hv.Overlay(curves) if curves else hv.Overlay([hv.Curve([], view.xlabel, ylabel)])
    curve_opts = dict(frame_width=FRAME_WIDTH, frame_height=FRAME_HEIGHT, logy=view.logy, **VIEW_TOOLS,
                      framewise=True)
    if ylim is not None:
        curve_opts["ylim"] = ylim
    legend = len(curves) > 1 and getattr(view, "legend", True)
    return overlay.opts(hv.opts.Curve(**curve_opts), hv.opts.Overlay(title="", **_legend_opts(legend)))


def render_scatter(view: dg.Scatter):
    """The points (x across, y up) with their error bars y ± y_err and, with `identity`, the dashed line y = x.

    With the line, both axes share one range (the points' extent, padded), so y = x is the frame's diagonal and a
    point's distance from it reads the same across and up; the bars may run past the frame. Labels in words come from
    the view; a legend beside the data names the points and the line."""
    x, y = np.asarray(view.x, dtype=np.float64), np.asarray(view.y, dtype=np.float64)
    xdim, ydim = hv.Dimension("truth", label=view.xlabel or "x"), hv.Dimension("predicted", label=view.ylabel or "y")
    points = hv.Scatter((x, y), xdim, ydim, label="points ± 2 sd" if view.y_err is not None else "points").opts(
        color="#1f77b4", size=5, alpha=0.8, line_color="white", **VIEW_TOOLS)
    layers = []
    if view.y_err is not None:
        err = np.asarray(view.y_err, dtype=np.float64)
        layers.append(hv.ErrorBars((x, y, err), xdim, [ydim, "error"]).opts(  # plain bars: caps would hide the dots
            color="#1f77b4", alpha=0.3, line_width=1, upper_head=None, lower_head=None))
    layers.append(points)
    xlim = y_limits([x])
    ylim = y_limits([y])
    if view.identity:
        both = y_limits([x, y])
        xlim = ylim = both
        ends = np.array(both if both is not None else (0.0, 1.0))
        layers.append(hv.Curve((ends, ends), xdim, ydim, label="y = x").opts(color="black", line_dash="dashed",
                                                                             line_width=1.5))
    element = dict(framewise=True)
    if xlim is not None:
        element["xlim"] = xlim
    if ylim is not None:
        element["ylim"] = ylim
    side = min(FRAME_WIDTH, FRAME_HEIGHT + 40)  # a square frame: the line y = x at 45°
    return hv.Overlay(layers).opts(
        hv.opts.Scatter(frame_width=side, frame_height=side, **element),
        hv.opts.ErrorBars(**element), hv.opts.Curve(**element),
        hv.opts.Overlay(title="", **_legend_opts(True)))
