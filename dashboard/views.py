"""Renderers: one per diagnostic view type (engine.diagnostics), plus the live training curves.

A renderer owns an `hv.streams.Pipe` (or `Buffer` for the curves) and a DynamicMap fed by it; the
server thread calls `update(view)` with plain numpy data and HoloViews ships the change to the browser.
Nothing here touches the engine's tensors or runs on the training thread.

What every plot here promises (issue 11, "readable views"): labels in words with units, taken from one
table (`METRICS`, `metric_label`); errors in percent; axes that follow the data on every update
(framewise) with a minimum y-span, so a flat curve is not magnified into floating-point noise; legends
beside the data, never over it; titles above the plot as wrapping text (never clipped); tables sized to
their rows; signed maps in a diverging colour map centred at zero, with a colour bar.
"""
from __future__ import annotations

import io
import math
import textwrap
from dataclasses import dataclass

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401 — registers Bokeh's plots and options
import numpy as np
import pandas as pd
import panel as pn
import param

from engine import diagnostics as dg

from .safe_text import html_text

# Importing the backend marks it current but leaves `hv.opts.Curve` & co. unbuilt until a backend is *set*, which
# `hv.extension` does; a script or notebook that never calls it (pn.serve, a bare `Explorer()`) would otherwise get
# "No entry for 'Curve' registered" from every renderer below.
hv.Store.set_current_backend("bokeh")

WIDTH, HEIGHT = 420, 300  # outer size of a plot without a legend
FRAME_WIDTH, FRAME_HEIGHT = 280, 200  # the data area: fixed, so a legend or colour bar adds width instead of eating it
LEGEND_CHARS = 24  # a legend label wraps at this many characters (run labels say what differs between runs)
TITLE_STYLE = {"font-weight": "bold", "font-size": "1.0em", "margin-bottom": "0"}
DIVERGING, SEQUENTIAL, GREY = "RdBu_r", "viridis", "Greys_r"


# -- what the numbers are: one table of labels and units ----------------------------------------------------------
@dataclass(frozen=True)
class Metric:
    """How the page shows one logged quantity."""

    label: str  # axis label, in words with units
    title: str  # plot title
    scale: float = 1.0  # shown value = logged value × scale (100: a fraction shown in %)
    min_span: float = 0.0  # the y axis spans at least this much (shown units), whatever the data's spread
    curve: bool = True  # its own live curve; False where a model view already shows it (one view per quantity)


METRICS: dict[str, Metric] = {
    "elbo": Metric("ELBO (nats)", "ELBO (evidence lower bound)"),
    "loss": Metric("training loss", "Training loss"),
    "test_error": Metric("test error (%)", "Test error", scale=100.0, min_span=1.0),
    "test_nlpd": Metric("test NLPD (nats per point)", "Test negative log predictive density"),
    "test_rmse": Metric("test RMSE (target units)", "Test root-mean-square error"),
    "expected_log_lik": Metric("expected log-likelihood (nats)", "Expected log-likelihood"),
    "kl": Metric("KL(q ‖ p) (nats)", "KL divergence of q(u) from the prior"),
    # GWI: the W2 estimate and its parts have one view of their own ("Parts of the W2 estimate")
    "w2": Metric("Ŵ² (squared Wasserstein distance)", "W2 estimate", curve=False),
    "w2_mean": Metric("mean term ‖m_P − m_Q‖²", "W2: mean term", curve=False),
    "w2_trace_p": Metric("trace of C_P", "W2: trace of C_P", curve=False),
    "w2_trace_q": Metric("trace of C_Q", "W2: trace of C_Q", curve=False),
    "w2_eigen": Metric("eigenvalue term Σ√λ", "W2: eigenvalue term", curve=False),
    # RKHS objective (eq. 4): the terms have one view of their own ("Objective terms over L-BFGS iterations")
    "data_loss": Metric("data loss", "Data loss (labelled points)", curve=False),
    "invariance_loss": Metric("invariance loss", "Invariance loss (functionals)", curve=False),
    "norm": Metric("norm penalty λ‖f‖²", "RKHS norm penalty", curve=False),
    "objective": Metric("objective", "Objective (eq. 4)"),
}
RANGE_UNITS = {"rotation": "°", "strength": "px"}


def metric_spec(name: str) -> Metric:
    """The row of METRICS for `name`; names not listed get a readable label made from the name itself."""
    if name in METRICS:
        return METRICS[name]
    if name.startswith("range."):  # learned augmentation ranges: the model's own view shows their history
        what = name[len("range."):].replace(".", " ").replace("_", " ")
        unit = RANGE_UNITS.get(name[len("range."):].split(".")[0], "")
        return Metric(f"{what} range" + (f" ({unit})" if unit else ""), f"{what} range", curve=False)
    if name.startswith("test_"):
        inner = metric_spec(name[len("test_"):])
        return Metric(f"test {inner.label}", f"Test {inner.title[:1].lower()}{inner.title[1:]}", inner.scale,
                      inner.min_span, inner.curve)
    words = name.replace(".", " ").replace("_", " ")
    return Metric(words, words[:1].upper() + words[1:])


def metric_label(name: str) -> str:
    """The human label, with units, of a metric name the trainer logs (`test_error` → "test error (%)")."""
    return metric_spec(name).label


def shows_curve(name: str) -> bool:
    """Whether `name` gets a live curve of its own (False: another view already shows it)."""
    return metric_spec(name).curve


def to_display(name: str, values) -> np.ndarray:
    """Logged values in the units the page shows them in (errors: fraction → %)."""
    return np.asarray(values, dtype=np.float64) * metric_spec(name).scale


def percent(fractions) -> np.ndarray:
    return np.asarray(fractions, dtype=np.float64) * 100.0


def y_limits(arrays, min_span: float = 0.0, pad: float = 0.05) -> tuple[float, float] | None:
    """The y range to draw: the data's extent padded by `pad`, widened about its centre to at least
    max(min_span, 1 % of the centre's magnitude, 1e-9), so a flat curve shows as flat. None without finite data."""
    finite = [a[np.isfinite(a)] for a in (np.asarray(x, dtype=np.float64).ravel() for x in arrays)]
    finite = [a for a in finite if a.size]
    if not finite:
        return None
    lo, hi = min(float(a.min()) for a in finite), max(float(a.max()) for a in finite)
    centre, span = 0.5 * (lo + hi), hi - lo
    floor = max(min_span, 0.01 * abs(centre), 1e-9)
    if span < floor:
        return centre - floor / 2, centre + floor / 2
    return lo - pad * span, hi + pad * span


def wrap_label(text: str, width: int = LEGEND_CHARS, lines: int = 3) -> str:
    """A legend label on at most `lines` lines of about `width` characters (Bokeh draws '\\n' as a line break)."""
    parts = textwrap.wrap(str(text), width=width, break_long_words=True) or [""]
    if len(parts) > lines:
        parts = parts[:lines]
        parts[-1] = parts[-1][:max(1, width - 1)] + "…"
    return "\n".join(parts)


def _legend_opts(show: bool = True) -> dict:
    """A legend beside the data, never over it (its entries may appear later: a live board always shows it)."""
    return dict(legend_position="right", show_legend=show,
                legend_opts={"label_text_font_size": "8pt", "glyph_width": 14, "spacing": 2, "padding": 4})


def _title_pane(title: str) -> pn.pane.HTML:
    return pn.pane.HTML(_title_html(title), styles=TITLE_STYLE, max_width=WIDTH + 80, margin=(4, 10, 0, 10))


def _title_html(title: str) -> str:
    return f'<div class="invlab-view-title">{html_text(title or "")}</div>'


# -- images --------------------------------------------------------------------------------------------------------
def _diverging(values: np.ndarray, vmax: float) -> np.ndarray:
    """Map signed values to blue–white–red RGB in [0, 1]."""
    t = np.clip(values / max(vmax, 1e-12), -1.0, 1.0)[..., None]  # [..., 1]
    blue, white, red = np.array([0.17, 0.35, 0.75]), np.ones(3), np.array([0.78, 0.18, 0.15])
    return np.where(t < 0, white + (-t) * (blue - white), white + t * (red - white))


GUTTER = np.array([0.62, 0.72, 0.86])  # the gap between the images of a grid: light blue-grey, neither black nor white


def _tile(imgs: np.ndarray, pad: int, fill) -> np.ndarray:
    """[rows, cols, H, W(, C)] → [rows·(H+pad)−pad, cols·(W+pad)−pad(, C)], gaps filled with `fill`."""
    rows, cols, H, W = imgs.shape[:4]
    out = np.full((rows * (H + pad) - pad, cols * (W + pad) - pad) + imgs.shape[4:], fill, dtype=np.float64)
    for r in range(rows):
        for c in range(cols):
            out[r * (H + pad):r * (H + pad) + H, c * (W + pad):c * (W + pad) + W] = imgs[r, c]
    return out


def tile_grid(view: dg.ImageGrid, pad: int = 1) -> np.ndarray:
    """[rows, cols, H, W(, 3)] → one RGB image [rows·(H+pad)−pad, cols·(W+pad)−pad, 3] in [0, 1]."""
    imgs = np.asarray(view.images, dtype=np.float64)
    if view.vrange is not None:  # signed maps: gaps white, like zero
        vmax = max(abs(view.vrange[0]), abs(view.vrange[1]))
        rgb, gap = _diverging(imgs if imgs.ndim == 4 else imgs.mean(-1), vmax), 1.0
    else:  # pictures: a tinted gutter, so white and black borders both stay visible
        lo, hi = (0.0, 1.0)
        if imgs.min() < 0 or imgs.max() > 1:
            lo, hi = float(imgs.min()), float(imgs.max())
        unit = np.clip((imgs - lo) / max(hi - lo, 1e-12), 0, 1)
        rgb, gap = (np.repeat(unit[..., None], 3, -1) if imgs.ndim == 4 else unit), GUTTER
    return _tile(rgb, pad, gap)


def is_signed(view: dg.ImageGrid) -> bool:
    """A grid of one-channel maps with a symmetric value range: drawn in a diverging colour map centred at zero."""
    if view.vrange is None or np.asarray(view.images).ndim != 4:
        return False
    lo, hi = view.vrange
    return math.isclose(-lo, hi, rel_tol=1e-6, abs_tol=1e-12)


def _grid_ticks(labels, n: int, size: int, pad: int, flip: bool = False, total: int = 0):
    """Tick positions at the centres of the tiles for the grid's row or column labels (empty: no axis)."""
    if not labels or len(labels) != n:
        return []
    centres = [k * (size + pad) + size / 2 for k in range(n)]
    if flip:
        centres = [total - c for c in centres]
    return [(c, str(lbl)) for c, lbl in zip(centres, labels)]


def render_image_grid(view: dg.ImageGrid, pad: int = 1, frame: tuple[int, int] = (FRAME_WIDTH, FRAME_HEIGHT)):
    """The grid as one image, each image pixel drawn as an integer number of screen pixels, as large as fits in
    `frame` (width, height): the dashboard's plot size by default, larger in a notebook (`dashboard.notebook.show`)."""
    imgs = np.asarray(view.images, dtype=np.float64)
    rows, cols, H, W = imgs.shape[:4]
    signed = is_signed(view)
    grey_range = view.vrange is not None and imgs.ndim == 4 and not signed
    if signed or grey_range:  # a value map: a colour map with a colour bar
        tiled = _tile(imgs, pad, np.nan)
    else:
        tiled = tile_grid(view, pad)
    h, w = tiled.shape[:2]
    scale = max(1, int(min(frame[0] / w, frame[1] / h)))
    xticks = _grid_ticks(view.col_labels, cols, W, pad)
    yticks = _grid_ticks(view.row_labels, rows, H, pad, flip=True, total=h)
    opts = dict(frame_width=w * scale, frame_height=h * scale, toolbar=None, framewise=True,
                xaxis="bottom" if xticks else None, yaxis="left" if yticks else None, xlabel="", ylabel="")
    if xticks:
        opts.update(xticks=xticks, xrotation=30 if max(len(t) for _, t in xticks) * cols > w * scale / 7 else 0)
    if yticks:
        opts["yticks"] = yticks
    if signed or grey_range:
        if signed:
            vmax = max(abs(view.vrange[1]), 1e-12)
            cmap, clim = DIVERGING, (-vmax, vmax)
        else:
            cmap, clim = GREY, tuple(view.vrange)
        return hv.Image(tiled[::-1], bounds=(0, 0, w, h), vdims=["value"]).opts(
            cmap=cmap, clim=clim, colorbar=True, colorbar_opts={"width": 10}, clipping_colors={"NaN": "white"},
            tools=["hover"], **opts)
    return hv.RGB(tiled[::-1], bounds=(0, 0, w, h)).opts(**opts)  # hv.RGB's first row is the bottom


# -- spectra, heatmaps, fields, scalars, model curves ----------------------------------------------------------------
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
    values = spectrum_values(view, log)
    label = "log10 eigenvalue" if log else "eigenvalue"
    if values.size == 0:
        values = np.zeros(1)
    freq, edges = np.histogram(values, bins=min(40, max(5, values.size // 3)))
    return hv.Histogram((edges, freq), kdims=[label], vdims=["number of eigenvalues"]).opts(
        frame_width=FRAME_WIDTH, frame_height=FRAME_HEIGHT, color="#4c72b0", line_color=None, tools=["hover"],
        framewise=True)


def render_heatmap(view: dg.Heatmap) -> hv.Image:
    m = np.asarray(view.matrix, dtype=np.float64)
    opts = dict(frame_width=FRAME_WIDTH - 40, frame_height=FRAME_HEIGHT, colorbar=True, tools=["hover"],
                xlabel=view.xlabel, ylabel=view.ylabel, invert_yaxis=True, framewise=True)
    if view.symmetric:
        vmax = float(np.nanmax(np.abs(m))) if m.size else 1.0
        opts.update(cmap=DIVERGING, clim=(-(vmax or 1.0), vmax or 1.0))
    else:
        finite = m[np.isfinite(m)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        opts.update(cmap=SEQUENTIAL, clim=(lo, hi if hi > lo else lo + 1e-12))
    return hv.Image(m[::-1], bounds=(0, 0, m.shape[1], m.shape[0]), vdims=["value"]).opts(**opts)


def render_field(view: dg.Field2D):
    x, y, v = (np.asarray(a, dtype=np.float64) for a in (view.x, view.y, view.values))
    dx, dy = (x[1] - x[0]) / 2 if len(x) > 1 else 0.5, (y[1] - y[0]) / 2 if len(y) > 1 else 0.5
    img = hv.Image(v[::-1], bounds=(x[0] - dx, y[0] - dy, x[-1] + dx, y[-1] + dy), kdims=["x₁", "x₂"],
                   vdims=["value"]).opts(
        cmap=DIVERGING if view.contour is not None else SEQUENTIAL, colorbar=True, frame_width=FRAME_WIDTH - 40,
        frame_height=FRAME_HEIGHT, tools=["hover"], framewise=True)
    layers = img
    if view.contour is not None:
        layers = layers * hv.operation.contours(img, levels=[view.contour]).opts(color="black", line_width=2)
    if view.points is not None and len(view.points):
        pts = pd.DataFrame({"x₁": view.points[:, 0], "x₂": view.points[:, 1],
                            "label": (np.asarray(view.point_labels) if view.point_labels is not None
                                      else np.zeros(len(view.points))).astype(str)})
        layers = layers * hv.Points(pts, ["x₁", "x₂"], ["label"]).opts(
            color="label", cmap="Category10", size=5, line_color="white", show_legend=False, framewise=True)
    return layers


def scalars_html(view: dg.Scalars) -> str:
    """A table with one row per value, as tall as its rows (nothing clipped; long names wrap)."""
    rows = []
    for name, value in view.values.items():
        shown, where = _split_name(name)
        where = f' <span style="color:#888;font-size:0.85em">({html_text(where)})</span>' if where else ""
        rows.append(f'<tr><td style="padding:2px 12px 2px 0;word-break:break-word">{html_text(shown)}{where}</td>'
                    f'<td style="padding:2px 0;text-align:right;font-family:monospace">'
                    f'{_format_value(value)}</td></tr>')
    return (f'<table class="invlab-scalars" data-rows="{len(rows)}" style="border-collapse:collapse;font-size:0.9em;'
            f'width:100%">{"".join(rows)}</table>')


def _split_name(name: str) -> tuple[str, str]:
    """"kernel.base.lengthscale" → ("lengthscale", "kernel.base");
    "q.q_mu (mean of 40)" → ("q mu (mean of 40)", "q")."""
    base, paren = (name.split(" (", 1) + [""])[:2]
    paren = f" ({paren}" if paren else ""
    if "." in base and " " not in base:
        where, _, last = base.rpartition(".")
        return last.replace("_", " ") + paren, where
    return name.replace("_", " ") if " " not in name else name, ""


def _format_value(value) -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return html_text(str(value))
    if not math.isfinite(v):
        return str(v)
    return f"{int(v):d}" if v.is_integer() and abs(v) < 1e9 else f"{v:.4g}"


def render_scalars(view: dg.Scalars) -> pn.pane.HTML:
    return pn.pane.HTML(scalars_html(view), width=WIDTH, sizing_mode="fixed")


def render_curves(view: dg.Curves):
    min_span = getattr(view, "min_span", 0.0)
    ylabel = view.ylabel or "value"
    ys = [np.asarray(y, dtype=np.float64) for _, y in view.series.values()]
    ylim = None if view.logy else y_limits(ys, min_span)
    if not getattr(view, "legend", True) and view.series:  # interchangeable draws: one multi-line glyph, fast to redraw
        paths = [{view.xlabel: np.asarray(x, dtype=np.float64), ylabel: np.asarray(y, dtype=np.float64), "draw": k}
                 for k, (x, y) in enumerate(view.series.values())]
        opts = dict(frame_width=FRAME_WIDTH, frame_height=FRAME_HEIGHT, color="draw", cmap="Category10",
                    line_width=1.5, tools=["hover"], framewise=True, show_legend=False, colorbar=False)
        if ylim is not None:
            opts["ylim"] = ylim
        return hv.Path(paths, kdims=[view.xlabel, ylabel], vdims=["draw"]).opts(**opts)
    labels = getattr(view, "labels", None) or {}
    curves = [hv.Curve((np.asarray(x), np.asarray(y)), view.xlabel, ylabel, label=wrap_label(labels.get(name, name)))
              for name, (x, y) in view.series.items()]
    overlay = hv.Overlay(curves) if curves else hv.Overlay([hv.Curve([], view.xlabel, ylabel)])
    curve_opts = dict(frame_width=FRAME_WIDTH, frame_height=FRAME_HEIGHT, logy=view.logy, tools=["hover"],
                      framewise=True)
    if ylim is not None:
        curve_opts["ylim"] = ylim
    legend = len(curves) > 1 and getattr(view, "legend", True)
    return overlay.opts(hv.opts.Curve(**curve_opts), hv.opts.Overlay(title="", **_legend_opts(legend)))


RENDERERS = {
    dg.ImageGrid: render_image_grid,
    dg.Spectrum: render_spectrum,
    dg.Heatmap: render_heatmap,
    dg.Field2D: render_field,
    dg.Scalars: render_scalars,
    dg.Curves: render_curves,
}


def renderer_for(view: dg.View):
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

    def __init__(self, name: str, view: dg.View, **params):
        super().__init__(**params)
        self.key, self.kind = name, type(view)
        self.pipe = hv.streams.Pipe(data=view)
        self.title = _title_pane(view.title or name.replace("_", " "))
        self.description = pn.pane.HTML(_description_html(view.description), visible=bool(view.description),
                                         styles={"font-size": "0.85em", "color": "#555"}, max_width=WIDTH + 80,
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
        self.panel = pn.Column(self.title, self.body, *extra, self.description, name=view.title or name)

    def _render(self, data, log_x=True):
        if isinstance(data, dg.Spectrum):
            return render_spectrum(data, log=log_x)
        return renderer_for(data)(data)

    def update(self, view: dg.View) -> None:
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


# -- live training curves -------------------------------------------------------------------------------------------
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
