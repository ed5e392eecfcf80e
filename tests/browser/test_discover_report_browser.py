"""The discover report, opened from its file in a real Chromium: it shows the verdict, the ranking and its charts,
asks for nothing from anywhere (no CDN, no font, no image), and shows a data set's name that looks like HTML as text."""
import pytest

from invlab.sweeps.discover import plan_candidates, run_candidates
from invlab.sweeps.discover_html import write_report
from invlab.sweeps.discover_report import discover_report
from invlab.train import RunStore
from pagekit import browser_page, poll, serve_dashboard


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A small study stored as `invlab serve` would find it in its data directory: (that directory's parent, the
    study's report)."""
    root = tmp_path_factory.mktemp("discover")
    with RunStore(root / "data" / "runs.sqlite") as store:
        data = {"dataset": "digits", "rotate": 90, "subset": 100, "test_subset": 50}
        plan = plan_candidates(data, seeds=1, steps=30, orbits=["rotation", "affine"],
                               model_config={"num_inducing": 10, "num_samples": 2, "num_predict_samples": 4},
                               combine=False)
        return root, discover_report(store, run_candidates(plan, store, serial=True))


def test_the_report_renders_offline_with_the_ranking_and_escapes_what_the_data_supplies(study, tmp_path):
    _, report = study
    report.dataset = "<img src=x onerror=\"document.title='pwned'\">digits"  # as a file name could say
    path = write_report(report, tmp_path / "report.html")

    with browser_page() as (page, errors):
        requests = []
        page.on("request", lambda request: requests.append(request.url))
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        assert [url for url in requests if not url.startswith("file://")] == []  # nothing from anywhere else
        assert page.locator("img").count() == 0 and page.title().startswith("Which invariances does <img")
        heading = page.locator("h1").inner_text()
        assert heading == f"Which invariances does {report.dataset} have?"
        cells = page.locator("#ranking tbody tr td:nth-child(2)").all_inner_texts()
        assert cells == [c.candidate for c in report.ranking] and set(cells) == {"none", "rotation", "affine"}
        assert page.locator("#verdict").inner_text() == report.verdict
        assert page.locator("svg polyline").count() >= 2  # the learned ranges over training (rotation, affine)
        assert page.locator("svg rect").count() >= 2  # a log Bayes factor bar per candidate (none's has width 0+)
        # every label is drawn whole inside its chart (the Bayes factor chart's x-label lost its descenders at 1440 px)
        cut = page.evaluate("""() => [...document.querySelectorAll('svg')].flatMap(svg => {
          const box = svg.getBoundingClientRect();
          return [...svg.querySelectorAll('text')].map(t => [t.textContent, t.getBoundingClientRect()])
            .filter(([, r]) => r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5 || r.left < box.left - 0.5
                               || r.right > box.right + 0.5).map(([text]) => text);
        })""")
        assert cut == [], "\n".join(cut)
        assert errors == []


def test_the_pages_ranking_shows_every_cell_whole_at_1440_px(study):
    """At 1440 px the ranking's learned-range and NLPD columns ran into their neighbours: the table fitted its
    columns to the empty table a study starts with. Every cell of a stored study's ranking is now drawn whole."""
    root, report = study
    with serve_dashboard(root) as url, browser_page(1440, 900) as (page, errors):
        page.goto(url + f"?page=compare&discover={report.sweep_id}")
        cells = page.locator(".invlab-discover-table .tabulator-cell[tabulator-field]")  # the data's cells
        poll(lambda: cells.count() >= 3 * 10, timeout=90)
        ranges = page.locator(".invlab-discover-table .tabulator-cell[tabulator-field='learned range (final)']")
        assert any("[" in text for text in ranges.all_inner_texts())  # affine's learned bounds: the widest cell
        cut = [(c.get_attribute("tabulator-field"), c.inner_text()) for c in cells.all()
               if c.evaluate("e => e.scrollWidth > e.clientWidth + 1")]
        assert cut == [], cut
        assert errors == []
