"""The deep-kernel-process prior explorer (paper 004, app. H and J) as a dashboard tab.

Sliders for δ, α and the layer count (and the process, width, kernel and seed) drive the engine's
`PriorExplorer`; its typed views — eigenvalue histograms of Wishart, residual Wishart and inverse Wishart
samples, prior functions of one- and multi-layer processes, a top-layer Gram sample — are drawn by the
same renderers as the training views. Nothing is computed until the tab is first shown.
"""
from __future__ import annotations

import panel as pn
import param
from panel.io import hold

from engine.models.dkp import PriorExplorer

from .safe_text import markdown_text
from .views import ViewPane

CONTROLS = ("delta", "alpha", "num_layers", "process", "width", "kernel", "lengthscale", "num_panels", "seed")
# δ spans three decades: a log slider over round values (1–2–3–5–7 per decade)
DELTA_STEPS = [0.5, 0.7] + [m * 10.0 ** e for e in range(0, 3) for m in (1, 1.5, 2, 3, 5, 7)] + [1000.0]


class PriorPanel(pn.viewable.Viewer):
    """Controls of a `PriorExplorer` beside its views, redrawn whenever a control is released."""

    error = param.String(default="", doc="Why the last redraw failed (empty when it worked).")

    def __init__(self, explorer: PriorExplorer | None = None, **params):
        super().__init__(**params)
        self.explorer = explorer or PriorExplorer()
        self.panes: dict[str, ViewPane] = {}
        self.views_area = pn.FlexBox(sizing_mode="stretch_width")  # a grid over the page's width
        self.alert = pn.pane.Alert("", alert_type="danger", visible=False)
        # the open lesson's title and steps, as on the Training page (set by the page; hidden without a lesson)
        self.banner = pn.pane.Alert("", alert_type="info", visible=False, sizing_mode="stretch_width",
                                    css_classes=["invlab-lesson-banner"])
        self.redraws = 0
        self._active = False
        widgets = {
            "delta": {"type": pn.widgets.DiscreteSlider, "options": _with(DELTA_STEPS, self.explorer.delta),
                      "name": "δ (log scale)", "throttled": True},
            "alpha": {"type": pn.widgets.FloatSlider, "start": 0.0, "end": 5.0, "step": 0.05, "throttled": True},
            "num_layers": {"type": pn.widgets.IntSlider, "throttled": True},
            "width": {"type": pn.widgets.IntSlider, "start": 1, "end": 100, "throttled": True},
            "lengthscale": {"type": pn.widgets.FloatSlider, "start": 0.1, "end": 5.0, "step": 0.05, "throttled": True},
            "num_panels": {"type": pn.widgets.IntSlider, "start": 1, "end": 4, "throttled": True},
        }
        widgets["seed"] = {"type": pn.widgets.IntInput}  # a seed is a label, not a quantity: typed, not slid
        self.controls = pn.Param(self.explorer, parameters=list(CONTROLS), widgets=widgets, show_name=False, width=300)
        self.explorer.param.watch(self._on_change, list(CONTROLS))

    def activate(self) -> None:
        """Draw for the first time (called when the tab is shown)."""
        if not self._active:
            self._active = True
            self.redraw()

    def _on_change(self, *events) -> None:
        if self._active:
            self.redraw()

    def redraw(self) -> None:
        """Recompute every view; a failure is shown beside the controls and the previous pictures stay."""
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
                    pane = self.panes[name] = ViewPane(name, view)
                    self.views_area.append(pane.panel)
                elif pane.pipe.data is not view:  # unchanged panels (the explorer returns the same view) stay as drawn
                    pane.update(view)
        self.redraws += 1

    def __panel__(self):
        intro = pn.pane.Markdown(
            "**Deep kernel process priors** (Aitchison et al. 2021). Eigenvalues of one sample each of a Wishart "
            "W(I/N, N), a residual Wishart with identity weight α and an inverse Wishart IW(δI, δ + N + 1), all with "
            "mean I; then functions drawn from one- and multi-layer processes on 1-D inputs (the panels share the "
            "first layer). Large δ approaches the deterministic NNGP; small δ makes every layer more random.",
            max_width=900)
        return pn.Row(pn.Column(self.controls, self.alert, width=320),
                      pn.Column(self.banner, intro, self.views_area, sizing_mode="stretch_width"),
                      sizing_mode="stretch_width", name="Deep kernel prior")


def _with(steps: list[float], value: float) -> list[float]:
    """The slider's values, with the explorer's current one among them."""
    return sorted(set(steps) | {float(value)})
