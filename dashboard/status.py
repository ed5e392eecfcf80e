"""StatusBar: what the run is doing, in one line of the page, driven by params.

Commands set it at once (a click shows its effect before the training thread has acted); the live feed
fills in the figures (step rate, jitter, condition number) as snapshots arrive. Each cell carries a
`data-field` attribute, so tests and benchmarks read what a person reads.
"""
from __future__ import annotations

import math

import panel as pn
import param

from .safe_text import html_text

STATE_COLOURS = {"idle": "#666", "building": "#9a6a00", "queued": "#9a6a00", "running": "#23843a",
                 "pausing…": "#1f6fb5", "paused": "#1f6fb5", "finished": "#23843a", "converged": "#23843a",
                 "stalled": "#9a6a00", "diverging": "#c0392b", "collapsed": "#c0392b", "failed": "#c0392b"}
TONE_COLOURS = {"info": "#444", "warning": "#8a5a00", "error": "#c0392b"}


def _fmt(x, spec: str) -> str:
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


class StatusBar(pn.viewable.Viewer):
    """The status line: what the run is doing (state, run, step, steps per second, device) and, when something went
    wrong, the message and hint, as escaped HTML."""
    state = param.String(default="idle", doc="idle, building, queued, running, paused, finished, converged, or a "
                                             "health verdict (collapsed, stalled, diverging), or failed.")
    run = param.String(default="", doc="What is being trained, e.g. 'invariant on digits'.")
    step = param.Integer(default=0)
    steps_per_sec = param.Number(default=float("nan"), allow_None=True)
    device = param.String(default="–")
    dtype = param.String(default="–")
    learning_rate = param.Number(default=float("nan"), allow_None=True)
    jitter = param.Number(default=float("nan"), allow_None=True)
    condition = param.Number(default=float("nan"), allow_None=True)
    condition_of = param.String(default="K_uu")
    message = param.String(default="", doc="The hint, warning or error of the moment, in words.")
    tone = param.Selector(default="info", objects=list(TONE_COLOURS))

    def __init__(self, **params):
        super().__init__(**params)
        self.pane = pn.pane.HTML(self.html(), sizing_mode="stretch_width", name="status", margin=(4, 10))
        self.param.watch(self._render, [p for p in self.param if p != "name"])

    def _render(self, *_):
        self.pane.object = self.html()

    def html(self) -> str:
        """The status line as HTML (every value escaped)."""
        colour = STATE_COLOURS.get(self.state, "#666")
        running = self.state == "running"
        cells = [
            f'<b style="color:{colour}" data-field="state">{html_text(self.state)}</b>',
            f'<span data-field="run">{html_text(self.run)}</span>' if self.run else "",
            f'step <b data-field="step">{self.step}</b>',
            f'<span data-field="rate">{_fmt(self.steps_per_sec if running else float("nan"), ".1f")}</span> steps/s',
            f'{html_text(self.device)} · {html_text(self.dtype)}',
            f'lr <span data-field="lr">{_fmt(self.learning_rate, "g")}</span>',
            f'jitter <span data-field="jitter">{_fmt(self.jitter, ".1e")}</span>',
            f'cond({html_text(self.condition_of)}) <span data-field="condition">{_fmt(self.condition, ".2e")}</span>',
        ]
        html = " &nbsp;|&nbsp; ".join(c for c in cells if c)
        if self.message:
            html += (f'<div data-field="message" data-tone="{self.tone}" style="color:{TONE_COLOURS[self.tone]};'
                     f'margin-top:4px;white-space:normal">{html_text(self.message)}</div>')
        else:
            html += '<div data-field="message" data-tone="info"></div>'
        return f'<div class="invlab-status" style="font-family:monospace;font-size:13px">{html}</div>'

    def __panel__(self):
        return self.pane
