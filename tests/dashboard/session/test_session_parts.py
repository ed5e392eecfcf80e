"""The training session's parts without a page: its commands and live edits (`SessionCommands`) and the stored runs it
opens or follows (`OpenedRuns`), each built alone with what it is handed, and the session that holds them."""
import queue

import param
import pytest

from invlab.dashboard.session.commands import Interruption, SessionCommands
from invlab.dashboard.session.opened_runs import OpenedRuns
from invlab.dashboard.session.training import TrainingSession
from invlab.train import RunConfig, RunStore
from invlab.train.states import PageState, RunStatus

SMALL = RunConfig(data={"dataset": "digits", "subset": 200, "test_subset": 100}, model_config={"num_inducing": 15},
                  train={"steps": 100_000, "eval_every": 0, "log_every": 1, "batch_size": 64})


def test_the_session_holds_its_parts_instead_of_mixing_them_in():
    assert TrainingSession.__mro__[1:] == param.Parameterized.__mro__
    session = TrainingSession(SMALL)
    assert isinstance(session.commands, SessionCommands) and isinstance(session.opened, OpenedRuns)
    assert session.opened.run_id is None and session.opened.followed_health is None and not session.commands.pausing
    session.stop()


def test_the_commands_queue_what_a_page_asks_for_in_order():
    started = []
    commands = SessionCommands(ensure_thread=lambda: started.append(True), trainer=lambda: None,
                               config=lambda: SMALL, save=lambda: None, state=lambda: PageState.RUNNING)
    assert not commands.interrupted()
    commands.start()
    commands.step_once()  # a redirect: a running loop ends, and the pause is asked for
    stop = Interruption(commands, steps_only=True)
    assert commands.interrupted() and commands.pausing and stop.is_set()
    assert commands.next(0.1) == ("start", None) and stop.is_set()
    assert commands.next(0.1) == ("step", None) and not stop.is_set()  # taken: only the pause is left
    assert Interruption(commands, steps_only=False).is_set() and len(started) == 2
    with pytest.raises(queue.Empty):
        commands.next(0.01)
    commands.end()
    assert not commands.alive and stop.is_set() and commands.next(0.1) == ("stop", None)


def test_a_pause_the_commands_queue_is_what_the_session_then_shows(wait_until):
    session = TrainingSession(SMALL)
    try:
        session.commands.start()
        wait_until(lambda: session.state == PageState.RUNNING and session.step >= 2, timeout=120)
        session.commands.pause()
        # "pausing…" until the step in progress ends
        assert session.commands.pausing or session.state == PageState.PAUSED
        wait_until(lambda: session.state == PageState.PAUSED, timeout=60)
        step = session.step
        assert not session.commands.pausing and session.commands.interrupted()
        session.commands.step_once()
        wait_until(lambda: session.step == step + 1 and session.state == PageState.PAUSED, timeout=60)
    finally:
        session.stop()


def test_opening_a_stored_run_without_a_checkpoint_shows_its_curves_and_says_why(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = store.runs.create(SMALL.to_json(), SMALL.model, "digits", status=RunStatus.FINISHED)
    for step in (1, 2, 3):
        store.metrics.log(run_id, step, {"elbo": -10.0 / step})
    store.runs.update(run_id, step=3)
    opened = OpenedRuns(store, None, trainer=lambda: None)  # handed only what it uses; it calls nothing back
    shown = opened.open(run_id)
    assert shown.trainer is None and opened.following is None and opened.run_id is None
    assert shown.label == f"stored run {run_id}" and list(shown.history["elbo"][0]) == [1, 2, 3]
    assert shown.values["state"] == PageState.IDLE and shown.values["step"] == 3
    assert "no checkpoint to continue from" in shown.values["message"]
    store.close()
