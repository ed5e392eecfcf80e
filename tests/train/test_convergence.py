"""L-BFGS runs stop when their solve has converged, with the same answer as running on; Adam runs never do."""
import pytest
import torch

from invlab.cli import main
from invlab.train import RunConfig, RunStore, Trainer
from invlab.train.edits import SetValue


def rkhs_config(train_device, steps=500):
    return RunConfig(model="rkhs", data={"dataset": "two-moons"},
                     train={"steps": steps, "log_every": 1, **train_device})


def test_an_rkhs_solve_stops_once_converged_with_the_answer_of_running_on(tmp_path, train_device, tol, assert_close):
    store = RunStore(tmp_path / "runs.sqlite")
    trainer = Trainer(rkhs_config(train_device), store=store)
    snaps = list(trainer.run(every=10))
    assert trainer.solve.converged and trainer.status == "finished"
    assert trainer.step_count < 20  # of 500 configured
    assert snaps[-1].step == trainer.step_count and snaps[-1].status == "finished"
    assert snaps[-1].health.state == "converged"
    record = store.runs.get(trainer.record.run_id)
    assert record.status == "finished" and "converged" in (record.message or "")

    on = Trainer(rkhs_config(train_device))
    for _ in range(trainer.step_count + 30):  # `step` never stops: the same solve run 30 steps further
        on.step()
    assert_close(on.last_parts["loss"], trainer.last_parts["loss"], tol.f64(rtol=1e-8, atol=0))
    X = torch.as_tensor(trainer.dataset.X_test[:100])
    assert_close(trainer.report.predict(X).probs, on.report.predict(X).probs, tol.f64(atol=1e-6))
    store.close()


def test_a_live_edit_clears_converged_and_the_next_run_solves_again(train_device):
    trainer = Trainer(rkhs_config(train_device))
    list(trainer.run())
    loss = trainer.last_parts["loss"]
    trainer.edits.put(SetValue("nu", 2.0))
    assert not trainer.solve.converged
    list(trainer.run(steps=10))
    assert trainer.solve.converged and trainer.last_parts["loss"] != loss


def test_adam_runs_do_not_converge_early(train_device):
    trainer = Trainer(RunConfig(model="svgp", data={"dataset": "digits", "subset": 100, "test_subset": 30},
                                model_config={"num_inducing": 10},
                                train={"steps": 15, "eval_size": 30, "batch_size": 50, "log_every": 5, **train_device}))
    list(trainer.run())
    assert trainer.step_count == 15 and not trainer.solve.converged


def test_the_cli_says_the_solve_converged(capsys, cli_device):
    assert main(["train", "--model", "rkhs", "--dataset", "two-moons", "--steps", "400", "--quiet", *cli_device]) == 0
    err = capsys.readouterr().err
    assert "converged" in err and "of 400" in err


@pytest.mark.float64_only(reason="which way Adam at rate 10 collapses the model is decided by rounding (float32: the "
                                 "variance, seen after step 20; see tests/train/test_health.py)")
def test_the_cli_reports_a_collapse_once(capsys, cli_device):
    argv = ["train", "--model", "svgp", "--dataset", "digits", "--subset", "400", "--test-subset", "200",
            "--num-inducing", "60", "--learning-rate", "10", "--steps", "20", "--eval-every", "5", "--eval-size", "200",
            "--log-every", "5", "--batch-size", "128", "--quiet", *cli_device]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert err.count("collapsed:") == 1 and "lower the learning rate (now 10) and train again" in err
