"""How every plot of the page looks and what its numbers are called: sizes, the one table of metric labels and
units (`METRICS`, `metric_label`), y ranges with a minimum span, and legends beside the data.

What every plot promises (issue 11, "readable views"): labels in words with units, taken from one table; errors in
percent; axes that follow the data on every update (framewise) with a minimum y-span, so a flat curve is not
magnified into floating-point noise; legends beside the data, never over it; titles above the plot as wrapping
text (never clipped); tables sized to their rows; signed maps in a diverging colour map centred at zero, with a
colour bar.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401 — registers Bokeh's plots and options
import numpy as np

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

