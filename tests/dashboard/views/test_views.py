"""What the renderers produce, without a browser: labels and units, axes that follow the data, a minimum y-span,
legends beside the data, colour bars on signed maps, tables sized to their rows, one view per quantity, and the
prior explorer's caching (a slider move recomputes only what it affects)."""
import holoviews as hv
import numpy as np
import pytest
import torch

from invlab import diagnostics as dg
from invlab.dashboard.prior.page import DELTA_STOP, PriorPanel
from invlab.dashboard.views.panes import (
    METRICS,
    CurveBoard,
    ViewPane,
    metric_label,
    render_curves,
    render_heatmap,
    render_image_grid,
    render_scatter,
    scalars_html,
    shows_curve,
    to_display,
    wrap_label,
    y_limits,
)
from invlab.models.dkp import PriorExplorer

hv.extension("bokeh")
RENDERER = hv.renderer("bokeh")


def ranges(plot):
    h = plot.handles
    return h["x_range"].start, h["x_range"].end, h["y_range"].start, h["y_range"].end


class BoardPlot:
    """A board's Bokeh figure for one metric, read like a HoloViews plot (`state`, `handles`): what the page shows."""

    def __init__(self, figure):
        self.state = figure
        self.handles = {"x_range": figure.x_range, "y_range": figure.y_range}


def board_plot(board, metric):
    return BoardPlot(board.plots[metric].object)


# -- one table of labels and units -------------------------------------------------------------------------------
@pytest.mark.parametrize("name, label", [
    ("test_error", "test error (%)"), ("expected_log_lik", "expected log-likelihood (nats)"), ("elbo", "ELBO (nats)"),
    ("kl", "KL(q ‖ p) (nats)"), ("test_nlpd", "test NLPD (nats per point)"), ("test_rmse", "test RMSE (target units)"),
    ("range.rotation", "rotation range (°)"), ("w2_eigen", "eigenvalue term Σ√λ"), ("data_loss", "data loss"),
    ("test_nlpd_tempered", "test nlpd tempered"), ("some_new_part", "some new part")])
def test_metric_labels_are_words_with_units(name, label):
    assert metric_label(name) == label


def test_errors_are_shown_in_percent_and_covered_quantities_get_no_curve():
    assert to_display("test_error", [0.25, 0.5]).tolist() == [25.0, 50.0]
    assert to_display("elbo", [-3.0]).tolist() == [-3.0]
    assert not shows_curve("range.rotation") and not shows_curve("range.shear.lo")
    assert not any(shows_curve(n) for n in ("w2", "w2_mean", "w2_trace_p", "w2_trace_q", "w2_eigen"))
    assert all(shows_curve(n) for n in ("elbo", "test_error", "expected_log_lik", "kl", "loss"))
    assert not any(shows_curve(n) for n in ("data_loss", "invariance_loss", "norm"))
    assert all(m.label and m.title for m in METRICS.values())


# -- live curves ---------------------------------------------------------------------------------------------------
def test_board_labels_percent_and_legend_beside_the_data():
    board = CurveBoard()
    board.send("test_error", [10, 20, 30], [0.5, 0.4, 0.3])
    plot = board_plot(board, "test_error")
    fig = plot.state
    assert fig.yaxis[0].axis_label == "test error (%)" and fig.title.text == "Test error"
    _, _, y0, y1 = ranges(plot)
    assert y0 < 30 and y1 > 50 and y1 < 60  # percent, following the data
    assert ([type(x).__name__ for x in fig.right] == ["Legend"]
            and not [x for x in fig.center if type(x).__name__ == "Legend"])


def test_flat_curve_gets_a_minimum_y_span():
    board = CurveBoard()
    board.send("elbo", [1, 2, 3], [13.04548661302] * 3)
    _, _, y0, y1 = ranges(board_plot(board, "elbo"))
    assert y1 - y0 >= 0.01 * 13.04 and y0 < 13.04548661302 < y1  # not magnified into rounding noise
    assert y_limits([np.full(5, 5.0)], min_span=1.0) == (4.5, 5.5)
    assert y_limits([np.array([np.nan])]) is None


def test_board_axes_follow_the_data_and_a_new_run_after_reset():
    board = CurveBoard()
    board.send("elbo", [1, 2, 3], [-100.0, -90.0, -80.0])
    plot = board_plot(board, "elbo")
    board.send("elbo", [4, 5, 6], [-50.0, -20.0, -10.0])
    x0, x1, y0, y1 = ranges(plot)
    assert x1 >= 6 and y1 >= -10
    board.archive("lr 0.05, rotate 90°, 50 inducing points, affine augmentation")
    board.send("elbo", np.arange(1, 200), np.linspace(-500.0, 100.0, 199))
    x0, x1, y0, y1 = ranges(plot)
    assert x1 >= 199 and y0 <= -500 and y1 >= 100  # the new run's line stays on the chart
    labels = [item.label.value for item in plot.state.legend[0].items]
    assert "this run" in labels
    long = next(lbl for lbl in labels if lbl.startswith("lr 0.05"))
    assert "\n" in long and all(len(line) <= 25 for line in long.split("\n"))  # wrapped, readable beside the plot


def test_a_curve_of_one_point_is_drawn_from_step_zero_not_on_a_one_step_axis():
    """The first test-error point at step 300 sat alone on an axis from 300 to 301 (ticks 300.2, 300.4, …); it is
    drawn on an axis from step 0 that has room for it, as the curve it becomes."""
    board = CurveBoard()
    board.send("test_error", [300], [0.12])
    x0, x1, _, _ = ranges(board_plot(board, "test_error"))
    assert x0 <= 0 and 300 < x1 <= 400
    board.send("test_error", [600], [0.1])
    x0, x1, _, _ = ranges(board_plot(board, "test_error"))
    assert x0 <= 300 and x1 >= 600


def test_covered_metrics_keep_their_data_but_get_no_plot():
    board = CurveBoard()
    board.send("range.rotation", [1, 2], [5.0, 6.0])
    board.send("w2_mean", [1, 2], [1.0, 2.0])
    board.send("kl", [1, 2], [3.0, 2.0])
    assert set(board.plots) == {"kl"} and len(board.buffers["range.rotation"].data) == 2
    board.hide("kl")
    assert not board.plots and len(board.extra_layout) == 0
    assert "range.rotation" in board.to_csv().getvalue()


def test_wrap_label():
    assert wrap_label("short") == "short"
    wrapped = wrap_label("a " * 60, width=10, lines=3)
    assert wrapped.count("\n") == 2 and wrapped.endswith("…")


# -- model views ---------------------------------------------------------------------------------------------------
def test_model_curves_follow_their_data_frame_by_frame():
    pane = ViewPane("history", dg.Curves(title="Augmentation ranges over training", xlabel="training step",
                                         ylabel="rotation range (°)",
                                         series={"rotation": (np.arange(1, 11), np.linspace(5, 45, 10))},
                                         labels={"rotation": "rotation (°)"}, min_span=1.0))
    plot = RENDERER.get_plot(pane.dmap)
    assert ranges(plot)[1] <= 10.5
    pane.update(dg.Curves(title="Augmentation ranges over training", xlabel="training step",
                          ylabel="rotation range (°)",
                          series={"rotation": (np.arange(1, 500), np.linspace(5, 95, 499))}))
    x0, x1, y0, y1 = ranges(plot)
    assert x1 >= 499 and y1 >= 95  # not frozen at the first frame
    assert plot.state.yaxis[0].axis_label == "rotation range (°)" and plot.state.xaxis[0].axis_label == "training step"
    assert "Augmentation ranges over training" in pane.title.object  # the title above the plot, wrapping


def test_signed_image_grid_has_a_centred_diverging_colour_bar():
    weights = dg.ImageGrid(title="Patch weights over positions", images=np.full((1, 1, 8, 8), 0.3),
                           col_labels=["all channels"], vrange=(-0.3, 0.3))
    plot = RENDERER.get_plot(render_image_grid(weights))
    bars = [x for x in plot.state.right if type(x).__name__ == "ColorBar"]
    assert len(bars) == 1
    mapper = bars[0].color_mapper
    assert mapper.low == -0.3 and mapper.high == 0.3
    assert "RdBu" in str(plot.lookup_options(plot.current_frame, "style").options.get("cmap"))
    grey = dg.ImageGrid(title="digits", images=np.random.default_rng(0).random((2, 3, 4, 4)))
    assert isinstance(render_image_grid(grey), hv.RGB)  # pictures stay pictures


def test_image_grid_tiles_keep_their_pixels_and_a_visible_gutter():
    from invlab.dashboard.notebook.display import show

    rng = np.random.default_rng(0)
    images = rng.random((2, 3, 4, 4))
    images[0, 0] = 1.0  # an all-white image and an all-black one: the gutter must differ from both
    images[0, 1] = 0.0
    grid = dg.ImageGrid(title="digits", images=images, row_labels=["a", "b"])
    rgb = render_image_grid(grid)
    pixels = np.asarray(rgb.data)[::-1, :, :3]  # hv.RGB holds the bottom row first
    assert pixels.shape == (2 * 5 - 1, 3 * 5 - 1, 3)
    np.testing.assert_allclose(pixels[5:9, 10:14, 0], images[1, 2])  # each image where it belongs, grey = R = G = B
    gutter = pixels[4, :]  # the row between the two rows of images
    assert np.ptp(gutter, axis=0).max() == 0  # one colour all along
    assert np.ptp(gutter[0]) > 0.1  # tinted: not a grey (black, white or between) that a picture's pixel could be
    # a notebook draws the same grid larger, with square whole-numbered image pixels and the same labels
    small, large = (RENDERER.get_plot(p).state for p in (rgb, show(grid)))
    assert large.frame_width > 1.5 * small.frame_width
    assert large.frame_width / 14 == large.frame_height / 9 == int(large.frame_width / 14)
    assert sorted(large.yaxis[0].major_label_overrides.values()) == ["a", "b"]


def test_symmetric_heatmap_is_centred_and_has_a_colour_bar():
    m = np.array([[1.0, -2.0], [-2.0, 0.5]])
    plot = RENDERER.get_plot(render_heatmap(dg.Heatmap(title="K", matrix=m, symmetric=True)))
    mapper = plot.handles["color_mapper"]
    assert (mapper.low, mapper.high) == (-2.0, 2.0) and any(type(x).__name__ == "ColorBar" for x in plot.state.right)


def scatter_sources(plot):
    """The Bokeh data of each layer of a rendered Scatter view, by the layer's element type."""
    return {type(sub.current_frame).__name__: sub.handles["source"].data for sub in plot.subplots.values()}


def test_predictions_against_the_truth_are_drawn_with_their_bars_and_the_line_y_equals_x():
    truth, mean, bar = np.array([120.0, 80.0, 200.0, 151.0]), np.array([110.0, 95.0, 180.0, 150.0]), np.full(4, 20.0)
    view = dg.Scatter(title="Test predictions against the truth (4 points) <b>bold</b>", x=truth, y=mean, y_err=bar,
                      xlabel="true target (target's units)", ylabel="predicted mean ± 2 sd (target's units)",
                      identity=True)
    pane = ViewPane("predictions", view)
    plot = RENDERER.get_plot(pane.dmap)
    data = scatter_sources(plot)
    np.testing.assert_array_equal(data["Scatter"]["truth"], truth)  # the points themselves
    np.testing.assert_array_equal(data["Scatter"]["predicted"], mean)
    bars = data["ErrorBars"]  # ± 2 sd about each mean
    np.testing.assert_array_equal(bars["base"], truth)
    np.testing.assert_allclose(bars["lower"], mean - bar)
    np.testing.assert_allclose(bars["upper"], mean + bar)
    line_x, line_y = (np.asarray(v) for v in data["Curve"].values())
    np.testing.assert_array_equal(line_x, line_y)  # y = x, across the points
    assert line_x.min() <= 80 and line_x.max() >= 200
    x0, x1, y0, y1 = ranges(plot)
    assert (x0, x1) == (y0, y1) and x0 < 80 and x1 > 200  # one scale on both axes: the line is the diagonal
    assert plot.state.xaxis[0].axis_label == "true target (target's units)"
    assert plot.state.yaxis[0].axis_label == "predicted mean ± 2 sd (target's units)"
    assert plot.state.legend[0] in plot.state.right  # a legend, beside the data
    assert "&lt;b&gt;bold&lt;/b&gt;" in pane.title.object and "<b>" not in pane.title.object  # text, not markup
    pane.update(dg.Scatter(title=view.title, x=truth * 10, y=mean * 10, y_err=bar, identity=True,
                           xlabel=view.xlabel, ylabel=view.ylabel))
    assert ranges(plot)[1] > 2000  # the axes follow the new data


def test_a_trained_models_predictions_view_renders_its_own_points():
    from invlab.data import Dataset
    from invlab.train import RunConfig, Trainer

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = 50 + 10 * X[:, 0] + rng.normal(size=60)
    trainer = Trainer(RunConfig(model_config={"num_inducing": 8}, train={"steps": 3, "eval_every": 0}),
                      dataset=Dataset("toy", X[:40], y[:40], X[40:], y[40:], task="regression"))
    for _ in range(3):
        trainer.step()
    view = trainer.report.snapshot().views["predictions"]
    data = scatter_sources(RENDERER.get_plot(render_scatter(view)))
    np.testing.assert_array_equal(data["Scatter"]["truth"], view.x)
    np.testing.assert_array_equal(data["Scatter"]["predicted"], view.y)
    assert 30 < np.mean(data["Scatter"]["truth"]) < 70  # the target's units


def test_tables_are_as_tall_as_their_rows_and_follow_row_changes():
    pane = ViewPane("hyperparameters", dg.Scalars(title="Hyper-parameters", values={"kernel.lengthscale": 1.0}))
    assert pane.body.height is None  # no fixed height to clip rows
    assert 'data-rows="1"' in pane.body.object
    pane.update(dg.Scalars(title="Hyper-parameters", values={f"kernel.part{i}.variance": float(i) for i in range(14)}))
    assert 'data-rows="14"' in pane.body.object and pane.body.object.count("<tr>") == 14
    assert pane.pipe.data.values["kernel.part3.variance"] == 3.0
    html = scalars_html(dg.Scalars(values={"kernel.base.lengthscale": 4.3598, "likelihood.variance": 0.07}))
    assert "lengthscale" in html and "(kernel.base)" in html and "4.36" in html


def test_spectrum_keeps_zero_eigenvalues_at_a_floor():
    pane = ViewPane("s", dg.Spectrum(title="G", values=np.r_[np.zeros(20), np.linspace(0.5, 2, 10)]))
    hist = pane._render(pane.pipe.data, log_x=True)
    edges = hist.edges
    assert edges.min() < -15 and hist.dimension_values(1).sum() == 30  # the 20 zeros are drawn, not dropped


def test_dkp_caption_is_true_of_the_rank_deficient_first_layer():
    from invlab.train import RunConfig, Trainer
    config = RunConfig(model="diwp", data={"dataset": "diabetes"},
                       model_config={"num_inducing": 30, "num_samples": 1, "num_predict_samples": 4},
                       train={"steps": 2, "eval_every": 0, "batch_size": 32})
    trainer = Trainer(config)
    trainer.step()
    views = trainer.model.diagnostics()
    first, second = views["layer1_spectrum"], views["layer2_spectrum"]
    zeros = dg.near_zero(first.values)
    assert zeros >= 20  # 10 features: G₁ has rank ≤ 10
    assert (first.description.startswith(f"{zeros} of 30 eigenvalues are zero")
            and "rank at most N₀ = 10" in first.description)
    assert "no near-zero" not in first.description
    assert second.description.startswith(f"{dg.near_zero(second.values)} of 30")


def test_invariant_ranges_have_one_view():
    from invlab.train import RunConfig, Trainer
    config = RunConfig(model="invariant", data={"dataset": "digits", "subset": 100, "test_subset": 40},
                       model_config={"augmentation": "rotation", "num_inducing": 8, "num_samples": 3},
                       train={"steps": 3, "eval_every": 0, "batch_size": 32})
    trainer = Trainer(config)
    for _ in range(3):
        trainer.step()
    views = trainer.report.snapshot().views
    assert "augmentation_ranges" not in views
    assert not [k for k in views["hyperparameters"].values if "augmentation" in k]
    history = views["augmentation_history"]
    assert history.ylabel == "rotation range (°)" and history.covers == ("range.rotation",)
    assert list(history.series["rotation"][0]) == [1, 2, 3]


# -- the prior page ------------------------------------------------------------------------------------------------
def test_prior_views_are_reused_until_their_parameters_change():
    explorer = PriorExplorer(size=60, num_points=30, num_panels=2)
    first = explorer.views()
    explorer.alpha = 2.0
    second = explorer.views()
    changed = {k for k in first if first[k] is not second[k]}
    assert changed == {"residual_wishart_eigenvalues"}
    explorer.delta = 3.0
    third = explorer.views()
    changed = {k for k in second if second[k] is not third[k]}
    assert "inverse_wishart_eigenvalues" in changed and "wishart_eigenvalues" not in changed
    assert {"prior_functions_1", "top_gram"} <= changed and "prior_functions_gp" not in changed
    explorer.delta = 20.0
    explorer.alpha = 1.0
    again = explorer.views()
    assert np.array_equal(again["inverse_wishart_eigenvalues"].values, first["inverse_wishart_eigenvalues"].values)


def test_prior_delta_slider_is_logarithmic_and_plots_share_the_width():
    panel = PriorPanel(PriorExplorer(size=60, num_points=30, num_panels=2))
    slider = panel.controls._widgets["delta"].slider  # over log10 δ, beside a box for an exact δ
    assert (slider.start, slider.end, slider.step) == (-1.0, 3.0, DELTA_STOP)  # 0.1..1000, ten stops a decade
    assert panel.views_area.sizing_mode == "stretch_width"
    panel.activate()
    before = {k: p.view for k, p in panel.panes.items()}
    panel.explorer.alpha = 2.5
    assert [k for k, p in panel.panes.items() if p.view is not before[k]] == ["residual_wishart_eigenvalues"]
    torch.manual_seed(0)


def test_show_draws_each_views_own_title():
    """`show(view)` in a notebook titles the plot with the view's title (image grids and heatmaps drew none)."""
    from invlab.dashboard.notebook.display import show

    rng = np.random.default_rng(0)
    views = [dg.ImageGrid(title="each input, then 7 samples", images=rng.random((2, 3, 4, 4))),
             dg.Heatmap(title="Layer 1: inducing Gram", matrix=rng.random((5, 5)), xlabel="inducing point"),
             dg.Curves(title="ELBO", series={"elbo": (np.arange(3.0), np.array([-3.0, -2.0, -1.0]))}),
             dg.Spectrum(title="Eigenvalues of K_uu", values=rng.random(20) + 0.1)]
    for view in views:
        assert RENDERER.get_plot(show(view)).state.title.text == view.title, type(view).__name__
    assert RENDERER.get_plot(show(views[1], title="mine")).state.title.text == "mine"  # an explicit title wins
    table = show(dg.Scalars(title="Hyper-parameters", values={"lengthscale": 1.5}))  # a table, not a plot
    assert "lengthscale" in table.object


def test_functions_beside_a_gram_heatmap_keep_their_own_x_axis():
    """Notebook 05 puts f(x) over x ∈ [−3, 3] beside an 80×80 Gram matrix: sharing the x axis squashed the curves
    into a tenth of their plot."""
    from bokeh.models import Plot

    from invlab.dashboard.notebook.display import show

    x = np.linspace(-3, 3, 80)
    curves = dg.Curves(title="f(x)", series={"f1": (x, np.sin(x)), "f2": (x, np.cos(x))}, xlabel="x", legend=False)
    gram = dg.Heatmap(title="Gram", matrix=np.eye(80), xlabel="x index", ylabel="x index")
    grid = dg.ImageGrid(title="digits", images=np.random.default_rng(0).random((1, 2, 8, 8)))
    for other in (gram, grid):
        plots = list(RENDERER.get_plot(hv.Layout([show(curves), show(other)]).cols(2)).state.select({"type": Plot}))
        (line,) = [p for p in plots if p.title.text == "f(x)"]
        assert line.x_range.start >= -3.5 and line.x_range.end <= 3.5, (line.x_range.start, line.x_range.end)


def test_log_curves_leave_non_positive_values_as_gaps():
    """A term that reaches 0 on a log axis is a gap in its line, not a point at minus infinity."""
    view = dg.Curves(title="terms", logy=True, series={"data": (np.arange(3.0), np.array([2.0, 0.5, 0.1])),
                                                         "invariance": (np.arange(3.0), np.array([0.0, 1e-3, 1e-4]))})
    overlay = render_curves(view)
    drawn = {c.label: c.dimension_values(1) for c in overlay}
    assert np.isnan(drawn["invariance"][0]) and drawn["invariance"][1] == 1e-3
    assert RENDERER.get_plot(overlay).state.y_scale.__class__.__name__ == "LogScale"


def test_the_mouse_wheel_over_a_view_scrolls_the_page_instead_of_zooming():
    """No view's plot takes the mouse wheel: scrolling down a page of views over an augmentation image or a
    histogram moves the page (HoloViews activates wheel zoom unless told otherwise); zoom stays one toolbar click
    away where there is a toolbar."""
    from bokeh.models import WheelZoomTool

    from invlab.dashboard.views.panes import render_field, render_spectrum

    rng = np.random.default_rng(0)
    grid = np.linspace(-1, 1, 5)
    views = [render_image_grid(dg.ImageGrid(title="samples", images=rng.random((2, 3, 4, 4)))),
             render_image_grid(dg.ImageGrid(title="weights", images=np.full((1, 1, 8, 8), 0.3), vrange=(-0.3, 0.3))),
             render_heatmap(dg.Heatmap(title="K", matrix=np.eye(3))),
             render_spectrum(dg.Spectrum(title="eigenvalues", values=rng.random(20) + 0.1)),
             render_curves(dg.Curves(title="range", series={"a": (np.arange(5.0), rng.random(5))})),
             render_scatter(dg.Scatter(title="pred", x=rng.random(5), y=rng.random(5), y_err=np.full(5, 0.1))),
             render_field(dg.Field2D(title="field", x=grid, y=grid, values=rng.random((5, 5)),
                                     points=rng.random((4, 2)), point_labels=np.array([0, 1, -1, 0])))]
    for view in views:
        state = RENDERER.get_plot(view).state
        figures = [state] if hasattr(state, "toolbar") else [c for c in state.references() if hasattr(c, "toolbar")]
        assert figures
        for figure in figures:
            assert not isinstance(figure.toolbar.active_scroll, WheelZoomTool), view


def test_a_familys_own_curve_labels_are_kept_as_its_entry_words_them():
    """A loss term's axis label from a family's registry entry is worded to fit, so it is shown whole (was cut to
    'expected log lik' once the labels moved from the dashboard's table to the families' entries)."""
    from invlab.dashboard.views.curve_names import axis_label

    assert axis_label("expected_log_lik") == "expected log-likelihood (nats)"
    assert axis_label("kl") == "KL(q ‖ p) (nats)"
