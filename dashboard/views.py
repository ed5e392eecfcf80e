"""Renderers: one per diagnostic view type (engine.diagnostics), plus the live training curves.

A renderer owns an `hv.streams.Pipe` (or `Buffer` for the curves) and a DynamicMap fed by it; the
server thread calls `update(view)` with plain numpy data and HoloViews ships the change to the browser.
Nothing here touches the engine's tensors or runs on the training thread.
"""
from __future__ import annotations

import io

import holoviews as hv
import numpy as np
import pandas as pd
import panel as pn
import param

from engine import diagnostics as dg

WIDTH, HEIGHT = 420, 300


# -- images --------------------------------------------------------------------------------------------------------
def _diverging(values: np.ndarray, vmax: float) -> np.ndarray:
    """Map signed values to blue–white–red RGB in [0, 1]."""
    t = np.clip(values / max(vmax, 1e-12), -1.0, 1.0)[..., None]  # [..., 1]
    blue, white, red = np.array([0.17, 0.35, 0.75]), np.ones(3), np.array([0.78, 0.18, 0.15])
    return np.where(t < 0, white + (-t) * (blue - white), white + t * (red - white))


def tile_grid(view: dg.ImageGrid, pad: int = 1) -> np.ndarray:
    """[rows, cols, H, W(, 3)] → one RGB image [rows·(H+pad)−pad, cols·(W+pad)−pad, 3] in [0, 1]."""
    imgs = np.asarray(view.images, dtype=np.float64)
    rows, cols, H, W = imgs.shape[:4]
    if view.vrange is not None:
        vmax = max(abs(view.vrange[0]), abs(view.vrange[1]))
        rgb = _diverging(imgs if imgs.ndim == 4 else imgs.mean(-1), vmax)
    else:
        lo, hi = (0.0, 1.0)
        if imgs.min() < 0 or imgs.max() > 1:
            lo, hi = float(imgs.min()), float(imgs.max())
        unit = np.clip((imgs - lo) / max(hi - lo, 1e-12), 0, 1)
        rgb = np.repeat(unit[..., None], 3, -1) if imgs.ndim == 4 else unit
    out = np.ones((rows * (H + pad) - pad, cols * (W + pad) - pad, 3))
    for r in range(rows):
        for c in range(cols):
            out[r * (H + pad):r * (H + pad) + H, c * (W + pad):c * (W + pad) + W] = rgb[r, c]
    return out


def render_image_grid(view: dg.ImageGrid) -> hv.RGB:
    tiled = tile_grid(view)
    h, w = tiled.shape[:2]
    scale = max(1, int(min(WIDTH / w, HEIGHT / h)))
    return hv.RGB(tiled[::-1], bounds=(0, 0, w, h)).opts(  # hv.RGB's first row is the bottom
        title=view.title, xaxis=None, yaxis=None, frame_width=w * scale, frame_height=h * scale, toolbar=None)


# -- spectra, heatmaps, fields, scalars, model curves ----------------------------------------------------------------
def render_spectrum(view: dg.Spectrum, log: bool = True) -> hv.Histogram:
    values = np.asarray(view.values, dtype=np.float64)
    if log:
        values = np.log10(np.clip(values, 1e-300, None))
        values = values[values > -300 + 1]
    label = "log10 eigenvalue" if log else "eigenvalue"
    if values.size == 0:
        values = np.zeros(1)
    freq, edges = np.histogram(values, bins=min(40, max(5, values.size // 3)))
    return hv.Histogram((edges, freq), kdims=[label], vdims=["count"]).opts(
        title=view.title, width=WIDTH, height=HEIGHT, color="#4c72b0", line_color=None, tools=["hover"])


def render_heatmap(view: dg.Heatmap) -> hv.Image:
    m = np.asarray(view.matrix, dtype=np.float64)
    opts = dict(title=view.title, width=WIDTH, height=HEIGHT, colorbar=True, tools=["hover"], xlabel=view.xlabel,
                ylabel=view.ylabel, invert_yaxis=True)
    if view.symmetric:
        vmax = float(np.abs(m).max()) or 1.0
        opts.update(cmap="RdBu_r", clim=(-vmax, vmax))
    else:
        opts.update(cmap="viridis")
    return hv.Image(m[::-1], bounds=(0, 0, m.shape[1], m.shape[0])).opts(**opts)


def render_field(view: dg.Field2D):
    x, y, v = (np.asarray(a, dtype=np.float64) for a in (view.x, view.y, view.values))
    dx, dy = (x[1] - x[0]) / 2 if len(x) > 1 else 0.5, (y[1] - y[0]) / 2 if len(y) > 1 else 0.5
    img = hv.Image(v[::-1], bounds=(x[0] - dx, y[0] - dy, x[-1] + dx, y[-1] + dy), vdims=["value"]).opts(
        cmap="RdBu_r" if view.contour is not None else "viridis", colorbar=True, width=WIDTH + 60, height=HEIGHT,
        title=view.title, tools=["hover"])
    layers = img
    if view.contour is not None:
        layers = layers * hv.operation.contours(img, levels=[view.contour]).opts(color="black", line_width=2)
    if view.points is not None and len(view.points):
        pts = pd.DataFrame({"x": view.points[:, 0], "y": view.points[:, 1],
                            "label": (np.asarray(view.point_labels) if view.point_labels is not None
                                      else np.zeros(len(view.points))).astype(str)})
        layers = layers * hv.Points(pts, ["x", "y"], ["label"]).opts(color="label", cmap="Category10", size=5,
                                                                     line_color="white", show_legend=False)
    return layers


def render_scalars(view: dg.Scalars) -> hv.Table:
    names = list(view.values)
    return hv.Table({"quantity": names, "value": [f"{view.values[k]:.5g}" for k in names]}, ["quantity"], ["value"]).opts(
        title=view.title, width=WIDTH, height=min(HEIGHT, 40 + 26 * max(1, len(names))))


def render_curves(view: dg.Curves):
    curves = [hv.Curve((np.asarray(x), np.asarray(y)), view.xlabel, view.ylabel or "value", label=name)
              for name, (x, y) in view.series.items()]
    overlay = hv.Overlay(curves) if curves else hv.Overlay([hv.Curve([], view.xlabel, view.ylabel or "value")])
    return overlay.opts(hv.opts.Curve(width=WIDTH, height=HEIGHT, logy=view.logy, tools=["hover"]),
                        hv.opts.Overlay(title=view.title, legend_position="top_left"))


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
    """One diagnostic, streamed: `update(view)` sends the new data through a Pipe to the browser."""

    log_x = param.Boolean(default=True, doc="Histogram of log10 eigenvalues (spectra only).")

    def __init__(self, name: str, view: dg.View, **params):
        super().__init__(**params)
        self.key, self.kind = name, type(view)
        self.pipe = hv.streams.Pipe(data=view)
        streams = [self.pipe]
        if isinstance(view, dg.Spectrum):
            self.log_x = view.log
            streams.append(hv.streams.Params(self, ["log_x"]))
        self.dmap = hv.DynamicMap(self._render, streams=streams)
        pane = pn.pane.HoloViews(self.dmap, sizing_mode="fixed", linked_axes=False)
        extra = [pn.widgets.Checkbox.from_param(self.param.log_x, label="log x")] if isinstance(view, dg.Spectrum) else []
        desc = [pn.pane.Markdown(view.description, styles={"font-size": "0.85em", "color": "#555"}, max_width=WIDTH)] \
            if view.description else []
        self.panel = pn.Column(pane, *extra, *desc, name=view.title or name)

    def _render(self, data, log_x=True):
        if isinstance(data, dg.Spectrum):
            return render_spectrum(data, log=log_x)
        return renderer_for(data)(data)

    def update(self, view: dg.View) -> None:
        self.pipe.send(view)


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
    """Live curves of the trainer's history: one bounded Buffer per metric, previous runs overlaid faintly."""

    logy = param.Boolean(default=False, doc="Logarithmic y axis (of |value| for negative quantities such as the ELBO).")
    smoothing = param.Number(default=0.0, bounds=(0.0, 0.99), step=0.01,
                             doc="Exponential smoothing of the traces; the raw trace stays faint behind.")
    show_previous = param.Boolean(default=True, doc="Overlay the previous runs of this session.")

    PANELS = (("ELBO", ("elbo", "loss")), ("Test error / RMSE", ("test_error", "test_rmse")), ("Test NLPD", ("test_nlpd",)))

    def __init__(self, length: int = 20_000, **params):
        super().__init__(**params)
        self.length = length
        self.buffers: dict[str, hv.streams.Buffer] = {}
        self.previous: list[tuple[str, dict[str, pd.DataFrame]]] = []  # (label, metric → frame)
        self.previous_pipe = hv.streams.Pipe(data=[])
        self.plots = {}
        self.layout = pn.FlexBox()
        self.extra_layout = pn.FlexBox()

    def buffer(self, metric: str) -> hv.streams.Buffer:
        if metric not in self.buffers:
            frame = pd.DataFrame({"step": np.zeros(0, dtype=np.int64), metric: np.zeros(0)})
            self.buffers[metric] = hv.streams.Buffer(frame, length=self.length, index=False)
            self._add_plot(metric)
        return self.buffers[metric]

    def _title(self, metric):
        for title, names in self.PANELS:
            if metric == names[0] or (metric in names and names[0] not in self.buffers):
                return title
        return metric.replace("_", " ")

    def _add_plot(self, metric: str) -> None:
        params = hv.streams.Params(self, ["logy", "smoothing", "show_previous"])

        def render(data, logy, smoothing, show_previous, _previous=None, metric=metric):
            return self._render(metric, data, logy, smoothing, show_previous)

        dmap = hv.DynamicMap(render, streams=[self.buffers[metric], params, self.previous_pipe.rename(data="_previous")])
        pane = pn.pane.HoloViews(dmap, linked_axes=False, name=metric)
        self.plots[metric] = pane
        main = {names[0] for _, names in self.PANELS} | {"test_rmse"}
        (self.layout if metric in main else self.extra_layout).append(pane)

    def _render(self, metric, data, logy, smoothing, show_previous):
        steps = np.asarray(data["step"], dtype=np.float64)
        values = np.asarray(data[metric], dtype=np.float64)
        negative = logy and np.nanmin(values, initial=1.0) <= 0  # e.g. the ELBO: plot |value| on a log axis
        transform = np.abs if negative else (lambda v: v)
        label = f"|{metric}|" if negative else metric
        layers = []
        if show_previous:
            for i, (run_label, frames) in enumerate(self.previous[-5:]):
                if metric in frames and len(frames[metric]):
                    f = frames[metric]
                    layers.append(hv.Curve((f["step"], transform(ema(f[metric].to_numpy(), smoothing))), "step", label,
                                           label=run_label).opts(alpha=0.45, line_dash="dashed", line_width=1.5))
        if len(steps) < 50:  # sparse series (test metrics): show the points themselves too
            layers.append(hv.Scatter((steps, transform(values)), "step", label).opts(color="#1f77b4", size=5))
        if smoothing > 0:
            layers.append(hv.Curve((steps, transform(values)), "step", label, label="raw").opts(alpha=0.25, color="#1f77b4"))
            layers.append(hv.Curve((steps, transform(ema(values, smoothing))), "step", label, label="this run").opts(
                color="#1f77b4", line_width=2))
        else:
            layers.append(hv.Curve((steps, transform(values)), "step", label, label="this run").opts(color="#1f77b4",
                                                                                                    line_width=2))
        return hv.Overlay(layers).opts(
            hv.opts.Curve(width=WIDTH, height=HEIGHT, logy=logy, tools=["hover"], framewise=True),
            hv.opts.Scatter(logy=logy, framewise=True),
            hv.opts.Overlay(title=metric.replace("_", " "), legend_position="top_left", show_legend=len(layers) > 1))

    def send(self, metric: str, steps, values) -> None:
        if len(steps):
            self.buffer(metric).send(pd.DataFrame({"step": np.asarray(steps, dtype=np.int64),
                                                   metric: np.asarray(values, dtype=np.float64)}))

    def archive(self, label: str) -> None:
        """Keep the current run's curves as a faint overlay and clear the live buffers for a new run."""
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
