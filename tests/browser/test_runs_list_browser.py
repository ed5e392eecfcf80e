"""The Runs tab on a server whose store holds hundreds of runs, as a person meets it: the list says it shows the
newest 100 of them, Older ▸ pages back, and a search finds an old run by name, which then opens."""
import pytest

from invlab.train import RunStore
from pagekit import TEXT, browser_page, open_tab, poll, serve_dashboard
from tests.dashboard.explorer.test_runs_list import RUNS, fill


@pytest.fixture(scope="module")
def served_with_many_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("many-runs")
    (root / "data").mkdir()
    with RunStore(root / "data" / "runs.sqlite") as store:
        fill(store)  # written straight into the store: no training
    with serve_dashboard(root) as url:
        yield url


def _text_with(page, words: str) -> str:
    return poll(lambda: (lambda t: t if words in t else None)(page.evaluate(TEXT)), timeout=60)


def test_the_runs_list_says_how_many_it_shows_and_finds_an_old_run(served_with_many_runs):
    with browser_page() as (page, errors):
        page.goto(served_with_many_runs)
        poll(lambda: page.locator(".bk-tab", has_text="Training").count() > 0, timeout=90)  # the page is drawn
        open_tab(page, "Training")  # a first visit opens on the lessons
        open_tab(page, "Runs")
        _text_with(page, f"showing the newest 100 of {RUNS} runs")
        page.get_by_role("button", name="Older ▸").click()
        _text_with(page, f"showing runs 101–200 of {RUNS}")
        search = page.get_by_placeholder("id, name, model or data set")
        search.fill("needle")
        search.press("Enter")
        _text_with(page, f"1 of {RUNS} runs match 'needle'")
        box = page.locator(".bk-input-group", has_text="Stored runs").locator("select").first
        poll(lambda: box.locator("option").all_inner_texts() == ["#7 needle: svgp on wine — finished, step 0"],
             timeout=30)
        page.get_by_role("button", name="Open run").click()
        _text_with(page, "opened stored run 7")
        assert not errors, errors
