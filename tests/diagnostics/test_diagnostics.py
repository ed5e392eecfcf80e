"""invlab.diagnostics: the typed views, spectra, image grids and the thinned history models keep for plotting."""
import numpy as np
import pytest
import torch

from invlab import diagnostics as dg


# -- view types -------------------------------------------------------------------------------------------------------
def test_views_are_plain_data_with_defaults():
    c = dg.Curves(title="t", series={"a": (np.arange(3), np.ones(3))})
    assert c.xlabel == "step" and c.legend and c.labels == {} and c.covers == ()
    assert dg.Spectrum(values=np.ones(2)).log and dg.Scalars().values == {}
    h = dg.Heatmap(matrix=np.eye(2))
    assert not h.symmetric and h.title == ""
    f = dg.Field2D(x=np.arange(3), y=np.arange(2), values=np.zeros((2, 3)))
    assert f.points is None and f.contour is None
    for view in (c, h, f, dg.Spectrum(), dg.Scalars()):
        assert isinstance(view, dg.View)


@pytest.mark.parametrize("shape", [(2, 3, 4, 4), (2, 3, 4, 4, 3)])
def test_image_grid_takes_grey_and_colour_grids(shape):
    grid = dg.ImageGrid(images=np.zeros(shape), row_labels=["a", "b"])
    assert grid.images.shape == shape and grid.vrange is None


def test_scatter_holds_paired_points_and_refuses_unpaired_ones():
    s = dg.Scatter(x=[1, 2, 3], y=np.array([1.5, 2.0, 2.5]), y_err=[0.1, 0.2, 0.3], identity=True)
    assert s.x.dtype == np.float64 and s.y_err.shape == (3,) and isinstance(s, dg.View)
    with pytest.raises(ValueError, match=r"one shape \[N\]"):
        dg.Scatter(x=np.zeros(3), y=np.zeros(4))
    with pytest.raises(ValueError, match=r"one shape \[N\]"):
        dg.Scatter(x=np.zeros(3), y=np.zeros(3), y_err=np.zeros(2))


@pytest.mark.parametrize("images", [None, np.zeros((4, 4)), np.zeros((1, 2, 3, 4, 5, 6))])
def test_image_grid_refuses_other_shapes(images):
    with pytest.raises(ValueError, match=r"\[rows, cols, H, W"):
        dg.ImageGrid(images=images)


# -- spectra -----------------------------------------------------------------------------------------------------------
def test_spectrum_of_is_numpys_eigvalsh_of_the_symmetric_part_ascending_and_clipped():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((6, 6))
    M = A @ A.T
    assert np.allclose(dg.spectrum_of(M), np.linalg.eigvalsh(M), atol=1e-10)
    N = M + np.triu(rng.standard_normal((6, 6)), 1)  # non-symmetric: the symmetric part's spectrum
    assert np.allclose(dg.spectrum_of(N), np.clip(np.linalg.eigvalsh(0.5 * (N + N.T)), 0, None), atol=1e-10)
    indefinite = np.diag([-2.0, 0.5, 3.0])
    assert np.array_equal(dg.spectrum_of(indefinite), [0.0, 0.5, 3.0])
    v = dg.spectrum_of(torch.eye(3, dtype=torch.float32))  # tensors are accepted, values come back as float64 numpy
    assert isinstance(v, np.ndarray) and v.dtype == np.float64 and np.array_equal(v, np.ones(3))


def test_near_zero_counts_eigenvalues_at_rounding_level_of_the_largest():
    assert dg.near_zero([0.0, 1e-14, 1e-3, 10.0]) == 2
    assert dg.near_zero([1e-12, 1e-3], rel=1e-8) == 1
    assert dg.near_zero([]) == 0 and dg.near_zero([0.0, 0.0]) == 2


# -- image grids -------------------------------------------------------------------------------------------------------
def test_image_grid_from_flat_lays_out_grey_images_row_by_row_with_blank_padding():
    Z = np.arange(5 * 6, dtype=np.float64).reshape(5, 6)  # five 2×3 grey images
    grid = dg.image_grid_from_flat(Z, (1, 2, 3), cols=2)
    assert grid.shape == (3, 2, 2, 3)
    assert np.array_equal(grid[0, 1], Z[1].reshape(2, 3)) and np.array_equal(grid[2, 0], Z[4].reshape(2, 3))
    assert np.array_equal(grid[2, 1], np.zeros((2, 3)))


def test_image_grid_from_flat_puts_colour_channels_last_and_caps_the_count():
    Z = np.random.default_rng(1).random((40, 3 * 2 * 2))
    grid = dg.image_grid_from_flat(Z, (3, 2, 2), cols=8, max_images=10)
    assert grid.shape == (2, 8, 2, 2, 3)
    assert np.array_equal(grid[1, 1], Z[9].reshape(3, 2, 2).transpose(1, 2, 0))
    few = dg.image_grid_from_flat(Z[:3], (3, 2, 2), cols=8)
    assert few.shape == (1, 3, 2, 2, 3)  # no more columns than images


# -- thinned history ---------------------------------------------------------------------------------------------------
def test_thinned_history_keeps_an_even_bounded_record():
    h = dg.ThinnedHistory(capacity=8)
    for step in range(1, 101):
        h.record({"a": torch.tensor(float(step)), "b": torch.tensor(-float(step))})
    steps, values = h.series()["a"]
    assert len(steps) < 8 and h.stride > 1
    assert np.array_equal(values, steps.astype(float))  # each value stays with its step
    assert np.array_equal(h.series()["b"][1], -steps.astype(float))
    # evenly spaced at the current stride from the first call, up to the latest call
    assert steps[0] == 1 and (np.diff(steps) == h.stride).all() and 100 - h.stride < steps[-1] <= 100


def test_thinned_history_ignores_empty_records_and_stores_detached_values():
    h = dg.ThinnedHistory()
    assert h.series() == {}
    x = torch.tensor(2.0, requires_grad=True)
    h.record({})
    h.record({"x": x * 3})
    steps, values = h.series()["x"]
    assert list(steps) == [2] and list(values) == [6.0]
    assert not h.values[0]["x"].requires_grad


def test_the_decision_field_is_drawn_in_the_datas_own_units():
    """Two columns in their own units (hundreds, offset): the field's grid and points are there, not standardised,
    and a regression's posterior mean is in the target's units."""
    from sklearn.datasets import make_circles

    from invlab.data import load
    from invlab.train import RunConfig, Trainer

    X, labels = make_circles(120, noise=0.05, factor=0.5, random_state=0)
    X = X * [100.0, 3.0] + [500.0, -20.0]
    for y, task in ((labels, "classification"), (X[:, 0] * 2.0 + 7.0, "regression")):
        data = load((X, y), task=task)
        trainer = Trainer(RunConfig(model_config={"num_inducing": 8}, train={"steps": 3, "eval_every": 0}),
                          dataset=data)
        list(trainer.run())
        field = trainer.report.snapshot().views["posterior"]
        shown = np.asarray(field.points)
        assert field.x.min() < X[:, 0].min() and field.x.max() > X[:, 0].max()  # the grid spans the data, padded
        assert field.y.min() < X[:, 1].min() and field.y.max() > X[:, 1].max()
        assert np.all(np.isin(np.round(shown[:, 0], 6), np.round(X[:, 0], 6)))  # each point is one of the data's
        if task == "regression":
            assert 600 < float(np.mean(field.values)) < 1800  # 2·x₁ + 7 over x₁ ∈ [400, 600], not ≈ 0
