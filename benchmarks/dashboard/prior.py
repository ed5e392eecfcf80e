"""How long the deep kernel prior page takes to redraw after a δ move, side by side with the old way of drawing it.

The page's `PriorPanel` is built on a Bokeh document (as a served page has it), shown once, then δ is moved along
its slider's values, each move a release of the slider; a redraw's time runs from the move to the end of the
updates of every plot it changed (the views computed by the engine's `PriorExplorer` and written into the
document's models). Two arms, interleaved move by move on the same δ sequence:

- `plots`: the page as it is: Bokeh figures made once, their sources replaced in place (`invlab.dashboard.prior.plots`);
- `holoviews`: the page as it was: each view re-rendered through HoloViews (`invlab.dashboard.views.panes.ViewPane`).

Server time only: the browser's own drawing comes on top (the latency benchmark measures click → effect in
Chromium). The figure of merit is `p95_ms`, the p95 of the `plots` arm (target < 1,000 ms on 2 cores);
`ratio_p95_old_over_new` compares the arms.

    python -m benchmarks.dashboard.prior [--quick | --smoke] [--moves N]

The last line printed is one JSON object.
"""
from __future__ import annotations

import contextlib
import os
import time

from ..common import arguments, emit, parse
from .latency import percentile

DELTAS = (1.0, 1000.0, 5.0, 200.0, 0.5, 50.0, 2.0, 700.0, 10.0, 100.0)


class OldPane:
    """The prior page's former pane: a HoloViews `ViewPane`, with the `view` the page reads."""

    def __init__(self, name, view):
        from invlab.dashboard.views.panes import ViewPane

        self._pane = ViewPane(name, view)
        self.panel = self._pane.panel

    @property
    def view(self):
        return self._pane.pipe.data

    def update(self, view) -> None:
        self._pane.update(view)


@contextlib.contextmanager
def drawn_with(kind: str):
    """Build PriorPanels whose plots are `kind` ('plots' or 'holoviews')."""
    import invlab.dashboard.prior.page as page

    real = page.PriorPlot
    if kind == "holoviews":
        page.PriorPlot = OldPane
    try:
        yield page.PriorPanel
    finally:
        page.PriorPlot = real


def build(kind: str, size: int):
    from bokeh.document import Document

    from invlab.models.dkp import PriorExplorer

    with drawn_with(kind) as PriorPanel:
        panel = PriorPanel(PriorExplorer(size=size))
        panel.__panel__().get_root(Document())
        t = time.perf_counter()
        panel.activate()
        return panel, 1000 * (time.perf_counter() - t)


def move(panel, kind: str, delta: float) -> float:
    with drawn_with(kind):
        t = time.perf_counter()
        panel.explorer.delta = delta
        return 1000 * (time.perf_counter() - t)


def main(argv=None) -> dict:
    parser = arguments(__doc__, quick="5 moves per arm")
    parser.add_argument("--moves", type=int, default=None, help="δ moves per arm (default 20)")
    args = parse(parser, argv)
    moves = args.moves or (2 if args.smoke else 5 if args.quick else 20)
    size = 100 if args.smoke else 400  # the page's matrix size N (400) unless smoking
    load_before = os.getloadavg()[0]
    arms = ("plots", "holoviews")
    panels, first = {}, {}
    for kind in arms:
        panels[kind], first[kind] = build(kind, size)
    times = {kind: [] for kind in arms}
    for k in range(moves):
        delta = DELTAS[k % len(DELTAS)]
        for kind in arms:
            times[kind].append(move(panels[kind], kind, delta))
        print(f"δ = {delta:g}: " + ", ".join(f"{kind} {times[kind][-1]:.0f} ms" for kind in arms), flush=True)
    p95 = {kind: percentile(times[kind], 0.95) for kind in arms}
    result = {
        "benchmark": "dashboard_prior",
        "p95_ms": round(p95["plots"], 1),
        "p50_ms": round(percentile(times["plots"], 0.5), 1),
        "p95_ms_holoviews": round(p95["holoviews"], 1),
        "p50_ms_holoviews": round(percentile(times["holoviews"], 0.5), 1),
        "ratio_p95_old_over_new": round(p95["holoviews"] / p95["plots"], 2) if p95["plots"] else None,
        "first_draw_ms": {kind: round(v, 1) for kind, v in first.items()},
        "moves": moves,
        "size": size,
        "target_ms": 1000,
    }
    return emit(result, load_before=load_before)


if __name__ == "__main__":
    main()
