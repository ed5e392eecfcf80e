"""L-BFGS runs stop when their solve has converged, with the same answer as running on; Adam runs never do."""
import torch

from engine.cli import main
from engine.train import RunConfig, RunStore, Trainer


def rkhs_config(steps=500):
    return RunConfig(model="rkhs", data={"dataset": "two-moons"}, train={"steps": steps, "log_every": 1})


def test_an_rkhs_solve_stops_once_converged_with_the_answer_of_running_on(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    trainer = Trainer(rkhs_config(), store=store)
    snaps = list(trainer.run(every=10))
    assert trainer.converged and trainer.status == "finished"
    assert trainer.step_count < 20  # of 500 configured
    assert snaps[-1].step == trainer.step_count and snaps[-1].status == "finished"
    assert snaps[-1].health.state == "converged"
    record = store.get_run(trainer.run_id)
    assert record.status == "finished" and "converged" in (record.message or "")

    on = Trainer(rkhs_config())
    for _ in range(trainer.step_count + 30):  # `step` never stops: the same solve run 30 steps further
        on.step()
    assert abs(on.last_parts["loss"] - trainer.last_parts["loss"]) <= 1e-8 * abs(trainer.last_parts["loss"])
    X = torch.as_tensor(trainer.dataset.X_test[:100])
    assert torch.allclose(trainer.predict(X).probs, on.predict(X).probs, atol=1e-6)
    store.close()


def test_a_live_edit_clears_converged_and_the_next_run_solves_again():
    trainer = Trainer(rkhs_config())
    list(trainer.run())
    loss = trainer.last_parts["loss"]
    trainer.set_value("nu", 2.0)
    assert not trainer.converged
    list(trainer.run(steps=10))
    assert trainer.converged and trainer.last_parts["loss"] != loss


def test_adam_runs_do_not_converge_early():
    trainer = Trainer(RunConfig(model="svgp", data={"dataset": "digits", "subset": 100, "test_subset": 30},
                                model_config={"num_inducing": 10},
                                train={"steps": 15, "eval_size": 30, "batch_size": 50, "log_every": 5}))
    list(trainer.run())
    assert trainer.step_count == 15 and not trainer.converged


def test_the_cli_says_the_solve_converged(capsys):
    assert main(["train", "--model", "rkhs", "--dataset", "two-moons", "--steps", "400", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "converged" in err and "of 400" in err


def test_the_cli_reports_a_collapse_once(capsys):
    argv = ["train", "--model", "svgp", "--dataset", "digits", "--subset", "400", "--test-subset", "200",
            "--num-inducing", "60", "--learning-rate", "10", "--steps", "20", "--eval-every", "5", "--eval-size", "200",
            "--log-every", "5", "--batch-size", "128", "--quiet"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert err.count("collapsed:") == 1 and "lower the learning rate (now 10) and train again" in err
