"""The live curves are streamed: a run's plots exist before its first step, a send carries only its new points
(bytes that do not grow with the run's length), and the previous runs are drawn once per Reset."""
import numpy as np
from bokeh.document import Document
from bokeh.document.events import ColumnDataChangedEvent, ColumnsStreamedEvent, ModelChangedEvent
from panel.io.model import diff

from invlab.dashboard import Explorer
from invlab.dashboard.views.curve_plot import CurvePlot
from invlab.dashboard.views.panes import CurveBoard
from invlab.train import RunConfig, RunStore


def _attached(board: CurveBoard, *metrics) -> Document:
    doc = Document()
    board.prepare(metrics)
    doc.add_root(board.layout.get_root(doc))
    doc.add_root(board.extra_layout.get_root(doc))
    doc.hold("collect")
    return doc


def _sent(doc: Document):
    """The events of what changed since the last call, and the bytes the page would receive for them."""
    events = list(doc.callbacks._held_events)
    msg = diff(doc, binary=True)
    size = 0 if msg is None else (len(msg.content_json) + sum(len(b.to_bytes()) for b in msg.buffers))
    return events, size


def test_a_send_carries_only_its_new_points_whatever_the_run_length():
    board = CurveBoard(length=50_000)
    doc = _attached(board, "elbo", "test_error")
    board.send("elbo", np.arange(1, 101), np.linspace(-500, -100, 100))
    _sent(doc)
    board.send("elbo", np.arange(101, 111), np.linspace(-99, -90, 10))
    short_events, short = _sent(doc)
    board.send("elbo", np.arange(111, 30_111), np.linspace(-90, -10, 30_000))
    _sent(doc)
    board.send("elbo", np.arange(30_111, 30_121), np.linspace(-9, 0, 10))
    long_events, long = _sent(doc)
    for events in (short_events, long_events):  # appended, never re-sent whole nor re-rendered
        assert {type(e) for e in events} <= {ColumnsStreamedEvent, ModelChangedEvent}
        assert not [e for e in events if isinstance(e, ColumnDataChangedEvent)]
        assert all(e.attr in ("start", "end") for e in events if isinstance(e, ModelChangedEvent))
    assert 0 < long <= 1.2 * short, (short, long)  # a send after 30,000 points costs what one after 100 does
    assert len(board.buffers["elbo"].data) == 30_120


def test_previous_runs_are_drawn_once_per_reset_and_not_with_each_send():
    board = CurveBoard()
    doc = _attached(board, "elbo")
    board.send("elbo", [1, 2, 3], [-10.0, -8.0, -7.0])
    board.archive("lr 0.1")
    events, _ = _sent(doc)
    previous = board.curve_plots["elbo"].previous_sources[0]
    assert list(previous.data["step"]) == [1, 2, 3]
    assert any(getattr(e, "model", None) is previous for e in events)  # drawn at the Reset ...
    board.send("elbo", [1, 2], [-9.0, -6.0])
    events, _ = _sent(doc)
    assert not any(getattr(e, "model", None) is previous for e in events)  # ... and never again per send
    assert list(board.curve_plots["elbo"].source.data["step"]) == [1, 2]


def _glyph_lines(plot: CurvePlot) -> list:
    return [r for r in plot.figure.renderers if r.glyph is not None and type(r.glyph).__name__ == "Line"]


def test_a_first_run_draws_only_its_own_line_and_each_reset_adds_the_line_it_needs():
    """The browser restyles every renderer of a plot, hidden ones too, each time a send repaints it: a first run's
    plot holds this run's line and points alone, a Reset adds one line per archived run (at most PREVIOUS_RUNS,
    drawn under this run's), and the raw line comes with smoothing."""
    from invlab.dashboard.views.curve_plot import PREVIOUS_RUNS

    plot = CurvePlot("elbo", length=1000)
    plot.extend(np.arange(1, 11), np.linspace(-50, -10, 10))
    assert _glyph_lines(plot) == [plot.line] and len(plot.figure.renderers) == 2
    assert [i.label.value for i in plot.legend.items] == ["this run"]
    for k in range(PREVIOUS_RUNS + 2):  # more Resets than lines kept
        runs = [(f"lr 0.{j}", np.arange(1, 11), np.linspace(-60 + j, -20, 10)) for j in range(k + 1)]
        plot.show_previous(runs)
        kept = min(k + 1, PREVIOUS_RUNS)
        assert len(plot.previous_lines) == kept
        assert _glyph_lines(plot)[-1] is plot.line  # this run's line is drawn last, on top
        assert [i.label.value for i in plot.legend.items if i.visible][-1] == "this run"
        assert [i.label.value for i in plot.legend.items][:kept] == [label for label, _, _ in runs[-kept:]]
    assert plot.raw_line is None
    plot.restyle(0.5, True, np.arange(1, 11), np.linspace(-50, -10, 10))
    assert plot.raw_line.visible and plot.raw_item in plot.legend.items
    assert plot.figure.renderers.index(plot.raw_line) < plot.figure.renderers.index(plot.line)
    plot.restyle(0.0, True, np.arange(1, 11), np.linspace(-50, -10, 10))
    assert not plot.raw_line.visible and not plot.raw_item.visible


def _config(dataset: str, model: str = "svgp", **data):
    return RunConfig(model=model, data={"dataset": dataset, "subset": 150, "test_subset": 60, **data},
                     model_config={"num_inducing": 10}, train={"steps": 50, "batch_size": 32})


def test_every_curve_of_a_run_is_laid_out_when_it_is_built_before_its_first_step(tmp_path, wait_until):
    e = Explorer(_config("digits"), store=RunStore(tmp_path / "runs.sqlite"))
    e.__panel__()
    try:
        e.reset()  # builds the model, takes no step
        wait_until(lambda: e.session.trainer is not None and e.session.state == "idle" and e.view_panes, e)
        e.tick()
        assert e.session.step == 0
        assert {"elbo", "test_error", "test_nlpd", "expected_log_lik", "kl"} <= set(e.curves.plots)
        assert all(len(e.curves.buffers[m].data) == 0 for m in e.curves.plots)  # no data yet: the plots came first
        assert [p.name for p in e.curves.layout.objects] == ["elbo", "test_error", "test_nlpd"]
    finally:
        e.close()


def test_a_regression_runs_plots_and_predictions_view_exist_before_its_first_step(tmp_path, wait_until):
    e = Explorer(_config("diabetes"), store=RunStore(tmp_path / "runs.sqlite"))
    e.__panel__()
    try:
        e.reset()
        wait_until(lambda: e.session.trainer is not None and e.session.state == "idle" and e.view_panes, e)
        e.tick()
        assert {"elbo", "test_rmse", "test_nlpd"} <= set(e.curves.plots) and "test_error" not in e.curves.plots
        assert "predictions" in e.view_panes
        before = list(e.feed.views_area.objects), list(e.curves.layout.objects)
        e.start()
        wait_until(lambda: e.session.step >= 5 and len(e.curves.buffers["test_rmse"].data) >= 1, e)
        assert (list(e.feed.views_area.objects), list(e.curves.layout.objects)) == before  # no re-layout as data came
    finally:
        e.close()


def test_an_error_curve_has_ticks_on_whole_percents():
    """The ν = 1 lesson's test-error axis had ticks at 1.5 % and 2.5 %, values an error on its test set never takes."""
    assert CurvePlot("test_error", length=10).figure.yaxis[0].ticker.min_interval == 1.0
    assert CurvePlot("elbo", length=10).figure.yaxis[0].ticker.min_interval == 0.0  # other quantities: any tick
