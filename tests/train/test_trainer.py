"""Trainer behaviour a user relies on: recovery from NaN, checkpoints, resume, live edits, snapshots."""
import threading

import numpy as np
import pytest
import torch

from invlab.errors import ConfigError, NonFiniteLossError
from invlab.train import RunConfig, RunStore, Trainer, open_run
from invlab.train.checkpoint import CheckpointError, load_checkpoint
from invlab.train.edits import Freeze, SetLearningRate, SetValue


def small_config(train_device, **train):
    """`train_device`: the test device and dtype as RunConfig's train entries (the fixture of that name)."""
    base = {"steps": 30, "log_every": 5, "eval_every": 0, "eval_size": 100, "batch_size": 64, **train_device}
    base.update(train)
    return RunConfig(model="svgp", data={"dataset": "digits", "subset": 300, "test_subset": 150},
                     model_config={"num_inducing": 20}, train=base)


def params_of(trainer):
    return {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}


def test_injected_nan_rolls_back_and_reports(monkeypatch, train_device):
    trainer = Trainer(small_config(train_device))
    for _ in range(5):
        trainer.step()
    before = params_of(trainer)
    real_loss = trainer.model.loss

    def poisoned(batch):
        terms = real_loss(batch)
        terms.parts["expected_log_lik"] = terms.parts["expected_log_lik"] * float("nan")
        terms.loss = terms.loss * float("nan")
        return terms

    monkeypatch.setattr(trainer.model, "loss", poisoned)
    with pytest.raises(NonFiniteLossError, match=r"step 6 .*expected_log_lik.*step 5"):
        trainer.step()
    assert trainer.step_count == 5
    assert all(torch.equal(before[k], v) for k, v in trainer.model.state_dict().items())
    monkeypatch.setattr(trainer.model, "loss", real_loss)
    trainer.step()  # the run continues from the good state
    assert trainer.step_count == 6


def test_nan_written_into_a_parameter_restores_the_last_good_state(train_device):
    trainer = Trainer(small_config(train_device))
    for _ in range(5):  # step 5 is a logged step: the good state is captured there
        trainer.step()
    good = params_of(trainer)
    with torch.no_grad():
        trainer.model.kernel.lengthscale.raw.fill_(float("nan"))
    with pytest.raises(NonFiniteLossError, match="last good state"):
        trainer.step()
    assert trainer.step_count == 5
    assert all(torch.equal(good[k], v) for k, v in trainer.model.state_dict().items())


def test_run_marks_failure_in_the_store(tmp_path, monkeypatch, train_device):
    store = RunStore(tmp_path / "runs.sqlite")
    trainer = Trainer(small_config(train_device), store=store)
    monkeypatch.setattr(trainer.model, "loss", lambda batch: (_ for _ in ()).throw(NonFiniteLossError("boom")))
    with pytest.raises(NonFiniteLossError):
        list(trainer.run())
    assert store.runs.get(trainer.record.run_id).status == "failed"


def test_checkpoint_round_trip_gives_identical_predictions(tmp_path, train_device):
    trainer = Trainer(small_config(train_device))
    list(trainer.run(20))
    path = trainer.save_checkpoint(tmp_path / "ck.pt")
    restored = Trainer.from_checkpoint(path)
    X = trainer.X_test[:50]
    a, b = trainer.report.predict(X), restored.report.predict(X)
    assert restored.step_count == 20
    assert torch.equal(a.mean, b.mean) and torch.equal(a.var, b.var) and torch.equal(a.probs, b.probs)
    # both continue identically: same optimiser state and minibatch stream
    trainer.step(), restored.step()
    assert all(torch.equal(v, restored.model.state_dict()[k]) for k, v in trainer.model.state_dict().items())


def test_corrupt_checkpoint_is_refused_with_a_clear_error(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="cannot be read"):
        load_checkpoint(bad)


def test_resume_continues_the_step_count_and_the_metrics(tmp_path, train_device):
    store = RunStore(tmp_path / "runs.sqlite")
    trainer = Trainer(small_config(train_device, steps=40, checkpoint_every=20, flush_every=5), store=store)
    gen = trainer.run()
    for snap in gen:
        if snap.step == 25:  # killed between checkpoints: steps 21..25 are lost on resume
            break
    gen.close()
    resumed = open_run(store, trainer.record.run_id).trainer
    assert resumed.step_count == 20
    list(resumed.run())
    assert resumed.step_count == 40
    steps, _ = store.metrics.read(trainer.record.run_id)["elbo"]
    assert steps == sorted(set(steps)) and steps[-1] == 40  # no duplicated steps after the resume
    record = store.runs.get(trainer.record.run_id)
    assert record.status == "finished" and record.step == 40 and record.test_error is not None


def test_snapshot_is_plain_numpy_and_floats(train_device):
    trainer = Trainer(small_config(train_device))
    list(trainer.run(10))
    trainer.report.evaluate()
    snap = trainer.report.snapshot()

    def walk(obj):
        assert not isinstance(obj, torch.Tensor)
        if isinstance(obj, dict):
            for v in obj.values():
                walk(v)
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                walk(v)
        elif hasattr(obj, "__dataclass_fields__"):
            for k in obj.__dataclass_fields__:
                walk(getattr(obj, k))

    walk(snap)
    steps, values = snap.history["elbo"]
    assert isinstance(values, np.ndarray) and steps[-1] == 10
    assert "kuu_spectrum" in snap.views and "test_error" in snap.metrics and np.isfinite(snap.numerics.condition)


def test_live_edits_from_another_thread_under_the_lock(train_device):
    trainer = Trainer(small_config(train_device, steps=200))
    trainer.edits.put(Freeze("kernel.variance"))
    variance = float(trainer.model.kernel.variance())
    stop = threading.Event()
    worker = threading.Thread(target=lambda: [None for _ in trainer.run(stop=stop)])
    worker.start()
    modules = dict(trainer.model.named_modules())
    noise = "likelihood.variance" if "likelihood.variance" in modules else "kernel.lengthscale"
    trainer.edits.put(SetValue(noise, 2.0))
    stop.set()
    worker.join(timeout=60)
    assert not worker.is_alive() and trainer.status == "paused"
    assert float(trainer.model.kernel.variance()) == variance  # frozen value untouched by the optimiser
    with pytest.raises(ConfigError, match="no learnable value"):
        trainer.edits.put(SetValue("kernel.nonsense", 1.0))


def test_evaluation_uses_a_bounded_fixed_subset(train_device):
    trainer = Trainer(small_config(train_device, eval_size=37))
    assert len(trainer.evaluation.indices) == 37
    a = trainer.report.evaluate()
    b = trainer.report.evaluate()
    assert a == b
    again = Trainer(small_config(train_device, eval_size=37))  # another process resuming the run: the same points
    assert torch.equal(again.evaluation.indices.cpu(), trainer.evaluation.indices.cpu())
    labels = trainer.y_test.index_select(0, trainer.evaluation.indices).cpu().numpy()
    assert trainer.chance_error == 1.0 - np.bincount(labels).max() / 37  # the best constant answer's error


def test_learning_rate_schedules(train_device):
    cos = Trainer(small_config(train_device, schedule="cosine", steps=10, final_lr_ratio=0.1, learning_rate=0.02))
    list(cos.run())
    assert abs(cos.edits.current_lr - 0.002) < 1e-12
    exp = Trainer(small_config(train_device, schedule="exponential", steps=10, final_lr_ratio=0.5, learning_rate=0.02))
    list(exp.run(5))
    assert abs(exp.edits.current_lr - 0.02 * 0.5 ** 0.5) < 1e-12


def test_lbfgs_full_batch_decreases_the_loss(train_device):
    config = RunConfig(model="svgp", data={"dataset": "diabetes", "subset": 120},
                       model_config={"num_inducing": 15}, train={"optimizer": "lbfgs", "steps": 5, "learning_rate": 1.0,
                                                                 "log_every": 1, "eval_every": 0, **train_device})
    trainer = Trainer(config)
    losses = [trainer.step().loss for _ in range(5)]
    assert losses[-1] < losses[0]
    assert "test_rmse" in trainer.finish()


def test_learning_rate_defaults_to_the_running_optimisers_step(train_device):
    assert RunConfig(model="svgp").train_config().learning_rate == 0.01  # Adam
    assert RunConfig(model="rkhs").train_config().learning_rate == 1.0  # the family's L-BFGS
    assert RunConfig(model="svgp", train={"optimizer": "lbfgs"}).train_config().learning_rate == 1.0
    assert RunConfig(model="rkhs", train={"optimizer": "adam"}).train_config().learning_rate == 0.01
    # a given rate stays
    assert RunConfig(model="rkhs", train={"learning_rate": 0.3}).train_config().learning_rate == 0.3
    trainer = Trainer(RunConfig(model="svgp", data={"dataset": "diabetes", "subset": 120},
                                model_config={"num_inducing": 15},
                                train={"optimizer": "lbfgs", "steps": 3, "eval_every": 0, **train_device}))
    assert trainer.optimizer.defaults["lr"] == 1.0
    with pytest.raises(ConfigError, match="optimizer"):
        RunConfig(train={"optimizer": "sgd"}).train_config()


def test_bad_configuration_is_refused_before_any_work():
    with pytest.raises(ConfigError, match="num_inducing"):
        Trainer(RunConfig(model_config={"num_inducing": 0}))
    with pytest.raises(ConfigError, match="unknown training setting"):
        Trainer(RunConfig(train={"stepz": 3}))
    with pytest.raises(ConfigError, match="unknown model"):
        Trainer(RunConfig(model="nope"))
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="CUDA is not available"):
            Trainer(RunConfig(train={"device": "cuda"}))


def test_a_live_edit_never_waits_for_a_step_and_lands_before_the_next_one(train_device):
    """A server thread changing the learning rate while a (long) step holds the trainer gets control back at once;
    the change is applied before the next step, and a refused deferred change says why."""
    import threading

    from invlab.train import RunConfig, Trainer

    trainer = Trainer(RunConfig(data={"dataset": "digits", "subset": 100, "test_subset": 50},
                                model_config={"num_inducing": 8},
                                train={"steps": 10, "batch_size": 32, **train_device}))
    assert trainer.edits.put(SetLearningRate(0.02))  # idle: applied now
    assert trainer.edits.current_lr == 0.02
    held, release = threading.Event(), threading.Event()

    def long_step():
        with trainer.lock:
            held.set()
            release.wait(5)

    worker = threading.Thread(target=long_step)
    worker.start()
    held.wait(5)
    applied = trainer.edits.put(SetLearningRate(0.05))  # had it waited, the step would have ended first
    assert not applied and trainer.edits.current_lr == 0.02  # deferred, not waited for
    trainer.edits.put(SetLearningRate(50.0))  # deferred too; refused when applied (above the largest rate)
    assert len(trainer.edits.pending) == 2  # the trainer's live-edit part holds them for the next step
    release.set()
    worker.join()
    trainer.step()
    assert not trainer.edits.pending and trainer.tc.learning_rate == 0.05
    assert "a live change was refused" in (trainer.last_warning or "") and "learning_rate" in trainer.last_warning


def test_a_finished_run_keeps_and_stores_its_whole_training_set_elbo(tmp_path, train_device):
    store = RunStore(tmp_path / "runs.sqlite")
    trainer = Trainer(small_config(train_device, steps=10), store=store)
    assert trainer.final_elbo is None
    list(trainer.run())
    final = trainer.final_elbo
    assert set(final) == {"elbo", "expected_log_lik", "kl"} and np.isfinite(final["elbo"])
    assert trainer.report.full_elbo() == final  # a fixed evaluation seed: the same number again
    assert final == trainer.model.full_elbo(trainer.X, trainer.y)  # over all 300 training points, not a batch
    record = store.runs.get(trainer.record.run_id)
    assert record.full_elbo == final["elbo"] and record.summary()["full_elbo"] == final["elbo"]
    list(trainer.run(2))  # more steps change the model: the figure is computed again at the end
    assert trainer.final_elbo is not None and trainer.final_elbo != final
    store.close()


def test_families_that_are_not_variational_have_no_whole_data_elbo(train_device):
    trainer = Trainer(small_config(train_device, steps=0))
    trainer.model.full_elbo = None  # as a family without the method (GWI, RKHS) reads through getattr
    assert trainer.report.full_elbo() is None


def test_training_streams_are_the_runs_own_and_continue_across_steps():
    """What a step draws comes from the run's own streams: draws made between two steps (an evaluation, a view,
    other code) change neither what the next step draws nor the stream outside, which goes on as if no step ran."""
    import torch

    from invlab.train.streams import TrainingStreams

    torch.manual_seed(5)
    streams = TrainingStreams(torch.device("cpu"))
    outside = torch.rand(3)  # the global stream after the copy was taken: the same numbers training starts from
    with streams.inside():
        first = torch.rand(3)
    between = torch.rand(4)  # drawn outside, between two steps
    with streams.inside():
        second = torch.rand(3)
    torch.manual_seed(5)
    assert torch.equal(torch.cat([first, second]), torch.rand(6))  # one uninterrupted stream
    torch.manual_seed(5)
    assert torch.equal(torch.cat([outside, between]), torch.rand(7))  # outside, as if training drew nothing
    saved = {k: v.clone() for k, v in streams.state.items()}
    resumed = TrainingStreams(torch.device("cpu"))
    resumed.load(saved)
    with streams.inside(), torch.random.fork_rng():
        expected = torch.rand(2)
    with resumed.inside():
        assert torch.equal(torch.rand(2), expected)  # a checkpoint's streams continue where they were
