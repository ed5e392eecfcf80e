"""The words the pages show for each state live in one table (dashboard/state_words.py): every member of every state
enum has a word and a tone, and the status line and the Runs tab say a state with the table's word."""
import pytest

from invlab.dashboard import state_words
from invlab.dashboard.explorer.status import StatusBar
from invlab.dashboard.state_words import TONES, WORDS, Shown, shown, state_tone, state_word
from invlab.train import RunConfig, RunStore
from invlab.train.states import HealthState, PageState, PlannedRunState, RunStatus, StudyState, SweepStatus


@pytest.mark.parametrize("kind", [RunStatus, PageState, SweepStatus, StudyState, HealthState, PlannedRunState])
def test_every_state_has_a_word_and_a_tone(kind):
    table = WORDS[kind]
    assert set(table) == set(kind), f"{kind.__name__} members without words: {set(kind) - set(table)}"
    for member, entry in table.items():
        assert entry.word.strip() and entry.tone in TONES, (member, entry)


def test_a_killed_run_is_said_as_killed_and_text_of_no_state_is_shown_as_it_is():
    assert state_word(RunStatus.KILLED, RunStatus) == "killed" and state_word("killed", RunStatus) == "killed"
    assert state_tone("collapsed", HealthState) == "error" and state_tone("diverging", HealthState) == "warning"
    assert state_tone(PageState.DIVERGING, PageState) == "error"  # the same text, another enum, its own tone
    assert shown("archived", RunStatus) == Shown("archived", "quiet")  # a status a newer version stored


def test_the_status_line_says_the_state_with_the_tables_word(monkeypatch):
    monkeypatch.setitem(state_words.PAGE_WORDS, PageState.PAUSED, Shown("taking a break", "held"))
    bar = StatusBar(state=PageState.PAUSED)
    assert 'data-field="state">taking a break</b>' in bar.html()
    assert 'color:#c0392b" data-field="state">failed</b>' in StatusBar(state=PageState.FAILED).html()  # its tone


def test_the_runs_tab_says_a_runs_status_with_the_tables_word(tmp_path, monkeypatch):
    from invlab.dashboard import Explorer

    monkeypatch.setitem(state_words.RUN_WORDS, RunStatus.KILLED, Shown("ended by its process's end", "held"))
    store = RunStore(tmp_path / "runs.sqlite")
    store.runs.create(RunConfig().to_json(), "svgp", "digits", status=RunStatus.KILLED)
    explorer = Explorer(store=store)
    try:
        explorer.runs.refresh()
        assert [label.split(" — ")[1] for label in explorer.runs.select.options] == \
            ["ended by its process's end, step 0"]
    finally:
        explorer.close()


def test_the_compare_page_says_its_states_with_the_tables_words_and_tones(tmp_path, monkeypatch):
    """The Compare page's sweep and Discover status lines and its runs' rows word each state from the same table as
    the Training page, in the same tone colours: idle takes the theme's faint text colour (a fixed grey is dark on
    the dark page), and a planned run that never ran says the table's word."""
    from invlab.dashboard.compare.page import ComparePage
    from invlab.dashboard.state_words import FAINT

    monkeypatch.setitem(state_words.STUDY_WORDS, StudyState.IDLE, Shown("resting", "quiet"))
    page = ComparePage(store=RunStore(tmp_path / "runs.sqlite"))
    page.following._show_state()
    assert f'color:{FAINT}" data-field="sweep-state">resting</b>' in page.following.status_pane.object
    page.discover.table.show_status()
    assert f'color:{FAINT}" data-field="discover-state">resting</b>' in page.discover.table.status.object
    assert state_word(PlannedRunState.NOT_RUN, PlannedRunState) == "not run"
