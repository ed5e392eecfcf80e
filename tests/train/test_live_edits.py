"""Live edits reach a running trainer by one road: a typed edit put on its queue, applied between two steps (at once
when no step runs), never in the middle of one; a refused edit says why."""
import threading

import pytest

from invlab.errors import ConfigError
from invlab.train import RunConfig, Trainer
from invlab.train.edits import Freeze, SetLearningRate, SetTrainSetting, SetValue


def small(train_device, **train):
    return RunConfig(data={"dataset": "digits", "subset": 100, "test_subset": 50}, model_config={"num_inducing": 8},
                     train={"steps": 10, "batch_size": 32, "log_every": 1, "eval_every": 0, "learning_rate": 0.01,
                            **train_device, **train})


def lr(trainer) -> float:
    return trainer.optimizer.param_groups[0]["lr"]


def test_an_edit_put_while_a_step_runs_lands_before_the_next_step_never_mid_step(train_device):
    trainer = Trainer(small(train_device))
    real_loss, seen, applied = trainer.model.loss, [], []

    def loss(batch):  # inside the step: another thread (a page's slider) changes the learning rate now
        before = lr(trainer)
        if not seen:
            slider = threading.Thread(target=lambda: applied.append(trainer.edits.put(SetLearningRate(0.05))))
            slider.start()
            slider.join()
        seen.append((before, lr(trainer)))
        return real_loss(batch)

    trainer.model.loss = loss
    trainer.step()
    assert applied == [False] and seen == [(0.01, 0.01)]  # queued, the step in progress untouched
    assert lr(trainer) == 0.01  # not applied after the step either: the next step applies it
    trainer.step()
    assert seen[1] == (0.05, 0.05) and trainer.tc.learning_rate == 0.05


def test_an_idle_trainer_applies_an_edit_at_once_and_refuses_unknown_names_at_once(train_device):
    trainer = Trainer(small(train_device))
    assert trainer.edits.put(SetLearningRate(0.02)) and trainer.edits.current_lr == 0.02
    assert trainer.edits.put(SetValue("kernel.lengthscale", 3.0))
    assert float(trainer.edits.learnable("kernel.lengthscale")().reshape(-1)[0]) == pytest.approx(3.0)
    assert trainer.edits.put(Freeze("kernel.variance")) and trainer.edits.learnable("kernel.variance").frozen
    assert trainer.edits.put(SetTrainSetting("eval_every", 7)) and trainer.tc.eval_every == 7
    with pytest.raises(ConfigError, match="no learnable value"):
        trainer.edits.put(SetValue("kernel.nonsense", 1.0))
    with pytest.raises(ConfigError, match="seed"):
        trainer.edits.put(SetTrainSetting("seed", 3))  # fixed for a run: a new model takes it


def test_fewer_steps_set_while_a_run_trains_end_it_there(train_device):
    trainer = Trainer(small(train_device, steps=100_000))
    stop, reached = threading.Event(), threading.Event()

    def train():
        for snap in trainer.run(every=1, stop=stop):
            if snap.step >= 3:
                reached.set()

    worker = threading.Thread(target=train)
    worker.start()
    assert reached.wait(60)
    trainer.edits.put(SetTrainSetting("steps", 12))
    worker.join(60)
    stop.set()
    assert not worker.is_alive() and trainer.status == "finished" and trainer.step_count == 12


def test_a_held_back_edit_refused_when_a_later_one_applies_the_queue_is_still_said(train_device):
    """An edit left for the next step (a step was running) and refused when a later edit applies the queue on an
    idle trainer is not lost: the next step's trainer says it in `last_warning`, and the later edit applies."""
    trainer = Trainer(small(train_device))
    held = threading.Event()

    def step_running():  # another thread holds the trainer's lock, as a step does
        with trainer.lock:
            held.set()
            done.wait()

    done = threading.Event()
    worker = threading.Thread(target=step_running)
    worker.start()
    held.wait()
    assert trainer.edits.put(SetValue("kernel.lengthscale", -1.0)) is False  # left for the next step
    done.set()
    worker.join()
    assert trainer.edits.put(SetLearningRate(0.02))  # idle now: the queue (both edits) is applied at once
    assert trainer.edits.current_lr == 0.02
    trainer.step()
    assert trainer.last_warning is not None and "lengthscale must be greater" in trainer.last_warning
