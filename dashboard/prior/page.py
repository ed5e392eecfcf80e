"""The deep-kernel-process prior explorer (Aitchison, Yang & Ober 2021, app. H and J) as a dashboard tab.

Sliders for δ, α and the layer count (and the process, width, kernel and seed) drive the engine's
`PriorExplorer`; its typed views — eigenvalue histograms of Wishart, residual Wishart and inverse Wishart
samples, prior functions of one- and multi-layer processes, a top-layer Gram sample — are drawn by the
Bokeh plots made once and updated in place (`prior_plots`). Nothing is computed until the tab is first shown.

A released slider shows a spinner and "drawing…" at once; the redraw follows on the server's next tick (so that the
spinner reaches the browser first), and moves made meanwhile are drawn together. δ, α and the layer count live in
the page's URL as `prior.delta`, `prior.alpha`, `prior.num_layers` (and the other controls), only where they differ
from the defaults; a link's values are checked like every other setting (`apply_prior_query`).
"""
from __future__ import annotations

import panel as pn
import param
from panel.io import hold

from invlab.dashboard.controls.param_control import ParamControl
from invlab.dashboard.prior.plots import PriorPlot
from invlab.dashboard.safe_text import markdown_text
from invlab.dashboard.state.settings import coerce
from invlab.errors import InvlabError
from invlab.ids import shorten
from invlab.models.dkp import PriorExplorer

ALPHA_LABEL = "α (identity weight)"  # the lessons and the engine say α; the slider says it too
CONTROLS = ("delta", "alpha", "num_layers", "process", "width", "kernel", "lengthscale", "num_panels", "seed")
# δ spans four decades (its soft bounds 0.1..1000): a log slider with ten even stops a decade (1, 1.3, 1.6, 2, 2.5,
# 3.2, 4, 5, 6.3, 7.9, 10…) beside a box that takes an exact δ, as the Training page's scales have
DELTA_LABEL, DELTA_STOP = "δ (log scale)", 0.1  # the stop in decades
URL_KEYS = CONTROLS  # what a link carries, as prior.<name>: δ, α, the layers and the other controls
PREFIX = "prior."
PRESENTER_ZOOM = 1.35  # presenter mode's controls, as on the Training page (explorer.layout.PRESENTER_ZOOM)
INTRO = ("**Deep kernel process priors** (Aitchison et al. 2021). Eigenvalues of one sample each of a Wishart "
         "W(I/N, N), a residual Wishart with identity weight α and an inverse Wishart IW(δI, δ + N + 1), all with "
         "mean I; then functions drawn from one- and multi-layer processes on 1-D inputs (the panels share the "
         "first layer). Large δ approaches the deterministic NNGP; small δ makes every layer more random.")
# A spinner drawn by CSS before the words (an emoji such as ⏳ is an empty box on a browser without an emoji font)
BUSY_HTML = '<span class="invlab-busy"><span class="invlab-spin"></span> drawing…</span>'
BUSY_CSS = """
.invlab-busy { font-size: 13px; opacity: 0.75; }
.invlab-spin { display: inline-block; width: 0.8em; height: 0.8em; vertical-align: -0.1em; border-radius: 50%;
               border: 2px solid currentColor; border-right-color: transparent;
               animation: invlab-spin 0.8s linear infinite; }
@keyframes invlab-spin { to { transform: rotate(360deg); } }
"""


class PriorControls(pn.Column):
    """The page's controls: δ's slider and exact box (a `ParamControl`) above the other sliders and boxes (a
    `pn.Param`). `_widgets` names each by its setting, as `pn.Param` does: teacher mode hides by these names."""

    def __init__(self, delta: ParamControl, others: pn.Param):
        super().__init__(pn.Column(delta, margin=(0, 10)), others, margin=0)  # δ's box in line with the others
        self.delta, self.others = delta, others

    @property
    def _widgets(self) -> dict:
        return {"delta": self.delta, **self.others._widgets}


class PriorPanel(pn.viewable.Viewer):
    """Controls of a `PriorExplorer` beside its views, redrawn whenever a control is released."""

    error = param.String(default="", doc="Why the last redraw failed (empty when it worked).")
    busy = param.Boolean(default=False, doc="A redraw is asked for or under way (the page shows a spinner).")

    def __init__(self, explorer: PriorExplorer | None = None, **params):
        super().__init__(**params)
        self.explorer = explorer or PriorExplorer()
        self.panes: dict[str, PriorPlot] = {}
        self.views_area = pn.FlexBox(sizing_mode="stretch_width")  # a grid over the page's width
        self.alert = pn.pane.Alert("", alert_type="danger", visible=False)
        # a plain "drawing…" line: Panel's LoadingSpinner loads its stylesheet from a CDN, which an offline class lacks
        self.spinner = pn.pane.HTML(BUSY_HTML, stylesheets=[BUSY_CSS], visible=False, margin=(0, 10))
        # the open lesson's title and steps, as on the Training page (set by the page; hidden without a lesson)
        self.banner = pn.pane.Alert("", alert_type="info", visible=False, sizing_mode="stretch_width",
                                    css_classes=["invlab-lesson-banner"])
        self.redraws = 0
        self._active = False
        self._pending = False  # a redraw is scheduled on the server's next tick
        self.delta_control = ParamControl(self.explorer, "delta", label=DELTA_LABEL, log_step=DELTA_STOP)
        widgets = {
            "alpha": {"type": pn.widgets.FloatSlider, "start": 0.0, "end": 5.0, "step": 0.05, "throttled": True,
                      "name": ALPHA_LABEL},
            "num_layers": {"type": pn.widgets.IntSlider, "throttled": True},
            "width": {"type": pn.widgets.IntSlider, "start": 1, "end": 100, "throttled": True},
            "lengthscale": {"type": pn.widgets.FloatSlider, "start": 0.1, "end": 5.0, "step": 0.05, "throttled": True},
            "num_panels": {"type": pn.widgets.IntSlider, "start": 1, "end": 4, "throttled": True},
        }
        widgets["seed"] = {"type": pn.widgets.IntInput}  # a seed is a label, not a quantity: typed, not slid
        others = pn.Param(self.explorer, parameters=[c for c in CONTROLS if c != "delta"], widgets=widgets,
                          show_name=False, width=300)
        self.controls = PriorControls(self.delta_control, others)
        self.controls_column = pn.Column(self.controls, self.spinner, self.alert, width=320)
        self.intro = pn.pane.Markdown(INTRO, max_width=900)
        self.explorer.param.watch(self._on_change, list(CONTROLS))

    def activate(self) -> None:
        """Draw for the first time (called when the tab is shown)."""
        if not self._active:
            self._active = True
            self.redraw()

    @param.depends("busy", watch=True)
    def _show_busy(self) -> None:
        self.spinner.visible = self.busy

    def _on_change(self, *events) -> None:
        if not self._active:
            return
        doc = pn.state.curdoc
        if doc is None or doc.session_context is None:  # a notebook cell or a test: draw now
            self.redraw()
            return
        self.busy = True  # sent to the browser before the redraw starts
        if not self._pending:
            self._pending = True
            doc.add_next_tick_callback(self._redraw_scheduled)

    def _redraw_scheduled(self) -> None:
        self._pending = False
        self.redraw()

    def redraw(self) -> None:
        """Recompute every view; a failure is shown beside the controls and the previous pictures stay."""
        self.busy = True
        try:
            self._redraw()
        finally:
            self.busy = False

    def _redraw(self) -> None:
        try:
            views = self.explorer.views()
        except Exception as err:  # noqa: BLE001 — a slider must never take the dashboard down
            self.error = f"{type(err).__name__}: {err}"
            self.alert.object = f"Could not draw the prior with these settings: {markdown_text(self.error)}"
            self.alert.visible = True
            return
        self.error, self.alert.visible = "", False
        with hold():  # one message to the browser for all the panes a move changed
            for name in [k for k in self.panes if k not in views]:  # fewer panels than before
                self.views_area.remove(self.panes.pop(name).panel)
            for name, view in views.items():
                pane = self.panes.get(name)
                if pane is None:
                    pane = self.panes[name] = PriorPlot(name, view)
                    self.views_area.append(pane.panel)
                elif pane.view is not view:  # unchanged panels (the explorer returns the same view) stay as drawn
                    pane.update(view)
        self.redraws += 1

    def __panel__(self):
        return pn.Row(self.controls_column,
                      pn.Column(self.banner, self.intro, self.views_area, sizing_mode="stretch_width"),
                      sizing_mode="stretch_width", name="Deep kernel prior")

    def enlarge(self, on: bool) -> None:
        """Presenter mode on or off: the controls, the banner and the introduction drawn larger (a CSS zoom, as the
        Training page's controls; never around a plot) or at their own size."""
        for part in (self.controls_column, self.banner, self.intro):
            part.styles = {**(part.styles or {}), "zoom": str(PRESENTER_ZOOM) if on else "1"}


def touches_prior(lesson) -> bool:
    """Whether `lesson` (a `Lesson`) belongs on the prior page: it opens there or one of its steps sets a prior
    slider. Another lesson's banner there would only say what to do on another page."""
    return lesson.page == "prior" or any(str(step.control).startswith(PREFIX) for step in lesson.steps)


def prior_query(explorer: PriorExplorer) -> dict[str, str]:
    """The URL keys (`prior.delta`, …) of the sliders that differ from their defaults, as text."""
    out = {}
    for name in URL_KEYS:
        value = getattr(explorer, name)
        if value != explorer.param[name].default:
            out[PREFIX + name] = f"{value:g}" if isinstance(value, float) else str(value)
    return out


def apply_prior_query(explorer: PriorExplorer, values: dict) -> list[str]:
    """Set the explorer from a link's `prior.<name>` values (`values` keyed by name, text or numbers); returns one
    message per value refused (an unknown name, not a number, out of bounds), naming it as written."""
    problems, accepted = [], {}
    scratch = type(explorer)()  # each value is tried here first, so the explorer redraws once, with the good ones
    for name, raw in values.items():
        key = PREFIX + str(name)
        if name not in URL_KEYS:
            problems.append(f"{shorten(repr(key))}: not a prior setting (use prior. and one of "
                            f"{', '.join(URL_KEYS)})")
            continue
        p = explorer.param[name]
        try:
            value = coerce(p, raw, key)
            setattr(scratch, name, value)
        except (InvlabError, ValueError, TypeError) as err:
            problems.append(f"{key}={shorten(repr(raw))} refused: {shorten(str(err))}")
            continue
        accepted[name] = value
    if accepted:
        explorer.param.update(**accepted)
    return problems

