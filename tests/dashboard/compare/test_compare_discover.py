"""The Compare page's Discover study without a browser: a real study on a Dask LocalCluster of 2 worker processes,
started from the page as a user does (the Training page's data in the data box, the candidates ticked, ▶ Discover),
followed through the page's tick, and checked against the run store with independent numpy arithmetic.

The study is small (rotated digits, 160 training points, 80 steps, 2 seeds, three candidates ticked) so the module
adds about half a minute.
"""

import math

import numpy as np
import pytest

from invlab.dashboard import Explorer
from invlab.dashboard.compare import ComparePage
from invlab.sweeps.discover_report import discover_report
from invlab.train import RunConfig, RunStore
from tests.helpers.panes import pane_text
from tests.helpers.ticking import assert_opened, follow

DATA = {"dataset": "digits", "rotate": 90.0, "subset": 160, "test_subset": 80, "seed": 0}
SMALL = RunConfig(model="invariant", data=DATA, model_config={"augmentation": "rotation", "num_inducing": 12},
                  train={"steps": 80, "batch_size": 80})
TICKED = ["rotation", "flips", "cyclic_shifts"]
DONE = ("finished", "failed", "stopped")  # the states a study's page ends in


def two_figures(mean: float, sd: float) -> str:
    """`mean ± sd` as the ranking shows it: the sd to two significant figures, the mean to the same decimal place."""
    places = max(0, 1 - math.floor(math.log10(sd)))
    return f"{mean:.{places}f} ± {sd:.{places}f}"


@pytest.fixture(scope="module")
def explorer(tmp_path_factory, scheduler):
    store = RunStore(tmp_path_factory.mktemp("discover") / "runs.sqlite")
    e = Explorer(SMALL, store=store)
    e.__panel__()
    e.compare.context.scheduler = scheduler
    e.page.pages.active = 3  # the Compare tab: its Discover study follows the Training page's data
    yield e
    e.close()
    store.close()


@pytest.fixture(scope="module")
def study(explorer):
    """The study as a user runs it: three candidates left ticked, two seeds, 80 steps, ▶ Discover; the statuses the
    table showed at every tick."""
    d = explorer.compare.discover
    d.form.candidates.value = list(TICKED)
    d.form.seeds.value, d.form.steps.value = 2, 80
    d.form.start_button.clicks += 1
    # the click answers at once: every candidate is listed before any has trained, the study runs on its own thread
    assert d.state == "starting" and not d.form.error.visible, d.form.error_text
    assert list(d.table.table.value["candidate"]) == ["none", *TICKED]
    assert set(d.table.table.value["status"]) == {"running"}
    seen = []
    follow(d, lambda: d.state in DONE, timeout=240,
           each=lambda: seen.append(list(d.table.table.value["status"])))
    assert d.state == "finished", d.message
    return d, seen


def test_the_data_box_follows_the_training_page_and_lists_the_candidates_that_apply(explorer):
    d = explorer.compare.discover
    assert d.form.data_box.value == "digits"
    assert "rotate 90" in pane_text(d.form.data_words) and "subset 160" in pane_text(d.form.data_words)
    options = list(d.form.candidates.options)
    assert {"rotation", "affine", "deformation", "rot90", "flips", "cyclic_shifts"} <= set(options)
    assert "none" not in options  # the baseline always trains
    words = pane_text(d.form.candidate_words)
    assert "none (no invariance) always trains" in words
    assert "permutations: acts on vectors" in words  # what does not apply, and why


def test_the_ranking_fills_in_live_and_is_the_store_ranked_by_mean_elbo(explorer, study):
    d, seen = study
    # live: a tick showed a finished candidate while others were still training
    assert any("finished" in statuses and "running" in statuses for statuses in seen), seen
    table = d.table.table.value
    store = explorer.store
    planned = ["none", *TICKED]
    assert set(planned) <= set(table["candidate"])
    means = {}
    records = {r.id: r for r in store.sweeps.runs(d.sweep_id)}
    for name in table["candidate"]:
        row = d.table.report.row(name)
        elbos = np.array([records[r].full_elbo for r in row.run_ids])
        assert len(elbos) == 2  # both seeds stored
        means[name] = elbos.mean()
        shown = table.loc[table["candidate"] == name, "ELBO (whole data)"].item()
        assert shown == two_figures(elbos.mean(), elbos.std(ddof=1)), (name, shown, elbos)
    assert list(table["candidate"]) == sorted(means, key=lambda n: -means[n])
    assert set(table["status"]) == {"finished"}
    none = table.loc[table["candidate"] == "none", "log BF vs none"].item()
    assert none == "0 (baseline)"
    rotation = d.table.report.row("rotation")
    assert rotation.log_bf == pytest.approx(means["rotation"] - means["none"], abs=1e-6)
    assert means["rotation"] > means["none"]  # digits turned by ±90° prefer rotation even after 80 steps
    verdict = pane_text(d.table.verdict)
    assert verdict.startswith("Verdict: ") and d.table.report.verdict in verdict
    assert "every candidate: 80 steps" in verdict  # the budget, stated
    assert "log Bayes factor" in pane_text(d.table.chart) or "<svg" in d.table.chart.object
    assert d.table.download.visible and d.table.download.filename == f"discover-{d.sweep_id}.html"
    html = d.table._report_file().getvalue().decode()
    assert html.startswith("<!DOCTYPE html>") and d.table.report.verdict.split(" (")[0] in html


def test_clicking_a_candidate_opens_its_run_on_the_training_page(explorer, study, wait_until):
    d, _ = study
    explorer.page.pages.active = 3
    row = list(d.table.table.value["candidate"]).index("rotation")
    run_id = d.table.report.row("rotation").run_ids[0]
    d.table.table.selection = [row]  # what a click on the row sends
    assert_opened(explorer, run_id, "range.rotation", wait_until)
    assert explorer.settings.model_config.augmentation == "rotation"


def test_the_link_shows_a_stored_study_and_refuses_what_is_not_one(explorer, study):
    d, _ = study
    assert explorer.compare.query()["discover"] == str(d.sweep_id)
    explorer.link.location = object()
    explorer.page.pages.active = 3
    explorer.link.update()
    assert f"page=compare&discover={d.sweep_id}" in explorer.link.url_field.value
    explorer.link.location = None
    from panel.io.location import Location

    explorer.read_location(Location(search=f"?page=compare&discover={d.sweep_id}"))
    assert explorer.notice == ""  # a page-level key of the link, not a setting the page refuses
    other = ComparePage(store=explorer.store)
    assert other.read_query({"page": "compare", "discover": str(d.sweep_id)}) == []
    assert list(other.discover.table.table.value["candidate"]) == list(d.table.table.value["candidate"])
    assert other.discover.table.verdict.object == d.table.verdict.object
    # a stored discover sweep opened from "Stored sweeps" shows its ranking too
    third = ComparePage(store=explorer.store)
    third.open_sweep(d.sweep_id)
    assert third.discover.sweep_id == d.sweep_id and len(third.discover.table.table.value) == len(d.table.table.value)


def test_stop_keeps_what_finished_and_the_report_says_it_is_partial(explorer):
    d = explorer.compare.discover
    d.form.data_box.value = "digits"
    d.form.candidates.value = ["rotation", "flips"]
    d.form.seeds.value, d.form.steps.value = 2, 400
    d.start()
    assert d.running()
    # a sweep cannot start on this page while the study runs
    explorer.compare.launch_study("rotation-choice")
    assert "the Discover study is running" in explorer.compare.form.form_error_text
    d.follower.stop_button.clicks += 1
    # the page's own state, not the runner's: the tick that saw the runner finish is the one that says so
    follow(d, lambda: d.state in DONE, timeout=120)
    assert d.state == "stopped"
    report = discover_report(explorer.store, d.sweep_id)
    assert report.partial and pane_text(d.table.verdict).startswith("Partial: Verdict:")
    assert not d.form.start_button.disabled and d.follower.stop_button.disabled


def test_a_regression_data_set_is_ranked_with_its_test_rmse(explorer):
    """On regression data the ranking's score column is the test RMSE (in the target's units), as the report's."""
    d = explorer.compare.discover
    d.form.data_box.value = "symmetric-2d"
    options = set(d.form.candidates.options)
    assert options >= {"permutations", "sign_flips"} and "rotation" not in options
    d.form.candidates.value = ["permutations"]
    d.form.seeds.value, d.form.steps.value = 2, 60
    d.start()
    follow(d, lambda: d.state in DONE, timeout=180)
    assert d.state == "finished", d.message
    table = d.table.table.value
    assert d.table.table.titles == {"test error": "test RMSE"}  # the title on the page (no names: a bundled set)
    records = {r.id: r for r in explorer.store.sweeps.runs(d.sweep_id)}
    for name in ("none", "permutations"):
        rmse = np.array([records[r].test_rmse for r in d.table.report.row(name).run_ids])
        shown = table.loc[table["candidate"] == name, "test error"].item()
        assert shown == two_figures(rmse.mean(), rmse.std(ddof=1)), (name, shown, rmse)


def test_a_page_closed_during_the_study_leaves_it_stopped_with_what_finished(tmp_path, monkeypatch, scheduler):
    """Closing the tab during a study used to close the run store the page had opened under the study's thread:
    the study failed on "Cannot operate on a closed database", its last runs were never stored and Stored sweeps
    listed it as running for as long as the server lived. Now the study's thread writes through its own connection:
    the runs that finished are kept and the study is marked interrupted (resumable), never left running."""
    monkeypatch.setenv("INVLAB_DATA", str(tmp_path))  # the page opens (and owns) its store there, as a served page
    e = Explorer(SMALL)
    e.__panel__()
    e.compare.context.scheduler = scheduler
    e.page.pages.active = 3
    d = e.compare.discover
    d.form.candidates.value = ["rotation", "flips"]
    d.form.seeds.value, d.form.steps.value = 1, 400
    d.start()
    follow(d, lambda: ": finished (run" in d.message, timeout=180)  # one run stored, the others training
    e.close(wait=False)
    d.follower.runner.thread.join(180)
    assert d.follower.runner.finished and d.follower.runner.error is None, d.follower.runner.error
    with RunStore(tmp_path / "runs.sqlite") as store:
        assert store.sweeps.get(d.sweep_id).status == "interrupted"
        runs = store.sweeps.runs(d.sweep_id)
        assert runs and all(r.status == "finished" for r in runs), [(r.status, r.message) for r in runs]
        assert discover_report(store, d.sweep_id).partial
