"""The training thread's commands arrive in the order they were given, whatever the thread is doing: a Start pressed
straight after Reset trains the new run."""
import time

from invlab.dashboard import Explorer
from invlab.train import RunConfig, RunStore, Trainer


def small(**train):
    t = {"steps": 100_000, "eval_every": 20, "log_every": 1, "batch_size": 64}
    t.update(train)
    return RunConfig(data={"dataset": "digits", "subset": 200, "test_subset": 100}, model_config={"num_inducing": 15},
                     train=t)


def test_start_straight_after_reset_trains_the_new_run(tmp_path, monkeypatch, wait_until):
    real_step = Trainer.step

    def slow_step(self, *args, **kwargs):  # a step as long as one on a busy class server
        time.sleep(0.4)
        return real_step(self, *args, **kwargs)

    monkeypatch.setattr(Trainer, "step", slow_step)
    e = Explorer(small(), store=RunStore(tmp_path / "runs.sqlite"))
    e.__panel__()
    try:
        e.start()
        wait_until(lambda: e.session.step >= 2 and e.session.state == "running", e)
        old = e.session.trainer
        e.reset()
        e.start()  # the same instant: the training thread is still inside a step of the old run
        wait_until(lambda: e.session.trainer is not old and e.session.trainer.step_count >= 2
                   and e.session.state == "running", e, timeout=60)
        assert e.curves.previous and e.status.state == "running"
        assert old.step_count < 20  # the old run stopped at Reset instead of training on
    finally:
        e.close()
