"""The view of test predictions against the truth: every regression family gives it, its points are the test targets
and predicted means in the target's own units (checked against a computation by hand from the Dataset's scalers), at
most 500 of them, with ± 2 sd bars; a classifier gives none."""
import numpy as np
import pytest
import torch

from invlab import diagnostics as dg
from invlab.data import Dataset
from invlab.errors import ConfigError
from invlab.models.base import seeded
from invlab.train import RunConfig, Trainer


def by_hand(trainer, X_test, y_test):
    """(truth, predicted mean, 2 sd) in the target's units, from the model's standardised prediction and the scalers."""
    ds = trainer.dataset
    with seeded(0), torch.no_grad():
        pred = trainer.model.predict_standardised(torch.as_tensor(X_test))
    truth = y_test * ds.y_std + ds.y_mean
    mean = pred.y_mean[:, 0].numpy() * ds.y_std + ds.y_mean
    bar = 2 * np.sqrt(pred.y_var[:, 0].numpy()) * ds.y_std
    return truth, mean, bar


def assert_same_points(view, trainer, X, y):
    """Every point of the view is a point of (X, y) (model units) with its true target, and its mean and bar computed
    by hand; the points are predicted in the view's order, so a family that samples draws the same numbers."""
    ds = trainer.dataset
    truth = y * ds.y_std + ds.y_mean
    assert len(np.unique(truth)) == len(truth)  # continuous targets: the truth names the point
    order = np.argsort(truth)
    at = order[np.clip(np.searchsorted(truth[order], view.x), 0, len(truth) - 1)]
    np.testing.assert_allclose(view.x, truth[at], rtol=1e-12)
    truth, mean, bar = by_hand(trainer, X[at], y[at])
    np.testing.assert_allclose(view.y, mean, rtol=1e-7)
    np.testing.assert_allclose(view.y_err, bar, rtol=1e-7)


def test_svgp_on_diabetes_shows_every_test_point_in_disease_progression_units():
    trainer = Trainer(RunConfig(data={"dataset": "diabetes"}, model_config={"num_inducing": 30},
                                train={"steps": 30, "learning_rate": 0.05, "eval_every": 0}))
    list(trainer.run())
    view = trainer.report.snapshot().views["predictions"]
    ds = trainer.dataset
    assert isinstance(view, dg.Scatter) and view.identity
    assert view.title == f"Test predictions against the truth ({ds.num_test} points)"
    # diabetes names no columns: the axes say the target is in its own units
    assert view.xlabel == "true target (its own units)" and view.ylabel == "predicted target (± 2 sd)"
    truth, mean, bar = by_hand(trainer, ds.X_test, ds.y_test)
    # diabetes' targets are whole numbers that repeat: compare the points as a set of (truth, mean, bar) rows
    got = np.stack([view.x, view.y, view.y_err], 1)
    want = np.stack([truth, mean, bar], 1)
    got, want = got[np.lexsort(got.T[::-1])], want[np.lexsort(want.T[::-1])]
    np.testing.assert_allclose(got, want, rtol=1e-7)
    assert 25 <= view.x.min() and view.x.max() <= 346  # diabetes' disease progression scale, not standardised
    assert 100 < view.y.mean() < 200 and (view.y_err > 0).all()


def hand_made(n_test=600, seed=0):
    """price ≈ 1000 + 40·x1 − 15·x2 ≈ 1445 (its own units): a hand-built regression Dataset, by default with more
    test points than the view shows."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(80 + n_test, 2)) * [2.0, 5.0] + [10.0, -3.0]
    y = 1000 + 40 * X[:, 0] - 15 * X[:, 1] + 5 * rng.normal(size=len(X))
    return Dataset("prices", X[:80], y[:80], X[80:], y[80:], task="regression")


def test_a_hand_made_dataset_shows_at_most_500_test_points_in_its_own_units():
    ds = hand_made()
    trainer = Trainer(RunConfig(model_config={"num_inducing": 10}, train={"steps": 20, "learning_rate": 0.05,
                                                                         "eval_every": 0}), dataset=ds)
    list(trainer.run())
    view = trainer.report.snapshot().views["predictions"]
    assert len(view.x) == dg.PREDICTION_POINTS == 500 and view.title.endswith("(500 points)")
    assert_same_points(view, trainer, ds.X_test, ds.y_test)
    assert 1300 < view.x.mean() < 1600 and 1300 < view.y.mean() < 1600  # the price's units (about 1445)


@pytest.mark.parametrize("family", ["svgp", "invariant", "gwi", "rkhs", "nngp", "diwp", "dkp_svgp"])
def test_every_regression_family_gives_the_view(family):
    ds = hand_made(n_test=40)
    config = {"num_inducing": 10} if family not in ("gwi", "rkhs") else {}
    try:
        trainer = Trainer(RunConfig(model=family, model_config=config, train={"steps": 2, "eval_every": 0}),
                          dataset=ds)
    except ConfigError as err:
        pytest.skip(f"{family} does not take 2-D tabular data: {err}")
    for _ in range(2):
        trainer.step()
    view = trainer.report.snapshot().views["predictions"]
    assert_same_points(view, trainer, ds.X_test, ds.y_test)
    assert len(view.x) == 40 and np.isfinite(view.y).all()


def test_without_a_test_subset_the_points_are_the_given_ones_and_say_so():
    ds = hand_made(n_test=10)
    trainer = Trainer(RunConfig(model_config={"num_inducing": 10}, train={"steps": 1, "eval_every": 0}), dataset=ds)
    X, y = torch.as_tensor(ds.X_train[:30]), torch.as_tensor(ds.y_train[:30])
    view = trainer.model.diagnostics((X, y))["predictions"]
    assert view.title == "Training predictions against the truth (30 points)"
    assert_same_points(view, trainer, ds.X_train[:30], ds.y_train[:30])


def test_a_classification_run_has_no_such_view():
    trainer = Trainer(RunConfig(data={"dataset": "two-moons"}, model_config={"num_inducing": 10},
                                train={"steps": 2, "eval_every": 0}))
    for _ in range(2):
        trainer.step()
    views = trainer.report.snapshot().views
    assert "posterior" in views  # the classifier's own views are there
    assert "predictions" not in views and not any(isinstance(v, dg.Scatter) for v in views.values())
