"""The Compare page in a real headless Chromium, on a served dashboard with its own run store.

The module runs one small sweep the way a user does: the quick "rotation-choice" study, launched with the page's
button (the server starts a Dask LocalCluster of its own). Then a fresh page opens that stored sweep by its link
(`?page=compare&sweep=ID`), the table and the ELBO-against-range plot are checked against the store, and a click
on a row opens that run, curves and all, on the Training page. Every request the pages make stays on 127.0.0.1
(Tabulator's JavaScript included).
"""
import sqlite3
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from invlab.train import RunStore
from pagekit import INJECTED, browser_page, column_length, open_tab, page_texts, poll, serve_dashboard


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    directory = tmp_path_factory.mktemp("compare-served")
    with serve_dashboard(directory) as url:
        yield url, Path(directory) / "data" / "runs.sqlite"


def offsite(requests: list[str], base: str) -> list[str]:
    """Requests that left the server (data: and blob: URLs are the page's own)."""
    host = base.split("/app")[0]
    ws = host.replace("http://", "ws://")
    return [u for u in requests if not u.startswith((host, ws, "data:", "blob:"))]


def rows_text(page) -> list[str]:
    return page.locator(".invlab-sweep-table .tabulator-row").all_inner_texts()


def settled_rows(page, quiet_s: float = 1.0, timeout: float = 60.0) -> list[str]:
    """The table's rows once they have stayed the same for `quiet_s` (Tabulator redraws its rows a moment after
    its data or titles change; a click on a row being redrawn selects nothing)."""
    deadline, last, since = time.time() + timeout, None, time.time()
    while time.time() < deadline:
        rows = rows_text(page)
        if rows != last:
            last, since = rows, time.time()
        elif rows and time.time() - since >= quiet_s:
            return rows
        time.sleep(0.2)
    raise AssertionError(f"the table's rows kept changing for {timeout:g} s; last {last!r}")


def open_row(page, run_id: int, timeout: float = 120.0) -> str:
    """Click the table's row of run `run_id` as a person does, and return the status line once it says the run was
    opened. Tabulator ignores clicks while it rebuilds itself (its rows are drawn a moment before it takes clicks,
    after a sweep's columns arrive); a person whose click did nothing clicks again, and so does this, after a few
    seconds without an answer."""
    cells = page.locator(".invlab-sweep-table .tabulator-row .tabulator-cell[tabulator-field=run]")
    status = page.locator(".invlab-status").first
    shown, deadline = [], time.time() + timeout
    compare_shown = page.locator(".bk-tab.bk-active", has_text="Compare")
    while time.time() < deadline:
        if compare_shown.count():  # (a click taken late has switched to the Training page: nothing to click again)
            settled_rows(page)  # as a person clicks a row they have read, not one the table is still drawing
            cells.nth([t.strip() for t in cells.all_inner_texts()].index(str(run_id))).click()
        answered = time.time() + 8
        while time.time() < min(answered, deadline):
            shown.append((status.all_inner_texts() or [""])[0])  # on the Training page, drawn once it is shown
            if f"opened stored run {run_id}" in shown[-1]:
                return shown[-1]
            if f"opening stored run {run_id}" in shown[-1]:  # the click was taken: the run is being built
                answered = deadline
            time.sleep(0.2)
    message = page.locator("[data-field=sweep-message]").all_inner_texts()
    raise AssertionError(f"run {run_id} was not opened; the status line says {shown[-1:]!r}, the Compare page's "
                         f"message {message!r}")


@pytest.fixture(scope="module")
def launched(served):
    """The quick rotation-choice study, launched from the page; (sweep id, requests, rows' text when finished)."""
    url, _ = served
    with browser_page() as (page, errors):
        requests = []
        page.on("request", lambda request: requests.append(request.url))
        page.goto(url + "?page=compare")
        page.get_by_role("button", name="▶ Run study").click(timeout=90_000)
        state = page.locator("[data-field=sweep-state]").first
        poll(lambda: state.inner_text() in ("starting", "running"), timeout=30)
        # the runs are listed at once, before any has trained
        poll(lambda: len(rows_text(page)) == 6, timeout=30)
        poll(lambda: state.inner_text() == "finished", timeout=300, interval=0.5)
        poll(lambda: all("finished" in row for row in rows_text(page)), timeout=30)
        sweep = int(page.locator("[data-field=sweep]").first.inner_text().lstrip("#"))
        rows = rows_text(page)
        assert not errors, errors
    return sweep, list(requests), rows


def test_a_built_in_study_launched_from_the_page_fills_the_table(served, launched):
    url, store_path = served
    sweep, requests, rows = launched
    store = RunStore(store_path)
    try:
        runs = store.sweeps.runs(sweep)
    finally:
        store.close()
    assert len(runs) == 6 and {r.status for r in runs} == {"finished"}
    for record in runs:  # each row shows its run's number and whole-data ELBO
        assert any(row.split()[0] == str(record.id) and f"{record.full_elbo:.2f}".rstrip("0").rstrip(".") in row
                   for row in rows), (record.id, record.full_elbo, rows)
    assert offsite(requests, url) == []


def test_a_stored_sweep_by_link_shows_its_data_and_opens_a_run(served, launched, tmp_path):
    url, store_path = served
    sweep, _, _ = launched
    store = RunStore(store_path)
    try:
        by_angle = defaultdict(list)
        learned_ids = []
        for record in store.sweeps.runs(sweep):
            point = store.sweeps.info(record.id)["point"]
            if point["model.learn_ranges"]:
                learned_ids.append(record.id)
            else:
                by_angle[point["model.init_rotation"]].append(record.full_elbo)
        opened = learned_ids[0]
        elbo_steps = len(store.metrics.read(opened, ["elbo"])["elbo"][0])
    finally:
        store.close()
    expected = np.array([np.mean(by_angle[a]) for a in sorted(by_angle)])

    with browser_page() as (page, errors):
        requests = []
        page.on("request", lambda request: requests.append(request.url))
        page.goto(url + f"?page=compare&sweep={sweep}")
        poll(lambda: len(rows_text(page)) == 6, timeout=90)
        assert page.locator("[data-field=sweep]").first.inner_text() == f"#{sweep}"
        # the ELBO against the rotation range: the mean over seeds at each fixed range, as the store has it
        plotted = page.evaluate("""() => {
          for (const doc of Bokeh.documents)
            for (const m of doc._all_models.values())
              if (m.data && m.data.elbo_mean && m.data.n) return Array.from(m.data.elbo_mean);
          return null;
        }""")
        np.testing.assert_allclose(plotted, expected, rtol=1e-9)
        assert sorted(by_angle)[int(np.argmax(plotted))] == 90.0  # the page shows the ELBO choosing the true angle
        titles = page_texts(page)
        assert "ELBO against rotation range α (°)" in titles and "rotation range α (°)" in titles
        page.screenshot(path=str(tmp_path / "compare.png"), full_page=True)
        assert (tmp_path / "compare.png").stat().st_size > 10_000

        # a click on the learned-range run opens it on the Training page with its ELBO curve
        open_row(page, opened)
        poll(lambda: column_length(page, "elbo") == elbo_steps, timeout=60)
        assert page.locator(".bk-tab.bk-active", has_text="Training").count() == 1
        assert offsite(requests, url) == []
        assert not errors, errors


def test_a_stored_sweeps_own_text_is_shown_as_text(served, launched):
    """A run store is a file people share: a sweep's name and a run's status and message read from it are shown as
    text in the table, the status line and the run list, never as markup. (Last in the module: it alters the
    stored sweep.)"""
    url, store_path = served
    sweep, _, _ = launched
    payload = '<img src=x onerror=window.__xss.push(1)><b id=inj-1>b</b>'
    with sqlite3.connect(store_path) as db:
        db.execute("UPDATE sweeps SET name = ? WHERE id = ?", (payload, sweep))
        run_id = db.execute("SELECT min(id) FROM runs WHERE sweep_id = ?", (sweep,)).fetchone()[0]
        db.execute("UPDATE runs SET status = ?, message = ? WHERE id = ?", (payload, payload, run_id))
    with browser_page() as (page, errors):
        page.add_init_script("window.__xss = [];")
        page.goto(url + f"?page=compare&sweep={sweep}")
        poll(lambda: any(payload in row for row in rows_text(page)), timeout=90)
        assert page.evaluate("() => window.__xss") == [] and page.evaluate(INJECTED) == []
        open_row(page, run_id)
        # the Runs list names the run with its stored status, as text
        poll(lambda: page.locator(".bk-tab", has_text="Runs").count() > 0, timeout=60)  # the Training page is shown
        open_tab(page, "Runs")
        poll(lambda: page.locator("select option", has_text=f"#{run_id} ").count() > 0, timeout=30)
        assert payload in page.locator("select option", has_text=f"#{run_id} ").first.inner_text()
        assert page.evaluate("() => window.__xss") == [] and page.evaluate(INJECTED) == []
        assert not errors, errors
