"""The user's own file on a served page, as a user meets it: a CSV in a folder the server was started with
(`invlab serve --allow-data-dir DIR`) is offered in the Data tab's dataset box; picking it and pressing Start trains
a regression on it, and the test RMSE curve fills, in the price's own units."""
import numpy as np
import pytest

from pagekit import browser_page, column_length, page_texts, poll, serve_dashboard


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
    x1, x2 = rng.uniform(0, 1, 300), rng.uniform(0, 1, 300)
    stars = np.clip(np.round(1 + 4 * (0.6 * x1 + 0.4 * x2)), 1, 5).astype(int)  # five whole numbers: classes
    (folder / "ratings.csv").write_text("x1,x2,stars\n" + "\n".join(f"{a:.4f},{b:.4f},{r}" for a, b, r
                                                                   in zip(x1, x2, stars)) + "\n")
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
        # the columns are named where the page shows their values (it said "target units", "x₁" and "x₂")
        poll(lambda: {"test RMSE (price)", "true price"} <= set(page_texts(page)), timeout=60)
        assert "Hyper-parameters (of the standardised inputs and target)" in " ".join(page_texts(page))
        assert not errors, errors


def test_the_task_selector_turns_a_star_rating_into_a_regression(served_with_csv):
    """A target of five whole numbers is inferred as five classes; the hint used to name a Python argument. The Data
    tab's Task selector (absent for the bundled digits) makes it a regression: the page then plots the test RMSE."""
    url, csv = served_with_csv
    choice = f"csv:{(csv.parent / 'ratings.csv').resolve()}"
    with browser_page() as (page, errors):
        page.goto(url + "?model.num_inducing=10&train.eval_every=5")
        page.locator(".bk-tab", has_text="Data").first.click()
        task = page.locator(".bk-input-group", has_text="Task").locator("select")
        assert task.count() == 0 or not task.first.is_visible()  # digits: nothing to choose
        box = page.locator(".bk-input-group", has_text="Dataset").locator("select").first
        poll(lambda: choice in box.locator("option").all_inner_texts(), timeout=60)
        box.select_option(choice)
        poll(lambda: task.count() > 0 and task.first.is_visible(), timeout=30)
        task.first.select_option(label="regression")
        poll(lambda: "regression" in page.evaluate("() => window.location.href"), timeout=30)
        page.get_by_role("button", name="▶ Start").click()
        poll(lambda: column_length(page, "test_rmse") >= 2, timeout=120)
        assert column_length(page, "test_error") == 0
        assert not errors, errors
