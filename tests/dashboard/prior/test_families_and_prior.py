"""The convolutional and deep-kernel families in the dashboard, and the deep-kernel prior explorer page."""
import numpy as np
import param
import pytest

from invlab import diagnostics as dg
from invlab.dashboard import Explorer
from invlab.dashboard.prior.page import PriorPanel
from invlab.models.dkp import PriorExplorer
from invlab.train import RunConfig, RunStore
from tests.helpers.panes import pane_text


def release(widget, value):
    """What a browser does when a throttled slider is dragged to `value` and let go."""
    widget.value = value
    with param.edit_constant(widget):
        widget.value_throttled = value


def make_explorer(tmp_path, config):
    e = Explorer(config, store=RunStore(tmp_path / "runs.sqlite"), view_interval=0.2)
    e.__panel__()
    return e


def test_convolutional_family_shows_its_patch_grid_and_weight_map(tmp_path, wait_until):
    config = RunConfig(model="conv-weighted",
                       data={"dataset": "rectangles",
                             "source_options": {"num_train": 60, "num_test": 40, "image_size": 10}},
                       model_config={"num_inducing": 8, "patch_size": 3},
                       train={"steps": 10_000, "batch_size": 20, "eval_every": 5, "log_every": 1})
    e = make_explorer(tmp_path, config)
    try:
        e.start()
        wait_until(lambda: ({"inducing_patches", "patch_weights"} <= set(e.view_panes)
                            and "test_error" in e.curves.buffers and len(e.curves.buffers["test_error"].data)), e)
        e.pause()
        wait_until(lambda: e.session.state == "paused", e)
        grid = e.view_panes["inducing_patches"].pipe.data
        weights = e.view_panes["patch_weights"].pipe.data
        assert isinstance(grid, dg.ImageGrid) and grid.images.shape[-2:] == (3, 3)  # 8 inducing 3×3 patches
        assert grid.images.reshape(-1, 3, 3).shape[0] >= 8
        assert weights.images.shape == (1, 1, 8, 8)  # one weight per patch position of a 10×10 image
        assert 0 <= e.curves.buffers["test_error"].data["test_error"].iloc[-1] <= 1  # curves as for every family
        assert e.status_values()["state"] == "paused"
    finally:
        e.close()


def test_diwp_shows_per_layer_gram_heatmaps_and_eigenvalue_histograms(tmp_path, wait_until):
    config = RunConfig(model="diwp", data={"dataset": "diabetes"},
                       model_config={"num_inducing": 12, "num_samples": 1, "num_predict_samples": 4},
                       train={"steps": 10_000, "batch_size": 64, "eval_every": 5, "log_every": 1})
    e = make_explorer(tmp_path, config)
    try:
        e.start()
        wanted = {"layer1_gram", "layer2_gram", "layer1_spectrum", "layer2_spectrum", "output_kernel"}
        wait_until(lambda: wanted <= set(e.view_panes) and e.session.step >= 3, e)
        e.pause()
        gram = e.view_panes["layer2_gram"].pipe.data
        spectrum = e.view_panes["layer2_spectrum"].pipe.data
        assert gram.matrix.shape == (12, 12) and np.allclose(gram.matrix, gram.matrix.T)
        assert isinstance(spectrum, dg.Spectrum) and spectrum.values.shape == (12,) and (spectrum.values > 0).all()
    finally:
        e.close()


def test_prior_page_is_drawn_when_first_shown_and_follows_its_sliders(tmp_path):
    e = make_explorer(tmp_path, RunConfig())
    try:
        prior = e.prior
        assert prior.redraws == 0 and not prior.panes  # nothing computed before the page is opened
        e.page.pages.active = 2  # Training, Lessons, Deep kernel prior
        assert prior.redraws == 1
        assert {"wishart_eigenvalues", "residual_wishart_eigenvalues", "inverse_wishart_eigenvalues",
                "prior_functions_gp", "prior_functions_1", "top_gram"} <= set(prior.panes)

        def smallest_iw_eigenvalue():
            return float(prior.panes["inverse_wishart_eigenvalues"].view.values.min())

        widgets = prior.controls._widgets
        release(widgets["delta"].slider, 0.0)  # log10 δ: δ = 1
        small = smallest_iw_eigenvalue()
        release(widgets["delta"].slider, 3.0)  # δ = 1000
        large = smallest_iw_eigenvalue()
        # IW(δI, δ + N + 1) with N = 400: smallest eigenvalue ≈ δ/(√(δ+N) + √N)², ≈ 6e-4 at δ = 1, ≈ 0.3 at δ = 1000
        assert small < 0.01 < 0.1 < large
        assert prior.panes["inverse_wishart_eigenvalues"].view.title.endswith("δ = 1000")

        release(widgets["alpha"], 0.0)
        plain = prior.panes["residual_wishart_eigenvalues"].view.values.min()
        release(widgets["alpha"], 3.0)
        residual = prior.panes["residual_wishart_eigenvalues"].view
        # W = (ξ/√N + αI)/√(1+α²): singular values of ξ/√N fill [0, 2], so α = 3 lifts the smallest eigenvalue of WWᵀ
        # from ≈ 0 to ≈ (3 − 2)²/10 = 0.1
        assert "α = 3" in residual.title and plain < 0.01 and residual.values.min() > 0.05

        release(widgets["num_layers"], 3)
        assert prior.panes["prior_functions_1"].view.title.startswith("3-layer")
        assert prior.panes["top_gram"].view.title.startswith("G_3")
    finally:
        e.close()


def test_prior_page_keeps_its_pictures_when_a_redraw_fails(monkeypatch):
    panel = PriorPanel(PriorExplorer(size=60, num_points=30, num_panels=2))
    panel.activate()
    before = panel.panes["inverse_wishart_eigenvalues"].view

    def broken():
        raise RuntimeError("linalg.cholesky: the matrix is not positive-definite")

    monkeypatch.setattr(panel.explorer, "views", broken)
    panel.explorer.delta = 3.0  # a slider move that fails to draw
    assert panel.alert.visible and "not positive-definite" in pane_text(panel.alert)
    assert panel.panes["inverse_wishart_eigenvalues"].view is before
    monkeypatch.undo()
    panel.explorer.delta = 4.0
    assert not panel.alert.visible and panel.error == ""
    assert panel.panes["inverse_wishart_eigenvalues"].view.title.endswith("δ = 4")


def test_fewer_panels_remove_their_pictures():
    panel = PriorPanel(PriorExplorer(size=60, num_points=30, num_panels=3))
    panel.activate()
    assert "prior_functions_3" in panel.panes
    release(panel.controls._widgets["num_panels"], 1)
    assert "prior_functions_2" not in panel.panes and "prior_functions_3" not in panel.panes
    assert len(panel.views_area) == len(panel.panes)


@pytest.mark.parametrize("bad", [{"delta": -1.0}, {"num_layers": 0}])
def test_impossible_prior_settings_are_refused_by_the_explorer(bad):
    with pytest.raises(ValueError):
        PriorExplorer(**bad)
