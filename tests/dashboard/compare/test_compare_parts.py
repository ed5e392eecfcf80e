"""The Compare page's parts without a browser or a Dask cluster: the launch form (`SweepForm`) and the sweep it follows
(`SweepFollowing`), each built alone with what it is handed, and the page that holds them."""
import panel as pn
import param
import pytest

from invlab.dashboard.compare import ComparePage
from invlab.dashboard.compare.context import CompareContext
from invlab.dashboard.compare.data import field_name
from invlab.dashboard.compare.form import SweepForm
from invlab.dashboard.compare.live import SweepFollowing
from invlab.dashboard.state.settings import RunSettings
from invlab.errors import InvlabError
from invlab.train import RunStore
from invlab.train.states import StudyState


class Shown(param.Parameterized):
    """What a page shows of a sweep: the part sets these."""

    sweep_id = param.Integer(default=None, allow_None=True)
    state = param.Selector(default=StudyState.IDLE, objects=StudyState.values())
    message = param.String(default="")


def sweep_form(settings, launched=None) -> SweepForm:
    """A form alone, with no store and no page: the sweeps it asks to launch go to `launched`."""
    form = SweepForm(CompareContext(settings))
    if launched is not None:
        form.param.watch(lambda *_: launched.append(form.spec), "launch")
    return form


@pytest.fixture
def store(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    yield store
    store.close()


def test_the_page_holds_its_parts_instead_of_mixing_them_in():
    assert ComparePage.__mro__[1:] == pn.viewable.Viewer.__mro__
    page = ComparePage()
    assert isinstance(page.form, SweepForm) and isinstance(page.following, SweepFollowing)
    assert page.following.context is page.context is page.form.context is page.discover.context  # one context
    assert not any(hasattr(page, name) for name in ("table", "parameter", "runner", "tick_ms", "form_error"))
    page.close()


def test_the_form_builds_the_sweep_its_setting_values_and_seeds_describe():
    settings = RunSettings()
    settings.train.seed = 3
    launched = []
    form = sweep_form(settings, launched)
    assert form.parameter_options()["model family (now svgp)"] == "model"
    form.parameter.value = "train.steps"
    form.values.value = "10; 20"
    form.seeds.value = 2
    form.launch_button.clicks += 1
    [spec] = launched
    assert spec.vary == {"train.steps": [10, 20]} and spec.seeds == [3, 4]
    assert spec.base == settings.run_config()
    assert sorted((run.point["train.steps"], run.seed) for run in spec.runs()) == [(10, 3), (10, 4), (20, 3), (20, 4)]
    form.values.value = " , "
    form.launch_button.clicks += 1
    assert len(launched) == 1 and form.form_error.visible and "enter the values" in form.form_error_text
    form.launch_study("no-such-study")
    assert len(launched) == 1 and "unknown study 'no-such-study'" in form.form_error_text


def test_following_a_stored_sweep_shows_its_planned_rows_and_its_state(store):
    spec = sweep_form(RunSettings()).spec_from_settings("train.steps", "10, 20", 2)
    sweep_id = store.sweeps.create(spec.name, spec.to_json(), len(spec.runs()))
    shown, opened = Shown(), []
    context = CompareContext(RunSettings(), store)
    context.param.watch(lambda *_: opened.append(context.run_to_open), "open_run")
    following = SweepFollowing(shown, context)
    record = following.open_sweep(sweep_id)
    assert record.id == sweep_id
    assert shown.sweep_id == sweep_id and shown.state == StudyState.STOPPED and "0 of 4 runs stored" in shown.message
    frame = following.table.value
    assert list(frame["status"]) == ["not run"] * 4 and sorted(frame["seed"]) == [0, 0, 1, 1]
    assert following.table.titles == {field_name("train.steps"): "train.steps"}
    assert sorted(frame[field_name("train.steps")]) == [10, 10, 20, 20]
    assert following.resume_button.visible and following.stop_button.disabled
    assert f"#{sweep_id}" in following.status_pane.object and "stopped" in following.status_pane.object
    following.table.selection = [0]  # a run not stored yet: it says so and opens nothing
    assert opened == [] and "not stored yet" in shown.message
    with pytest.raises(InvlabError, match="no sweep with id"):
        following.open_sweep(sweep_id + 1)
    following._reset_view([], ["model.<b id=inj-1>x</b>"])  # a setting's name as a shared store file could hold it
    assert following.table.titles == {field_name("model.<b id=inj-1>x</b>"): "model.&lt;b id=inj-1&gt;x&lt;/b&gt;"}
    following.close()


def test_the_page_opens_a_stored_sweep_through_its_parts(store):
    page = ComparePage(store=store)
    spec = page.spec_from_settings("train.steps", "10, 20", 1)
    sweep_id = store.sweeps.create(spec.name, spec.to_json(), len(spec.runs()))
    page.refresh_sweeps()
    page.open_sweep(sweep_id)
    assert page.sweep_id == sweep_id and page.form.sweeps_select.value == sweep_id
    assert page.query() == {"sweep": str(sweep_id)} and len(page.rows()) == 2
    page.stop()  # nothing running: nothing changes
    assert page.state == StudyState.STOPPED
    page.close()
