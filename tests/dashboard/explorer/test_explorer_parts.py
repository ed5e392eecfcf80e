"""The Explorer holds its parts, each handed what it uses, and none is a mixin: the page (`PageLayout`), the link
(`PageLink`), the run's display (`RunDisplay`), what a settings change does (`SettingsChanges`) and the page's
lifecycle (`PageLifecycle`), each tested here on its own job, headless."""
from types import SimpleNamespace

import panel as pn
import pytest
from bokeh.document import Document
from panel.io.location import Location

from invlab.dashboard import Explorer
from invlab.dashboard.compare import ComparePage
from invlab.dashboard.explorer.changes import SettingsChanges
from invlab.dashboard.explorer.lifecycle import PageLifecycle
from invlab.dashboard.explorer.location import PageLink
from invlab.dashboard.explorer.page import COMPARE, PRIOR, TRAINING, PageLayout, prior_page
from invlab.dashboard.explorer.runs import RunsTab
from invlab.dashboard.explorer.status import StatusBar
from invlab.dashboard.explorer.training import RunDisplay
from invlab.dashboard.serving import theme
from invlab.dashboard.serving.limits import ServerLimits
from invlab.dashboard.serving.theme import ThemeSwitch
from invlab.dashboard.session.update import Update
from invlab.dashboard.state.settings import RunSettings, describe_difference
from invlab.errors import InvlabError
from invlab.train import RunConfig


def small(num_inducing: int = 15, **train) -> RunConfig:
    return RunConfig(data={"dataset": "digits", "subset": 200, "test_subset": 100},
                     model_config={"num_inducing": num_inducing},
                     train={"steps": 400, "eval_every": 0, "log_every": 5, "batch_size": 64, **train})


@pytest.fixture
def explorer():
    e = Explorer(small(), store=False)
    yield e
    e.close()


def test_the_explorer_is_a_viewer_holding_its_parts_not_a_stack_of_mixins(explorer):
    assert Explorer.__mro__[:2] == (Explorer, pn.viewable.Viewer)
    ours = [cls for cls in Explorer.__mro__ if cls.__module__.startswith("invlab")]
    assert ours == [Explorer]  # the rest is Panel's and param's
    parts = {"page": PageLayout, "link": PageLink, "display": RunDisplay, "changes": SettingsChanges,
             "lifecycle": PageLifecycle, "runs": RunsTab, "status": StatusBar}
    for name, kind in parts.items():
        part = getattr(explorer, name)
        assert type(part) is kind, name
        assert [c for c in kind.__mro__ if c.__module__.startswith("invlab")] == [kind], name  # no mixin either
    for viewer in (explorer.page, explorer.runs, explorer.status):
        assert isinstance(viewer, pn.viewable.Viewer)
    # each part holds the parts it uses, the same objects the Explorer holds
    assert explorer.display.page is explorer.page and explorer.display.link is explorer.link
    assert explorer.link.page is explorer.page and explorer.link.compare is explorer.compare
    assert explorer.changes.display is explorer.display and explorer.lifecycle.owner is explorer
    assert explorer.theme_switch is explorer.link.theme_switch
    # a part's widgets are reached through the part that owns them, never through an alias on the Explorer
    for name in ("pages", "invariance_group", "data_group", "url_field", "learned_controls", "lessons"):
        assert not hasattr(explorer, name), name
    assert explorer.page.pages is None  # not drawn yet
    pages = explorer.__panel__()[1]
    assert explorer.page.pages is pages and explorer.page.data_group is not None


def test_the_page_lays_out_its_tabs_and_draws_presenter_mode_larger(explorer):
    page = explorer.page
    assert page.active == TRAINING
    explorer.__panel__()
    assert page.pages._names == ["Training", "Lessons", "Deep kernel prior", "Compare"]
    assert explorer.status.pane in page.enlarged and explorer.page.page_notices[0] in page.enlarged
    explorer.notice = "a word"
    assert all("a word" in pane.object for pane in page.page_notices)  # on the Training, prior and Compare pages
    page.show_presenter(True)
    assert explorer.curves.large and all(part.styles["zoom"] != "1" for part in page.enlarged)
    page.pages.active = COMPARE
    page.show_training()
    assert page.active == TRAINING and explorer.session.views_wanted


def link_part(session, page, limits=None):
    settings, said, presenter = RunSettings(), [], [False]
    link = PageLink(settings, session, page=page, compare=ComparePage(settings), prior=prior_page(),
                    theme_switch=ThemeSwitch(lambda theme: "token"), limits=limits,
                    presenter=lambda: presenter[0], set_presenter=lambda on: presenter.__setitem__(0, on),
                    say=said.append)
    return link, settings, said, presenter


def test_the_link_is_read_once_then_names_the_run_once_it_has_a_step_and_the_page_shown():
    session, page = SimpleNamespace(opened=SimpleNamespace(run_id=None), step=0), SimpleNamespace(active=TRAINING)
    link, settings, said, presenter = link_part(session, page)
    link.update()
    assert link.url_field.value == ""  # nothing is written before the link has been read
    link.read(Location(search="?model.num_inducing=20&presenter=1"))
    assert settings.model_config.num_inducing == 20 and presenter == [True] and said == []
    assert "model.num_inducing=20" in link.url_field.value and "presenter=1" in link.url_field.value
    session.opened.run_id = 7  # a run built, never trained: not worth a link
    link.follow_run()
    assert "run=" not in link.url_field.value
    session.step = 3
    link.follow_run()
    assert link.url_field.value.endswith("run=7&presenter=1")
    page.active = PRIOR
    settings.train.steps = 50
    link.update()  # what the Explorer calls after each change of the settings
    assert "train.steps=50" in link.url_field.value and "page=prior" in link.url_field.value


def test_the_link_refuses_what_the_server_does_not_allow_and_says_so():
    session, page = SimpleNamespace(opened=SimpleNamespace(run_id=None), step=0), SimpleNamespace(active=TRAINING)
    link, settings, said, _ = link_part(session, page, limits=ServerLimits(data_dirs=()))
    link.read(Location(search="?model.num_inducing=5000&theme=neon"))
    assert settings.model_config.num_inducing != 5000  # put back: Start builds a run this server allows
    assert len(said) == 1 and said[0].startswith("Some settings in the link were refused")
    assert "--max-inducing" in said[0] and "'neon' is not one of" in said[0]
    assert "num_inducing" not in link.url_field.value


class RunsBuilt:
    """Stands in for the session's drain: each run in `pending` (a built run's `Update`) comes with the next tick."""

    def __init__(self):
        self.pending: list[Update] = []

    def drain(self, on_new_run, flush=lambda: None) -> Update:
        while self.pending:
            on_new_run(self.pending.pop(0))
        return Update()


def test_the_display_archives_the_previous_curves_labelled_by_what_differed_on_a_new_run(explorer, monkeypatch):
    runs = RunsBuilt()
    monkeypatch.setattr(explorer.feed, "drain", runs.drain)
    first, second = small(), small(num_inducing=12)
    runs.pending.append(Update(new_run=True, run_label="run 1", config=first))
    explorer.tick()
    assert explorer.display.run_started and explorer.status.run == "svgp on digits"
    assert explorer.curves.previous == []  # nothing drawn before the first run: nothing to keep
    explorer.curves.send("elbo", [1, 2, 3], [-10.0, -8.0, -7.5])
    runs.pending.append(Update(new_run=True, run_label="run 2", config=second))
    explorer.tick()
    label, frames = explorer.curves.previous[-1]
    assert label == describe_difference(first, second) and "15" in label
    assert list(frames["elbo"]["elbo"]) == [-10.0, -8.0, -7.5]
    assert len(explorer.curves.buffers["elbo"].data) == 0  # the new run's curves start empty
    assert "no invariance ranges" in explorer.page.invariance_group[0].object  # the Invariance tab for the new run


def test_the_display_shows_an_opened_runs_settings_in_the_controls_without_asking_for_a_reset(explorer, monkeypatch):
    runs = RunsBuilt()
    monkeypatch.setattr(explorer.feed, "drain", runs.drain)
    opened = small(learning_rate=0.02, steps=900)
    runs.pending.append(Update(new_run=True, run_label="stored run 5", config=opened))
    explorer.tick()
    assert explorer.train.learning_rate == 0.02 and explorer.train.steps == 900
    assert explorer.notice == "" and not explorer.display.adopting
    assert explorer.status.learning_rate == 0.02 and explorer.status.total == 900
    explorer.curves.send("elbo", [1, 2], [-9.0, -8.0])
    runs.pending.append(Update(new_run=True, run_label="stored run 5", config=opened))  # followed: the same run
    explorer.tick()
    assert explorer.curves.previous == []  # no faint copy of itself


def test_a_settings_change_reaches_the_session_the_controls_and_the_status(explorer):
    group = explorer.page.model_group[0]
    explorer.model = "rkhs"
    assert explorer.page.model_group[0] is not group  # the Model tab rebuilt for the new family
    assert explorer.session.config.model == "rkhs" and explorer.notice == ""  # no run yet: nothing to Reset
    assert explorer.status.run.startswith("rkhs on ") and explorer.status.learning_rate == 1.0  # L-BFGS's rate
    subset = explorer.data.subset
    with pytest.raises(InvlabError, match="subset=1000000"):
        explorer.data.subset = 1_000_000
    assert explorer.data.subset == subset  # put back at once


def test_the_lifecycle_connects_closes_with_its_page_and_hands_over_on_a_theme_change(explorer):
    explorer.__panel__()
    doc = Document()
    with pn.io.server.set_curdoc(doc):
        explorer.lifecycle.on_load()
    assert explorer.feed.callback is not None and explorer.display.doc is doc
    assert explorer.lifecycle.closes_with is doc and len(doc.session_destroyed_callbacks) == 1
    token = explorer.theme_switch.on_switch("dark")  # the user flips the switch
    assert explorer.feed.callback is None and theme.is_parked(explorer) and explorer.link.theme_switch.theme == "dark"
    for callback in doc.session_destroyed_callbacks:  # the old tab goes as the browser reloads
        callback(None)
    assert not explorer.lifecycle.closed  # set aside for the reloaded page, not closed
    assert theme.claim(token) is explorer
    explorer.resume_page()
    assert explorer.link.location is None and explorer.display.doc is None  # the new page's link is read again
    new_doc = Document()
    explorer.lifecycle.close_with(new_doc)
    for callback in new_doc.session_destroyed_callbacks:  # the new tab closes: now the explorer goes
        callback(None)
    assert explorer.lifecycle.closed and explorer.feed.callback is None
