"""A regression sweep on the user's own table, opened by its link on the shared served dashboard in Chromium: the
sweep table's header names the test RMSE in the target column's units and the test NLPD (no test error column), and
the plot beside the ELBO is the test RMSE against the swept setting with the stored means over seeds.

The sweep (2 runs of 20 steps on a 40-row CSV) is trained in this process, without Dask, into the server's store."""
from collections import defaultdict

import numpy as np

from invlab.sweeps import SweepSpec
from invlab.train import RunConfig, RunStore
from pagekit import browser_page, page_texts, poll
from tests.helpers.serial_sweep import house_prices, run_sweep_serially

TRAIN = {"steps": 20, "batch_size": 0, "learning_rate": 0.03, "eval_every": 0, "log_every": 5}


def test_a_regression_sweep_shows_its_rmse_in_the_targets_units(served_home):
    url, folder = served_home
    table = house_prices(folder / "houses.csv")
    base = RunConfig("svgp", {"dataset": f"csv:{table}", "seed": 0}, {"num_inducing": 3}, TRAIN)
    spec = SweepSpec(name="houses", base=base, vary={"model.num_inducing": [3, 6]}, seeds=[0])
    with RunStore(folder / "data" / "runs.sqlite") as store:
        sweep = run_sweep_serially(spec, store)
        by_point = defaultdict(list)
        for record in store.sweeps.runs(sweep):
            by_point[store.sweeps.info(record.id)["point"]["model.num_inducing"]].append(record.test_rmse)
    expected = [np.mean(by_point[v]) for v in (3, 6)]

    with browser_page() as (page, errors):
        page.goto(url + f"?page=compare&sweep={sweep}")
        rows = page.locator(".invlab-sweep-table .tabulator-row")
        poll(lambda: rows.count() == 2, timeout=120)
        headers = page.locator(".invlab-sweep-table .tabulator-col-title").all_inner_texts()
        assert "test RMSE (price_keur)" in headers and "test NLPD" in headers, headers
        assert "test error (%)" not in headers, headers
        plotted = poll(lambda: page.evaluate("""() => {
          for (const doc of Bokeh.documents)
            for (const m of doc._all_models.values())
              if (m.data && m.data.rmse_mean && m.data.n) return Array.from(m.data.rmse_mean);
          return null;
        }"""), timeout=30)
        np.testing.assert_allclose(plotted, expected, rtol=1e-9)
        texts = page_texts(page)
        assert "Test RMSE against inducing points M" in texts and "test RMSE (price_keur)" in texts, texts
        assert not errors, errors
