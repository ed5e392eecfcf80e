"""The user's own file on a served page, as a user meets it: a CSV in a folder the server was started with
(`invlab serve --allow-data-dir DIR`) is offered in the Data tab's dataset box; picking it and pressing Start trains
a regression on it, and the test RMSE curve fills, in the price's own units."""
import numpy as np
import pytest

from pagekit import browser_page, column_length, poll, serve_dashboard


@pytest.fixture(scope="module")
def served_with_csv(tmp_path_factory):
    directory = tmp_path_factory.mktemp("own-data")
    folder = directory / "mine"
    folder.mkdir()
    rng = np.random.default_rng(0)
    area = rng.uniform(40, 200, 400)
    price = 1000.0 * area + rng.normal(0, 5000, 400)  # prices of the order of 10^5
    lines = ["area,rooms,price"] + [f"{a:.2f},{int(a // 30)},{p:.0f}" for a, p in zip(area, price)]
    (folder / "houses.csv").write_text("\n".join(lines) + "\n")
    with serve_dashboard(directory, args=["--allow-data-dir", str(folder)]) as url:
        yield url, folder / "houses.csv"


def test_a_csv_in_an_allowed_folder_is_picked_and_trains(served_with_csv):
    url, csv = served_with_csv
    choice = f"csv:{csv.resolve()}"
    with browser_page() as (page, errors):
        page.goto(url + "?model.num_inducing=10&train.eval_every=5")
        page.locator(".bk-tab", has_text="Data").first.click()
        box = page.locator(".bk-input-group", has_text="Dataset").locator("select").first
        poll(lambda: choice in box.locator("option").all_inner_texts(), timeout=60)
        box.select_option(choice)
        poll(lambda: "houses.csv" in page.evaluate("() => window.location.href"), timeout=30)
        page.get_by_role("button", name="▶ Start").click()
        status = page.locator(".invlab-status").first
        poll(lambda: "houses.csv" in status.inner_text(), timeout=90)
        poll(lambda: column_length(page, "test_rmse") >= 3, timeout=120)
        rmse = page.evaluate("""() => {
          for (const doc of Bokeh.documents)
            for (const m of doc._all_models.values())
              if (m.data && m.data.test_rmse && m.data.test_rmse.length) return Array.from(m.data.test_rmse);
          return null;
        }""")
        assert 1e3 < rmse[-1] < 1e5  # the price's units (a standardised RMSE would be below 2)
        assert not errors, errors
