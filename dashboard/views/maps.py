"""Renderers of the views that are pictures: image grids (one tiled image per grid), heatmaps and fields over the
plane, each with a colour bar where colour stands for a value (signed maps diverging about zero)."""
from __future__ import annotations

import math

import holoviews as hv
import numpy as np
import pandas as pd

from invlab import diagnostics as dg
from invlab.dashboard.views.style import DIVERGING, FRAME_HEIGHT, FRAME_WIDTH, GREY, SEQUENTIAL, VIEW_TOOLS


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
    `frame` (width, height): the dashboard's plot size by default, larger in a notebook
    (`invlab.dashboard.notebook.display.show`)."""
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
    opts = dict(frame_width=w * scale, frame_height=h * scale, toolbar=None, active_tools=[], framewise=True,
                shared_axes=False,
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
            tools=["hover"], **opts)  # no toolbar: nothing to pan or zoom, the wheel scrolls the page
    return hv.RGB(tiled[::-1], bounds=(0, 0, w, h)).opts(**opts)  # hv.RGB's first row is the bottom


# -- heatmaps and fields over the plane ------------------------------------------------------------------------------
def render_heatmap(view: dg.Heatmap) -> hv.Image:
    """The matrix as an image, row 0 at the top, with a colour bar (diverging about zero when `symmetric`)."""
    m = np.asarray(view.matrix, dtype=np.float64)
    opts = dict(frame_width=FRAME_WIDTH - 40, frame_height=FRAME_HEIGHT, colorbar=True, **VIEW_TOOLS,
                xlabel=view.xlabel, ylabel=view.ylabel, invert_yaxis=True, framewise=True,
                shared_axes=False)  # its axes count rows and columns: never the x of a curve beside it
    if view.symmetric:
        vmax = float(np.nanmax(np.abs(m))) if m.size else 1.0
        opts.update(cmap=DIVERGING, clim=(-(vmax or 1.0), vmax or 1.0))
    else:
        finite = m[np.isfinite(m)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        opts.update(cmap=SEQUENTIAL, clim=(lo, hi if hi > lo else lo + 1e-12))
    return hv.Image(m[::-1], bounds=(0, 0, m.shape[1], m.shape[0]), vdims=["value"]).opts(**opts)


def render_field(view: dg.Field2D, scale: float = 1.0):
    """The function over the plane as an image with a colour bar, its decision contour, and the points by label;
    `scale` > 1 draws the frame that much larger (presenter mode: a two-moons lesson's key view)."""
    x, y, v = (np.asarray(a, dtype=np.float64) for a in (view.x, view.y, view.values))
    dx, dy = (x[1] - x[0]) / 2 if len(x) > 1 else 0.5, (y[1] - y[0]) / 2 if len(y) > 1 else 0.5
    across, up = getattr(view, "axis_names", None) or ("x₁", "x₂")  # a table's input columns, when it names them
    img = hv.Image(v[::-1], bounds=(x[0] - dx, y[0] - dy, x[-1] + dx, y[-1] + dy), kdims=[across, up],
                   vdims=["value"]).opts(
        cmap=DIVERGING if view.contour is not None else SEQUENTIAL, colorbar=True,
        frame_width=round((FRAME_WIDTH - 40) * scale), frame_height=round(FRAME_HEIGHT * scale), **VIEW_TOOLS,
        framewise=True)
    layers = img
    if view.contour is not None:
        layers = layers * hv.operation.contours(img, levels=[view.contour]).opts(color="black", line_width=2)
    if view.points is not None and len(view.points):
        pts = pd.DataFrame({across: view.points[:, 0], up: view.points[:, 1],
                            "label": (np.asarray(view.point_labels) if view.point_labels is not None
                                      else np.zeros(len(view.points))).astype(str)})
        layers = layers * hv.Points(pts, [across, up], ["label"]).opts(
            color="label", cmap="Category10", size=5, line_color="white", show_legend=False, framewise=True)
    return layers
