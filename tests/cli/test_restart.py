"""`invlab train --resume ID --restart`: a new run with run ID's settings, where every flag given on the line (the
model family included) overrides the stored value and is said in the line that announces the new run; a stored
setting the new family cannot take is named, and one the new family refuses is refused with the flag to give."""
import json
import os
from pathlib import Path

from invlab.train import RunConfig, RunStore
from tests.helpers.cli import run_main

TINY = ["--subset", "60", "--num-inducing", "10", "--eval-every", "0", "--quiet"]


def _stored(run_id: int) -> RunConfig:
    with RunStore(Path(os.environ["INVLAB_DATA"]) / "runs.sqlite") as store:
        return RunConfig.from_json(store.runs.get(run_id).config)


def test_restart_with_another_model_trains_that_model_with_the_stored_settings(capsys):
    code, _, err = run_main(capsys, "train", "--steps", "2", "--epsilon", "0.01", *TINY)
    assert code == 0, err
    code, out, err = run_main(capsys, "train", "--resume", "1", "--restart", "--model", "invariant", "--steps", "1",
                              "--quiet")
    assert code == 0, err
    assert "Traceback" not in err
    assert ("run 2: a new run with the settings of run 1, model invariant, steps 1 (run 1 is kept as it was); "
            "run 1's epsilon=0.01 is not a setting of invariant and is left out") in err, err
    assert "run 2 | invariant on digits | step 1" in out
    new = _stored(2)
    assert new.model == "invariant"
    assert new.data["subset"] == 60 and new.model_config["num_inducing"] == 10  # carried over from run 1
    assert "epsilon" not in new.model_config
    assert _stored(1).model == "svgp"  # run 1 is kept as it was
    code, runs, _ = run_main(capsys, "runs", "--json")
    assert [json.loads(line)["model"] for line in runs.splitlines()] == ["invariant", "svgp"]


def test_restart_says_each_override_and_leaves_out_values_equal_to_the_stored_ones(capsys):
    code, _, err = run_main(capsys, "train", "--steps", "2", *TINY)
    assert code == 0, err
    code, _, err = run_main(capsys, "train", "--resume", "1", "--restart", "--steps", "2", "--subset", "50",
                            "--num-inducing", "8", "--quiet")
    assert code == 0, err
    assert "run 2: a new run with the settings of run 1, subset 50, num_inducing 8 (run 1 is kept as it was)" in err
    new = _stored(2)
    assert (new.model, new.data["subset"], new.model_config["num_inducing"]) == ("svgp", 50, 8)


def test_restart_refuses_a_stored_setting_the_new_model_cannot_take(capsys):
    code, _, err = run_main(capsys, "train", "--steps", "1", "--kernel", "matern52", *TINY)
    assert code == 0, err
    code, _, err = run_main(capsys, "train", "--resume", "1", "--restart", "--model", "dkp_svgp", "--quiet")
    assert code == 1, err
    assert "Traceback" not in err
    line = err.strip().splitlines()[-1]
    assert line.startswith("invlab train: --restart --model dkp_svgp: run 1's kernel='matern52'"), err
    assert "--kernel" in line and "relu" in line, line
    with RunStore(Path(os.environ["INVLAB_DATA"]) / "runs.sqlite") as store:
        assert [r.id for r in store.runs.list(10)] == [1]  # nothing new was stored
    code, out, err = run_main(capsys, "train", "--resume", "1", "--restart", "--model", "dkp_svgp",
                              "--kernel", "relu", "--steps", "1", "--quiet")
    assert code == 0, err
    assert "model dkp_svgp, kernel relu" in err and "run 2 | dkp_svgp on digits" in out
