"""The discover report, opened from its file in a real Chromium: it shows the verdict, the ranking and its charts,
asks for nothing from anywhere (no CDN, no font, no image), and shows a data set's name that looks like HTML as text."""
from engine.sweeps.discover import plan_candidates, run_candidates
from engine.sweeps.discover_html import write_report
from engine.sweeps.discover_report import discover_report
from engine.train import RunStore
from pagekit import browser_page


def test_the_report_renders_offline_with_the_ranking_and_escapes_what_the_data_supplies(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    data = {"dataset": "digits", "rotate": 90, "subset": 100, "test_subset": 50}
    plan = plan_candidates(data, seeds=1, steps=30, orbits=["rotation", "flips"],
                           model_config={"num_inducing": 10, "num_samples": 2, "num_predict_samples": 4},
                           combine=False)
    report = discover_report(store, run_candidates(plan, store, serial=True))
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
        assert cells == [c.candidate for c in report.ranking] and set(cells) == {"none", "rotation", "flips"}
        assert page.locator("#verdict").inner_text() == report.verdict
        assert page.locator("svg polyline").count() == 1  # the learned rotation range over training
        assert page.locator("svg rect").count() >= 2  # a log Bayes factor bar per candidate (none's has width 0+)
        assert errors == []
