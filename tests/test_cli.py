"""`invlab` end to end, as a user runs it: a real process, the real store, a real (small) training run."""
import json
import os
import subprocess
import sys

import pytest


def invlab(*args, data_dir, timeout=300):
    env = dict(os.environ, INVLAB_DATA=str(data_dir))
    return subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


@pytest.fixture
def data_dir(tmp_path):
    return tmp_path / "data"


def test_train_on_digits_then_list_and_resume(data_dir):
    out = invlab("train", "--model", "svgp", "--dataset", "digits", "--steps", "40", "--num-inducing", "30",
                 "--eval-every", "20", "--checkpoint-every", "20", "--batch-size", "128", data_dir=data_dir)
    assert out.returncode == 0, out.stderr
    summary = out.stdout.strip().splitlines()[-1]
    assert summary.startswith("run 1 | svgp on digits | step 40 | ELBO")
    assert "test error" in summary and "NLPD" in summary
    error = float(summary.split("test error ")[1].split("%")[0])
    assert error < 50.0  # 40 steps from scratch already beat chance (90%) by far
    assert "step/s" in out.stderr  # the progress bar

    runs = invlab("runs", "--json", data_dir=data_dir)
    record = json.loads(runs.stdout.strip().splitlines()[0])
    assert record["id"] == 1 and record["status"] == "finished" and record["step"] == 40
    assert abs(record["test_error"] * 100 - error) < 0.01

    table = invlab("runs", data_dir=data_dir).stdout
    assert "svgp" in table and "digits" in table and "finished" in table

    more = invlab("train", "--resume", "1", "--steps", "50", data_dir=data_dir)
    assert more.returncode == 0, more.stderr
    assert "resuming run 1 at step 40 of 50" in more.stderr
    assert "| step 50 |" in more.stdout


def test_bad_values_are_refused_with_the_parameter_named(data_dir):
    out = invlab("train", "--num-inducing", "0", "--steps", "1", data_dir=data_dir)
    assert out.returncode == 1 and "num_inducing" in out.stderr
    out = invlab("train", "--dataset", "no-such-set", "--steps", "1", data_dir=data_dir)
    assert out.returncode == 1 and "digits" in out.stderr and "not a known dataset" in out.stderr
    out = invlab("train", "--dataset", "mnist", "--steps", "1", data_dir=data_dir)
    assert out.returncode == 1 and "invlab fetch mnist" in out.stderr
    out = invlab("train", "--likelihood", "bernoulli", "--steps", "1", data_dir=data_dir)
    assert out.returncode == 1 and "2 classes" in out.stderr
    out = invlab("train", "--resume", "7", data_dir=data_dir)
    assert out.returncode == 1 and "no run with id 7" in out.stderr


def test_help_lists_generated_flags(data_dir):
    out = invlab("train", "--help", data_dir=data_dir)
    assert out.returncode == 0
    for flag in ("--num-inducing", "--kernel", "--rotate", "--odd-even", "--learning-rate", "--data-seed", "--whiten"):
        assert flag in out.stdout
    assert "Range 1..5000" in out.stdout  # bounds come from the param config


def test_runs_on_an_empty_store(data_dir):
    out = invlab("runs", data_dir=data_dir)
    assert out.returncode == 0 and "no runs stored yet" in out.stdout
