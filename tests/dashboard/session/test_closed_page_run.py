"""A page closed while it trains leaves its run *paused* at the step it reached, with a checkpoint there: `invlab
runs` says the same of every closed page, and a resume loses no step (a run ends *interrupted* only when its
process did not stop it cleanly)."""
import threading

from invlab.dashboard.session.training import TrainingSession
from invlab.train import RunConfig, RunStore


def small() -> RunConfig:
    return RunConfig(data={"dataset": "digits", "subset": 200, "test_subset": 100}, model_config={"num_inducing": 15},
                     train={"steps": 100_000, "eval_every": 0, "log_every": 5, "batch_size": 64,
                            "checkpoint_every": 0, "checkpoint_seconds": 0})


def test_a_page_closed_between_two_snapshots_leaves_its_run_paused_with_a_checkpoint_at_its_step(tmp_path, monkeypatch):
    store = RunStore(tmp_path / "runs.sqlite")
    session = TrainingSession(small(), store=store)
    closed = threading.Event()
    handle = session._do_between_steps

    def between_steps():  # the tab goes while the training thread is handling a snapshot, not inside a step
        handle()
        trainer = session.trainer
        if trainer is not None and trainer.step_count >= 10 and not closed.is_set():
            closed.set()
            session.stop(wait=False)

    monkeypatch.setattr(session, "_do_between_steps", between_steps)
    try:
        session.commands.start()
        assert closed.wait(120), "the page never trained ten steps"
        session.thread.join(60)
        assert not session.thread.is_alive()
        run_id = session.trainer.record.run_id
        run = store.runs.get(run_id)
        assert run.status == "paused", (run.status, run.message)
        assert run.step == session.trainer.step_count >= 10
        step, _ = store.checkpoints.latest(run_id)
        assert step == run.step  # a resume continues from where the page was closed
    finally:
        session.stop(wait=True)
        store.close()
