"""The Compare page on a user's own regression table (a CSV whose target column is a price): its sweep table shows
the test RMSE in the target's units and the test NLPD instead of an empty test error, and the plot beside the ELBO is
the test RMSE against the swept setting with the stored values; a Discover study on the same table shows the same.

No Dask cluster: the sweep's runs are trained one after another in this process through the same task a Dask worker
runs and stored as the client stores them (tests/helpers/serial_sweep.py), a few tiny runs of 20 steps each.
"""
import holoviews as hv
import numpy as np
import pytest

from invlab.dashboard.compare import ComparePage
from invlab.dashboard.compare.data import field_name
from invlab.sweeps import SweepSpec
from invlab.sweeps.discover import plan_candidates, run_candidates
from invlab.train import RunConfig, RunStore
from tests.helpers.serial_sweep import house_prices, run_sweep_serially

TRAIN = {"steps": 20, "batch_size": 0, "learning_rate": 0.03, "eval_every": 0, "log_every": 5}
AXIS = "model.num_inducing"


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """A house-price table: two inputs and the price in thousands of euros (values in the hundreds)."""
    return house_prices(tmp_path_factory.mktemp("own") / "houses.csv")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    store = RunStore(tmp_path_factory.mktemp("compare-regression") / "runs.sqlite")
    yield store
    store.close()


@pytest.fixture(scope="module")
def sweep(table, store):
    """svgp on the table, 3 and 6 inducing points × seeds 0 and 1."""
    base = RunConfig("svgp", {"dataset": f"csv:{table}", "seed": 0}, {"num_inducing": 3}, TRAIN)
    spec = SweepSpec(name="houses", base=base, vary={AXIS: [3, 6]}, seeds=[0, 1])
    return run_sweep_serially(spec, store)


@pytest.fixture(scope="module")
def page(store):
    return ComparePage(store=store)


def stored_by_point(store, sweep_id):
    out = {}
    for record in store.sweeps.runs(sweep_id):
        out.setdefault(store.sweeps.info(record.id)["point"][AXIS], []).append(record)
    return out


def test_the_sweep_table_shows_the_test_rmse_in_the_targets_units_and_the_test_nlpd(page, store, sweep):
    page.open_sweep(sweep)
    frame = page.following.table.value
    assert "test error (%)" not in frame.columns and "test RMSE" in frame.columns and "test NLPD" in frame.columns
    # the column's title names the target column, whose units the RMSE is in (a title is HTML: escaped)
    assert page.following.table.titles["test RMSE"] == "test RMSE (price_keur)"
    records = {r.id: r for r in store.sweeps.runs(sweep)}
    assert len(frame) == 4 and all(r.test_rmse is not None for r in records.values())
    for _, row in frame.iterrows():
        record = records[int(row["run"])]
        assert row["test RMSE"] == pytest.approx(record.test_rmse, rel=1e-3)
        assert row["test NLPD"] == pytest.approx(record.test_nlpd, abs=1e-4)
    assert max(frame["test RMSE"]) > 1  # in thousands of euros, not a fraction of a standardised target


def test_the_plot_beside_the_elbo_is_the_test_rmse_against_the_swept_setting(page, store, sweep):
    page.open_sweep(sweep)
    overlay = page.following.error_pane.object
    assert overlay.opts.get().kwargs["title"] == "Test RMSE against inducing points M"
    bars = next(layer for layer in overlay if isinstance(layer, hv.ErrorBars))
    assert bars.vdims[0].label == "test RMSE (price_keur)"
    x = np.asarray(bars.dimension_values(field_name(AXIS)))
    mean = np.asarray(bars.dimension_values(1))
    by_point = stored_by_point(store, sweep)
    assert list(x) == [3, 6]
    np.testing.assert_allclose(mean, [np.mean([r.test_rmse for r in by_point[v]]) for v in (3, 6)], rtol=1e-9)
    sd = np.asarray(bars.dimension_values(2))
    np.testing.assert_allclose(sd, [np.std([r.test_rmse for r in by_point[v]], ddof=1) for v in (3, 6)], rtol=1e-9)
    singles = next(layer for layer in overlay if isinstance(layer, hv.Scatter) and layer.label == "single runs")
    assert sorted(singles.dimension_values(1)) == pytest.approx(sorted(r.test_rmse for rs in by_point.values()
                                                                       for r in rs))


def test_a_discover_study_on_the_table_shows_the_same_columns(page, store, table):
    plan = plan_candidates({"dataset": f"csv:{table}", "seed": 0}, seeds=1, steps=20,
                           model_config={"num_inducing": 3}, train={"batch_size": 0, "learning_rate": 0.03})
    sweep_id = run_candidates(plan, store, serial=True)
    page.open_sweep(sweep_id)
    frame = page.following.table.value
    titles = page.following.table.titles
    assert "test error (%)" not in frame.columns and titles["test RMSE"] == "test RMSE (price_keur)"
    records = {r.id: r for r in store.sweeps.runs(sweep_id)}
    assert [row["test RMSE"] for _, row in frame.iterrows()] == pytest.approx(
        [records[int(run)].test_rmse for run in frame["run"]], rel=1e-3)
    assert page.following.error_pane.object.opts.get().kwargs["title"].startswith("Test RMSE against ")


def test_the_setting_selector_never_says_now_none():
    labels = list(ComparePage().parameter_options())
    assert not [label for label in labels if "None" in label], labels
    assert "model.lengthscale (now empty: median distance between training inputs)" in labels


def test_a_target_columns_name_is_escaped_in_the_rmse_columns_title():
    """A title is HTML to Tabulator, and a column's name comes from the user's file."""
    from invlab.dashboard.compare.sweep_rows import titles

    shown = titles([AXIS], "rmse", "<img src=x onerror=alert(1)>")
    assert shown["test RMSE"] == "test RMSE (&lt;img src=x onerror=alert(1)&gt;)"
    assert titles([AXIS], "rmse", None)["test RMSE"] == "test RMSE (target units)"
    assert "test RMSE" not in titles([AXIS], "error", None)
