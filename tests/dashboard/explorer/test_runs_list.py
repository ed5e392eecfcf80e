"""The Runs tab's list of stored runs on a store of hundreds: it says how many it shows of how many, pages through
them (older, newer) and finds a run by id, name, model or data set; `invlab runs` says when it shows only part."""
import os

import pytest

from invlab.dashboard import Explorer
from invlab.train import RunConfig, RunStore
from tests.helpers.cli import run_main

RUNS = 260  # more than a page (100) and more than `invlab runs` shows by default (50)


def fill(store: RunStore, count: int = RUNS) -> None:
    """`count` finished runs written straight into the store (no training): run 7 is the loop 'needle' on wine."""
    digits, wine = RunConfig(data={"dataset": "digits"}).to_json(), RunConfig(data={"dataset": "wine"}).to_json()
    for i in range(1, count + 1):
        needle = i == 7
        store.runs.create(wine if needle else digits, "svgp", "wine" if needle else "digits", status="finished",
                         name="needle" if needle else f"loop-{i}")


@pytest.fixture
def explorer(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    fill(store)
    e = Explorer(store=store)
    e.__panel__()
    yield e
    e.close()


def test_the_list_says_it_shows_the_newest_100_and_pages_through_the_rest(explorer):
    runs = explorer.runs
    runs.refresh()
    assert len(runs.select.options) == 100
    assert f"showing the newest 100 of {RUNS} runs" in runs.shown.object
    assert min(runs.select.options.values()) == RUNS - 99
    runs.older.clicks += 1
    assert max(runs.select.options.values()) == RUNS - 100 and min(runs.select.options.values()) == RUNS - 199
    assert f"showing runs 101–200 of {RUNS}" in runs.shown.object
    runs.older.clicks += 1
    assert sorted(runs.select.options.values()) == list(range(1, RUNS - 199))
    assert runs.older.disabled and not runs.newer.disabled  # the oldest page: nothing older
    runs.newer.clicks += 1
    runs.newer.clicks += 1
    assert max(runs.select.options.values()) == RUNS and runs.newer.disabled


@pytest.mark.parametrize("query", ["needle", "7", "#7", "WINE"])
def test_a_search_finds_an_old_run_that_then_opens(explorer, query, wait_until):
    runs = explorer.runs
    runs.refresh()
    runs.search.value = query
    assert 7 in runs.select.options.values(), runs.select.options
    if query != "7":  # "7" also matches 17, 70, loop-7x names …
        assert list(runs.select.options.values()) == [7]
        assert f"1 of {RUNS} runs" in runs.shown.object and query in runs.shown.object
    runs.select.value = 7
    runs.open_selected()
    wait_until(lambda: "opened stored run 7" in explorer.session.message, explorer)


def test_a_search_is_shown_as_text_and_finds_nothing_in_words(explorer):
    runs = explorer.runs
    runs.refresh()
    runs.search.value = "<b>nothing%_"
    assert runs.select.options == {} and "<b>" not in runs.shown.object
    assert "no stored run matches" in runs.shown.object


def test_invlab_runs_says_when_it_shows_only_part_of_the_store(capsys):
    with RunStore() as store:
        fill(store, 60)
    code, out, _ = run_main(capsys, "runs")
    assert code == 0 and "showing the newest 50 of 60 runs" in out and "--limit 0" in out
    code, out, err = run_main(capsys, "runs", "--json")
    assert len(out.splitlines()) == 50 and "showing the newest 50 of 60 runs" in err
    code, out, _ = run_main(capsys, "runs", "--limit", "0")
    assert "showing" not in out and len(out.splitlines()) == 61
    assert os.environ["INVLAB_DATA"]  # the test's own data directory (tests/conftest.py)
