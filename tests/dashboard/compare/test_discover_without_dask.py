"""The Compare page's ▶ Discover where only the dashboard's extra is installed (no Dask distributed): the page says,
under the form, that Discover needs Dask and what works instead, and stores no sweep."""
from invlab.dashboard import Explorer
from invlab.train import RunConfig, RunStore
from tests.bad_inputs.worlds import hide_module
from tests.helpers.panes import pane_text

SMALL = RunConfig(model="invariant", data={"dataset": "digits", "subset": 60, "test_subset": 30},
                  model_config={"augmentation": "rotation", "num_inducing": 5}, train={"steps": 10})


def test_discover_without_dask_says_what_works_instead_and_stores_nothing(tmp_path, monkeypatch):
    hide_module(monkeypatch, "distributed")
    store = RunStore(tmp_path / "runs.sqlite")
    explorer = Explorer(SMALL, store=store)
    try:
        explorer.__panel__()
        explorer.page.pages.active = 3  # the Compare tab
        study = explorer.compare.discover
        study.form.candidates.value = ["rotation"]
        study.form.start_button.clicks += 1
        assert study.form.error.visible and study.follower.runner is None and study.state == "idle"
        shown = pane_text(study.form.error)
        assert "Dask distributed, which is not installed" in shown
        assert "pip install 'invariance-lab[sweeps]'" in shown
        assert "invlab discover --dataset digits --serial" in shown  # what trains without Dask
        assert not study.form.start_button.disabled
        assert store.sweeps.list() == [] and store.runs.list() == []
    finally:
        explorer.close()
        store.close()
