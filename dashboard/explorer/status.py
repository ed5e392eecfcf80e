"""StatusBar: what the run is doing, in three lines of fixed height, driven by params.

The first line says where the run is (state, what is trained, step N of M, time left), the second the figures
(step rate, device, learning rate, jitter, condition number), the third the message of the moment. Each line keeps
its height whatever it holds (a longer text is cut with an ellipsis and shown whole on hover), so the plots below
never move. Commands set it at once (a click shows its effect before the training thread has acted); the live feed
fills in the figures as snapshots arrive. Each cell carries a `data-field` attribute, so tests and benchmarks read
what a person reads.
"""
from __future__ import annotations

import math

import panel as pn
import param

from invlab.dashboard.explorer.pace import StepPace
from invlab.dashboard.safe_text import html_text
from invlab.dashboard.state_words import TONE_COLOURS, shown
from invlab.train.states import PageState

# a state's word takes its tone's colour (dashboard/state_words.py); the message below it, its own tone's
MESSAGE_COLOURS = {"info": "#444", "warning": "#8a5a00", "error": "#c0392b"}


LINE = "white-space:nowrap;overflow:hidden;text-overflow:ellipsis;height:1.45em;line-height:1.45em"

MESSAGE = "white-space:normal;overflow-y:auto;height:2.9em;line-height:1.45em"  # two lines; a longer message scrolls
# a narrow line (presenter mode's larger text): two rows of fixed height, wrapping between cells, never inside one
WRAPPED = "white-space:normal;overflow:hidden;height:2.9em;line-height:1.45em"


def time_left(seconds: float | None) -> str:
    """A duration in words for the status line: '45 s', '3 min 20 s', '2 h 5 min'; '–' when unknown."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "–"
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _fmt(x, spec: str) -> str:
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


class StatusBar(pn.viewable.Viewer):
    """The status line: what the run is doing (state, run, step, steps per second, device) and, when something went
    wrong, the message and hint, as escaped HTML."""
    state = param.String(default=PageState.IDLE, doc="A PageState: idle, building, queued, running, paused, finished, "
                         "converged, or a health verdict (collapsed, stalled, diverging), or failed.")
    run = param.String(default="", doc="What is being trained, e.g. 'invariant on digits'.")
    step = param.Integer(default=0, doc="Optimiser steps taken by the run shown.")
    total = param.Integer(default=0, doc="The run's configured number of steps (0: not known).")
    steps_per_sec = param.Number(default=float("nan"), allow_None=True)
    device = param.String(default="–")
    dtype = param.String(default="–")
    learning_rate = param.Number(default=float("nan"), allow_None=True)
    jitter = param.Number(default=float("nan"), allow_None=True)
    condition = param.Number(default=float("nan"), allow_None=True)
    condition_of = param.String(default="K_uu")
    message = param.String(default="", doc="The hint, warning or error of the moment, in words.")
    tone = param.Selector(default="info", objects=list(MESSAGE_COLOURS))
    wrap = param.Boolean(default=False, doc="Each line on two rows, wrapping between its cells (larger text on a "
                                            "narrow column: presenter mode), instead of one row cut with an ellipsis.")

    def __init__(self, **params):
        self._pace = StepPace()  # the time left follows the run's smoothed pace (`pace`), not each snapshot's rate
        super().__init__(**params)
        self.pane = pn.pane.HTML(self.html(), sizing_mode="stretch_width", name="status", margin=(4, 10))
        self.param.watch(self._follow_pace, ["step", "steps_per_sec"])
        self.param.watch(self._render, [p for p in self.param if p != "name"])

    def _follow_pace(self, *_):
        if not self._pace.at(self.step):  # a step back is another run: the rate still shown was the last run's
            self._pace.add(self.steps_per_sec)

    def _render(self, *_):
        self.pane.object = self.html()

    def seconds_left(self) -> float | None:
        """Seconds until the run reaches its total at its smoothed step rate (`pace`); None unless it is training."""
        rate = self._pace.steps_per_sec() or self.steps_per_sec
        if self.state != PageState.RUNNING or not self.total or rate is None or not math.isfinite(rate) or rate <= 0:
            return None
        return max(self.total - self.step, 0) / rate

    def html(self) -> str:
        """The status line as HTML (every value escaped)."""
        state = shown(self.state, PageState)
        colour = TONE_COLOURS[state.tone]
        running = self.state == PageState.RUNNING
        total = f' of <span data-field="total">{self.total}</span>' if self.total else ""
        where = [
            f'<b style="color:{colour}" data-field="state">{html_text(state.word)}</b>',
            f'<span data-field="run">{html_text(self.run)}</span>' if self.run else "",
            f'step <b data-field="step">{self.step}</b>{total}',
            f'<span data-field="left">{time_left(self.seconds_left())}</span> left',
        ]
        figures = [
            f'<span data-field="rate">{_fmt(self.steps_per_sec if running else float("nan"), ".1f")}</span> steps/s',
            f'{html_text(self.device)} · {html_text(self.dtype)}',
            f'lr <span data-field="lr">{_fmt(self.learning_rate, "g")}</span>',
            f'jitter <span data-field="jitter">{_fmt(self.jitter, ".1e")}</span>',
            f'cond({html_text(self.condition_of)}) <span data-field="condition">{_fmt(self.condition, ".2e")}</span>',
        ]
        sep, line = " &nbsp;|&nbsp; ", LINE
        if self.wrap:  # a cell never breaks inside; the separator may end a row
            sep, line = " &nbsp;| ", WRAPPED
            where, figures = ([f'<span style="white-space:nowrap">{c}</span>' for c in cells if c]
                              for cells in (where, figures))
        message = html_text(self.message)
        return (f'<div class="invlab-status" style="font-family:monospace;font-size:var(--invlab-status-size, 13px)">'
                f'<div style="{line}">{sep.join(c for c in where if c)}</div>'
                f'<div style="{line}">{sep.join(figures)}</div>'
                f'<div data-field="message" data-tone="{self.tone}" title="{message}" '
                f'style="{MESSAGE};color:{MESSAGE_COLOURS[self.tone]}">{message}</div></div>')

    def __panel__(self):
        return self.pane
