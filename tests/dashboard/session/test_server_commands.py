"""The server thread never waits for a training thread: while one session's evaluation holds its trainer's lock for
seconds, every command the page can give (learning rate, a learnable value, freezing, saving a checkpoint, reset,
pause, closing the tab) returns within the 100 ms the issue allows, and still takes effect once the evaluation ends.
"""
import threading
import time

import pytest

from invlab.dashboard import Explorer
from invlab.parameters import learnables
from invlab.train import RunStore
from invlab.train.edits import Freeze, SetValue
from invlab.train.evaluation import TrainerReport
from tests.dashboard.explorer.test_explorer import small as explorer_config

SLOW_EVALUATION = 3.0  # seconds an evaluation holds the trainer's lock
BOUND = 0.1  # seconds: the bound on how long the server thread may wait


def small(**train):
    """The explorer tests' small digits run, training until stopped and evaluating only when asked."""
    return explorer_config(**{"steps": 100_000, "eval_every": 0, **train})


@pytest.fixture
def slow_evaluation(monkeypatch):
    """Every evaluation holds the trainer's lock for SLOW_EVALUATION seconds; the event is set while it does."""
    holding = threading.Event()
    real = TrainerReport.evaluate

    def evaluate(self):  # the trainer's report, which holds the trainer's lock while it evaluates
        with self.parts.lock:
            holding.set()
            time.sleep(SLOW_EVALUATION)
            holding.clear()
            return real(self)

    monkeypatch.setattr(TrainerReport, "evaluate", evaluate)
    return holding


def timed(fn, *args) -> float:
    started = time.perf_counter()
    fn(*args)
    return time.perf_counter() - started


def in_evaluation(explorer, holding, wait_until):
    wait_until(lambda: holding.is_set(), explorer, timeout=60)


def test_page_commands_never_wait_for_a_running_evaluation(tmp_path, slow_evaluation, wait_until):
    explorer = Explorer(small(), store=RunStore(tmp_path / "runs.sqlite"), eval_interval=0.5)
    explorer.__panel__()
    try:
        explorer.start()
        in_evaluation(explorer, slow_evaluation, wait_until)
        trainer = explorer.session.trainer
        name = "kernel.variance"
        value = float(learnables(trainer.model)[name]().detach().reshape(-1)[0]) * 1.5
        waits = {
            "learning rate": timed(setattr, explorer.train, "learning_rate", 0.0123),
            "learnable value": timed(explorer.session.commands.edit, SetValue(name, value)),
            "freeze": timed(explorer.session.commands.edit, Freeze(name, True)),
            "save checkpoint": timed(explorer.save_checkpoint),
        }
        assert all(wait < BOUND for wait in waits.values()), waits
        assert slow_evaluation.is_set()  # all of it happened during the one evaluation
        # ... and took effect once the evaluation ended
        wait_until(lambda: "checkpoint saved" in explorer.session.message, explorer, timeout=60)
        assert trainer.tc.learning_rate == pytest.approx(0.0123)
        assert learnables(trainer.model)[name].frozen
        assert trainer.record.store.checkpoints.latest(trainer.record.run_id) is not None

        in_evaluation(explorer, slow_evaluation, wait_until)
        waits = {"pause": timed(explorer.pause), "reset": timed(explorer.reset)}
        assert all(wait < BOUND for wait in waits.values()), waits
        wait_until(lambda: explorer.session.trainer is not trainer, explorer, timeout=60)  # the reset happened

        explorer.start()
        in_evaluation(explorer, slow_evaluation, wait_until)
        closing = timed(explorer.close, False)  # what the server does when the tab goes
        assert closing < BOUND, closing
        assert explorer.session.thread.is_alive()  # still in its evaluation: nobody waited for it
        explorer.session.thread.join(30)
        assert not explorer.session.thread.is_alive()
    finally:
        explorer.close()


def test_closing_a_page_mid_evaluation_closes_the_store_it_opened(tmp_path, slow_evaluation, wait_until, monkeypatch):
    monkeypatch.setenv("INVLAB_DATA", str(tmp_path / "data"))
    explorer = Explorer(small(), eval_interval=0.5)  # the data directory's store, opened by the explorer
    explorer.__panel__()
    explorer.start()
    in_evaluation(explorer, slow_evaluation, wait_until)
    store = explorer.store
    assert timed(explorer.close, False) < BOUND
    explorer.session.thread.join(30)
    with pytest.raises(Exception, match="closed"):
        store.connection.db.execute("select 1")  # the session's thread closed it on its way out
