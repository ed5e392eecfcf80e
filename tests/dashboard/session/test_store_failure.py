"""A run store overwritten under a training page (another program writes over runs.sqlite): the page stops training
and says the store cannot be written, the server's log has a sentence and no traceback, the run's checkpoint files
stay, and closing the page (its thread ending, its store closed) adds no traceback either."""
import logging
import os
import time

from invlab.dashboard.session.training import TrainingSession
from invlab.train import RunConfig, RunStore
from invlab.train.states import PageState


def small() -> RunConfig:
    return RunConfig(data={"dataset": "digits", "subset": 200, "test_subset": 50}, model_config={"num_inducing": 8},
                     train={"steps": 100_000, "eval_every": 0, "log_every": 1, "batch_size": 50, "flush_every": 2,
                            "checkpoint_every": 10, "checkpoint_seconds": 0})


def wait_for(predicate, timeout=120.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {predicate.__code__.co_firstlineno}"
        time.sleep(0.05)


def test_a_store_overwritten_under_a_training_page_is_said_in_a_sentence_and_keeps_the_checkpoints(
        tmp_path, capfd, caplog):
    db = tmp_path / "runs.sqlite"
    session = TrainingSession(small(), store=RunStore(db), owns_store=True, view_interval=1e9, eval_interval=0)
    try:
        session.commands.start()
        wait_for(lambda: session.step >= 12)
        folder = session.store.checkpoints.folder(session.opened.run_id)
        kept = sorted(folder.glob("*.pt"))
        assert kept
        for suffix in ("", "-wal", "-shm"):  # another program writes over the store's files (in place, same sizes)
            path = db.with_name(db.name + suffix)
            path.write_bytes(os.urandom(path.stat().st_size))
        with caplog.at_level(logging.ERROR, logger="invlab.dashboard"):
            wait_for(lambda: session.state == PageState.PAUSED)
            assert session.tone == "error"
            assert session.message.startswith("The run store cannot be written, so training stopped at step")
            assert str(folder) in session.message
            session.stop(wait=True)  # the page closes
    finally:
        session.stop(wait=True)
    err = capfd.readouterr().err
    assert "Traceback" not in err, err[-3000:]
    logged = [r.getMessage() for r in caplog.records if r.name == "invlab.dashboard"]
    assert any(text.startswith("the run store cannot be written, so run") for text in logged), logged
    assert all(path.exists() for path in kept)
