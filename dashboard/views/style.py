"""How every plot of the page looks and what its numbers are called: sizes, the one table of metric labels and
units (`METRICS`, `metric_label`; a family's own terms and ranges from its registry entry), y ranges with a minimum
span, and legends beside the data.

What every plot promises (issue 11, "readable views"): labels in words with units, taken from one table; errors in
percent; axes that follow the data on every update (framewise) with a minimum y-span, so a flat curve is not
magnified into floating-point noise; legends beside the data, never over it; titles above the plot as wrapping
text (never clipped); tables sized to their rows; signed maps in a diverging colour map centred at zero, with a
colour bar.
"""
from __future__ import annotations

import textwrap
from collections.abc import Mapping

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401 — registers Bokeh's plots and options
import numpy as np

from invlab.models import REGISTRY
from invlab.models.registry import metric_words, range_words
from invlab.models.words import MetricWords

# Importing the backend marks it current but leaves `hv.opts.Curve` & co. unbuilt until a backend is *set*, which
# `hv.extension` does; a script or notebook that never calls it (pn.serve, a bare `Explorer()`) would otherwise get
# "No entry for 'Curve' registered" from every renderer below.
hv.Store.set_current_backend("bokeh")


def draw_on_canvas() -> None:
    """Have HoloViews draw this process's plots on a 2-D canvas instead of WebGL (its default), for the served page.

    The page's plots are small (curves of at most a few thousand points, images of patches), which a canvas draws
    at once; WebGL is emulated on the CPU wherever the browser has no GPU (a classroom's virtual machines, remote
    desktops, a headless browser), and each frame is then copied onto the page: about 1.5 s of the browser's CPU in
    opening a stored sweep, and a few percent of the page's training speed on a 2-core machine where the browser shares
    the cores with training (benchmarks/dashboard/README.md). Not done on import: a notebook's own HoloViews plots
    keep the user's settings."""
    hv.plotting.bokeh.BokehRenderer.webgl = False

WIDTH, HEIGHT = 420, 300  # outer size of a plot without a legend
FRAME_WIDTH, FRAME_HEIGHT = 280, 200  # the data area: fixed, so a legend or colour bar adds width instead of eating it
# What a view's plot does with the pointer: hover reads values; the mouse wheel scrolls the page, never zooms a plot
# (HoloViews activates wheel zoom by default); zoom is one toolbar click away where there is a toolbar.
VIEW_TOOLS = {"tools": ["hover"], "active_tools": ["pan"]}
LEGEND_CHARS = 24  # a legend label wraps at this many characters (run labels say what differs between runs)
TITLE_STYLE = {"font-weight": "bold", "font-size": "1.0em", "margin-bottom": "0"}
DIVERGING, SEQUENTIAL, GREY = "RdBu_r", "viridis", "Greys_r"


# -- what the numbers are: one table of labels and units ----------------------------------------------------------
# How the page shows one logged quantity: its label with units, title, scale to shown units, least y-span, and whether
# it gets a curve of its own. A family's loss terms and learned ranges are worded in its registry entry
# (`ModelSpec.metrics`, `ModelSpec.ranges`); this table holds what the trainer itself logs for every family.
Metric = MetricWords

METRICS: dict[str, Metric] = {
    "loss": Metric("training loss", "Training loss"),
    "test_error": Metric("test error (%)", "Test error", scale=100.0, min_span=1.0),
    "test_nlpd": Metric("test NLPD (nats per point)", "Test negative log predictive density"),
    "test_rmse": Metric("test RMSE (target units)", "Test root-mean-square error"),
}


class RangeUnits(Mapping):
    """learned range name → its unit's symbol ("rotation" → "°"), from the registered families' entries
    (`ModelSpec.ranges`); only the ranges that have a unit symbol are listed."""

    def _table(self) -> dict[str, str]:
        return {k: w.unit for spec in REGISTRY.values() for k, w in spec.ranges.items() if w.unit}

    def __getitem__(self, name: str) -> str:
        return self._table()[name]

    def __iter__(self):
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())


RANGE_UNITS = RangeUnits()


def metric_spec(name: str) -> Metric:
    """How the page shows metric `name`: the row of METRICS, else the words a registered family's entry gives it (its
    loss terms; `range.<name>` for its learned ranges); names neither knows get a readable label made from the name
    itself."""
    if name in METRICS:
        return METRICS[name]
    family = metric_words(name)
    if family is not None:
        return family
    if name.startswith("range."):  # learned augmentation ranges: the model's own view shows their history
        key = name[len("range."):]  # "rotation", or "shear.lo" for one end of a two-sided range
        words = range_words(key)
        head, _, end = key.partition(".")
        what = (head.replace("_", " ") if words is None else words.label) + (f" {end}" if end else "")
        unit = words.unit if words is not None else ""
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
    """Fractions as percentages (float64 array)."""
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

