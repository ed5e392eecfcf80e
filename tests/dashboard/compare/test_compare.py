"""The Compare page without a browser: real sweeps on a Dask LocalCluster of 2 worker processes, launched from the
page as a user would (a setting and its values from the Training page's configuration, a built-in study), followed
through the page's tick, and checked against the run store with independent numpy arithmetic.

One cluster serves the session (`scheduler` in conftest.py; its address goes in the page's "Dask scheduler" field),
and every sweep is tiny (digits, 120 training points, 20 steps), so the module adds about half a minute.
"""
import json
from collections import defaultdict

import holoviews as hv
import numpy as np
import pytest

from invlab.dashboard import Explorer
from invlab.dashboard.compare import ComparePage
from invlab.dashboard.compare.data import RANGE_AXES, field_name
from invlab.train import RunConfig, RunStore
from tests.helpers.panes import pane_text
from tests.helpers.ticking import assert_opened, follow

TINY = RunConfig(model="invariant",
                 data={"dataset": "digits", "rotate": 90.0, "subset": 120, "test_subset": 60, "seed": 0},
                 model_config={"augmentation": "rotation", "num_inducing": 10, "num_samples": 4,
                               "num_predict_samples": 8, "learn_ranges": False},
                 train={"steps": 20, "batch_size": 64, "eval_every": 0, "log_every": 5})


@pytest.fixture(scope="module")
def explorer(tmp_path_factory, scheduler):
    store = RunStore(tmp_path_factory.mktemp("compare") / "runs.sqlite")
    e = Explorer(TINY, store=store)
    e.__panel__()
    e.compare.context.scheduler = scheduler
    yield e
    e.close()
    store.close()


@pytest.fixture(scope="module")
def rotation_sweep(explorer):
    """model.init_rotation ∈ {0, 90} × 2 seeds, launched with the page's form and button."""
    page = explorer.compare
    page.form.parameter.value = "model.init_rotation"
    page.form.values.value = "0, 90"
    page.form.seeds.value = 2
    page.form.launch_button.clicks += 1
    # the click answers at once: the runs are listed before any has trained, the sweep runs on its own thread
    assert page.state == "starting" and not page.form.form_error.visible, pane_text(page.form.form_error)
    assert page.following.runner.thread.is_alive()
    assert list(page.following.table.value["status"]) == ["queued"] * 4
    follow(page, lambda: page.state == "finished")
    return page.sweep_id


def stored_points(store, sweep_id):
    """{run id: (point, seed, record)} read straight from the store."""
    out = {}
    for record in store.sweeps.runs(sweep_id):
        info = store.sweeps.info(record.id)
        out[record.id] = (info["point"], info["seed"], record)
    return out


def plotted(overlay, element_type, vdim: str):
    """(x, y[, extra vdims]) arrays of the first `element_type` layer of `overlay` whose first value column is
    `vdim`."""
    for layer in overlay:
        if isinstance(layer, element_type) and layer.vdims and layer.vdims[0].name == vdim:
            return [np.asarray(layer.dimension_values(d)) for d in layer.dimensions()]
    raise AssertionError(f"no {element_type.__name__} of {vdim} in {overlay}")


def test_table_rows_are_the_stored_runs(explorer, rotation_sweep):
    page, store = explorer.compare, explorer.store
    stored = stored_points(store, rotation_sweep)
    table = page.following.table.value
    assert len(stored) == 4 and len(table) == 4
    assert sorted(table["run"]) == sorted(stored)
    column = field_name("model.init_rotation")
    for _, row in table.iterrows():
        point, seed, record = stored[int(row["run"])]
        assert row["status"] == record.status == "finished"
        assert row[column] == point["model.init_rotation"] and row["seed"] == seed
        assert row["ELBO"] == pytest.approx(record.full_elbo, abs=0.01)
        assert row["test error (%)"] == pytest.approx(100 * record.test_error, abs=0.01)
    assert {float(v) for v in table[column]} == {0.0, 90.0} and set(table["seed"]) == {0, 1}
    assert page.following.table.titles[column] == "model.init_rotation"  # the column says the setting's dotted name
    assert not page.following.not_comparable.visible  # same data, likelihood and estimator


def test_plots_show_mean_and_sd_over_seeds_as_numpy_computes_them(explorer, rotation_sweep):
    page, store = explorer.compare, explorer.store
    by_angle = defaultdict(lambda: ([], []))
    for point, _, record in stored_points(store, rotation_sweep).values():
        elbos, errors = by_angle[point["model.init_rotation"]]
        elbos.append(record.full_elbo)
        errors.append(100 * record.test_error)
    angles = np.array(sorted(by_angle))
    elbo_mean = np.array([np.mean(by_angle[a][0]) for a in angles])
    elbo_sd = np.array([np.std(by_angle[a][0], ddof=1) for a in angles])
    error_mean = np.array([np.mean(by_angle[a][1]) for a in angles])
    error_sd = np.array([np.std(by_angle[a][1], ddof=1) for a in angles])

    x, mean, *_ = plotted(page.following.elbo_pane.object, hv.Curve, "elbo_mean")
    np.testing.assert_allclose(x.astype(float), angles)
    np.testing.assert_allclose(mean, elbo_mean, rtol=1e-9)
    x, mean, sd = plotted(page.following.elbo_pane.object, hv.ErrorBars, "elbo_mean")
    np.testing.assert_allclose(sd, elbo_sd, rtol=1e-9)
    x, mean, sd = plotted(page.following.error_pane.object, hv.ErrorBars, "error_mean")
    np.testing.assert_allclose(mean, error_mean, rtol=1e-9)
    np.testing.assert_allclose(sd, error_sd, rtol=1e-9)
    assert page.following.elbo_pane.object.opts.get().kwargs["title"] == "ELBO against rotation range α (°)"

    # the curves plot: one line per run, grouped (and coloured) by the swept value, seeds sharing a legend entry
    lines = defaultdict(dict)
    for layer in page.following.curves_pane.object:
        lines[layer.label][int(layer.dimension_values("run")[0])] = layer.dimension_values("run_elbo")
    assert set(lines) == {"init_rotation 0°", "init_rotation 90°"}
    for run_id, (point, _, _) in stored_points(store, rotation_sweep).items():
        _, values = store.metrics.read(run_id, ["elbo"])["elbo"]
        np.testing.assert_allclose(lines[f"init_rotation {point['model.init_rotation']:g}°"][run_id], values)


def test_clicking_a_row_opens_that_run_on_the_training_page(explorer, rotation_sweep, wait_until):
    page = explorer.compare
    explorer.page.pages.active = 3
    row = 2
    run_id = int(page.following.table.value.iloc[row]["run"])
    page.following.table.selection = [row]  # what a click on the row sends
    assert_opened(explorer, run_id, "elbo", wait_until)
    shown = page.following.table.value.iloc[row][field_name("model.init_rotation")]
    assert explorer.settings.model_config.init_rotation == shown


def test_the_link_opens_a_stored_sweep(explorer, rotation_sweep):
    other = ComparePage(store=explorer.store)
    assert other.read_query({"page": "compare", "sweep": str(rotation_sweep)}) == []
    assert other.sweep_id == rotation_sweep and len(other.following.table.value) == 4
    assert other.query() == {"sweep": str(rotation_sweep)}
    select = other.form.sweeps_select
    assert f"#{rotation_sweep}" in select.labels[-1] or rotation_sweep in select.values
    refused = other.read_query({"sweep": "9999"})
    assert refused and "no sweep with id 9999" in refused[0]
    assert other.read_query({"sweep": "abc"})[0].startswith("sweep='abc' refused")
    # the Explorer writes the page and the sweep into the address bar while the Compare page is shown
    explorer.link.location = object()
    explorer.page.pages.active = 3
    explorer.compare.sweep_id = rotation_sweep
    assert f"page=compare&sweep={rotation_sweep}" in explorer.link.url_field.value
    explorer.link.location = None


def test_a_stored_sweeps_columns_come_as_a_new_table_and_its_rows_in_place(explorer, rotation_sweep):
    """Tabulator builds a table a moment after its view is drawn, and a change of its columns reaching it in that
    moment threw in Chromium ("reading 'firstChild'" in setColumns; a stored sweep opened by its link, 1 in 12 on a
    busy machine). Opening a stored sweep (other columns: its varied setting's) shows a new Tabulator built with
    those columns, titles and rows; the table drawn before keeps its columns; redrawing the same sweep changes the
    rows of the same table, and never its columns."""
    other = ComparePage(store=explorer.store)
    first = other.following.table
    drawn = list(first.value.columns)
    changed = []
    first.param.watch(lambda *events: changed.extend(e.name for e in events), ["titles", "value"])
    assert other.read_query({"page": "compare", "sweep": str(rotation_sweep)}) == []
    shown = other.following.table
    assert shown is not first and "titles" not in changed and first.titles == {}
    assert list(first.value.columns) == drawn and list(shown.value.columns) != drawn
    assert len(shown.value) == 4 and "model.init_rotation" in "".join(map(str, shown.titles.values()))
    assert other.following.run_table.__panel__().objects == [shown]  # in the first one's place on the page
    changes = []
    shown.param.watch(lambda *events: changes.append(sorted(e.name for e in events)), ["titles", "value"])
    other.following.run_table.show(shown.value.iloc[:2].copy(), dict(shown.titles))
    assert other.following.table is shown and changes == [["value"]] and len(shown.value) == 2


def test_a_bad_value_is_refused_beside_the_form(explorer):
    page = explorer.compare
    page.form.parameter.value = "model.init_rotation"
    page.form.values.value = "0, 400"
    page.form.launch_button.clicks += 1
    assert page.form.form_error.visible and "init_rotation" in pane_text(page.form.form_error)
    assert page.state in ("finished", "idle")  # nothing started
    page.form.values.value = ""
    page.form.launch_button.clicks += 1
    assert "enter the values" in pane_text(page.form.form_error)


def test_runs_on_other_data_are_not_compared_on_one_axis(explorer):
    page = explorer.compare
    page.form.parameter.value = "data.rotate"
    page.form.values.value = "0, 90"
    page.form.seeds.value = 1
    page.form.launch_button.clicks += 1
    follow(page, lambda: page.state == "finished")
    assert page.following.not_comparable.visible
    reason = page.following.cmp.reason
    assert "different data" in reason and "data.rotate" in reason
    assert reason in pane_text(page.following.not_comparable)


def test_a_learned_range_run_is_marked_where_its_range_ended(explorer):
    page = explorer.compare
    page.form.study_select.value = "rotation-choice"
    page.form.quick.value = True
    page.form.study_button.clicks += 1
    follow(page, lambda: page.state == "finished")
    assert not page.following.not_comparable.visible
    learned_runs = [r for r in explorer.store.sweeps.runs(page.sweep_id)
                    if explorer.store.sweeps.info(r.id)["point"]["model.learn_ranges"]]
    assert len(learned_runs) == 1
    ended = explorer.store.sweeps.info(learned_runs[0].id)["learned"][RANGE_AXES["model.init_rotation"][0]]
    lines = [layer.data for layer in page.following.elbo_pane.object if isinstance(layer, hv.VLine)]
    assert lines == [pytest.approx(ended)]
    # the learned run is no point of the fixed-range curve: that curve holds the fixed angles only
    x, y, *_ = plotted(page.following.elbo_pane.object, hv.Curve, "elbo_mean")
    assert [float(v) for v in x] == [0.0, 45.0, 90.0, 135.0, 179.0]
    assert json.dumps(sorted(page.following.table.value["status"])) == json.dumps(["finished"] * 6)
    # the lesson: the short form is long enough for the ELBO to choose the data's 90° and the learned range to find it
    assert float(x[int(np.argmax(y))]) == 90.0, (list(x), list(y))
    assert ended == pytest.approx(90.0, abs=10.0)


def test_stop_ends_the_sweep_and_keeps_what_finished(explorer):
    page = explorer.compare
    page.form.parameter.value = "train.steps"
    page.form.values.value = "400, 500"
    page.form.seeds.value = 2
    page.form.launch_button.clicks += 1
    follow(page, lambda: any(s == "running" for s in page.following.table.value["status"]))
    page.following.stop_button.clicks += 1
    assert page.state == "stopping…"
    follow(page, lambda: page.state == "stopped")
    stored = explorer.store.sweeps.runs(page.sweep_id)
    assert len(stored) < 4 and "runs stored" in page.message
    statuses = list(page.following.table.value["status"])
    assert statuses.count("not run") == 4 - len(stored) and statuses.count("finished") == len(stored)
    assert page.following.stop_button.disabled and page.following.resume_button.visible
    # opened again later, the sweep says what is missing and offers to run it
    other = ComparePage(store=explorer.store)
    other.open_sweep(page.sweep_id)
    assert other.state == "stopped" and other.following.resume_button.visible
    assert "Resume runs the rest" in other.message
    assert sorted(other.following.table.value["status"]) == sorted(statuses)


def test_a_sweep_that_cannot_start_says_why_and_the_page_goes_on(tmp_path, monkeypatch):
    import invlab.dashboard.compare.runner as runner
    from invlab.errors import ConfigError

    def no_cluster(spec, **kwargs):
        raise ConfigError("no Dask scheduler answered at tcp://127.0.0.1:1; start one with `dask scheduler`")

    monkeypatch.setattr(runner, "run_sweep", no_cluster)  # where the sweep's thread looks it up
    store = RunStore(tmp_path / "runs.sqlite")
    page = ComparePage(store=store)
    page.launch_study("symmetric-2d-swap", quick=True)
    follow(page, lambda: page.state == "failed", timeout=30)
    assert "no Dask scheduler answered" in page.message and page.following.stop_button.disabled
    assert set(page.following.table.value["status"]) == {"not run"}  # the planned runs say they did not run
    page.launch_study("no-such-study")
    assert page.form.form_error.visible and "unknown study 'no-such-study'" in pane_text(page.form.form_error)
    store.close()
