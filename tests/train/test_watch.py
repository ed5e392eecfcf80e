"""`invlab.train.watch`: a hand-written Adam loop on the default SVGP, recorded in the run store like any other run
and listed by `invlab runs` (a real process) under its name with its last values; leaving the block marks it
finished, or failed with the exception's message; logged values reach the store while the loop still runs. Bad
input (non-finite or non-scalar values, a read-only data directory, two writers): tests/bad_inputs/."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from invlab.models.base import DataInfo
from invlab.train import RunConfig, RunStore, watch

ROOT = Path(__file__).resolve().parents[2]
CONFIG = RunConfig(model="svgp", data={"dataset": "digits", "subset": 200}, model_config={"num_inducing": 16})


def default_svgp(config: RunConfig = CONFIG):
    """(model, dataset, X, y): the default SVGP built from `config` as a user's own loop would build it."""
    data = config.data_config().load()
    X, y = torch.as_tensor(data.X_train), torch.as_tensor(data.y_train)
    model = config.model_spec().build(config.model_params(), X, y, DataInfo.of(data))
    return model, data, X, y


def adam_loop(run, model, X, y, steps: int, start: int = 1) -> float:
    """`steps` Adam steps on the full batch, each logged with `run`; returns the last ELBO."""
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    elbo = None
    for step in range(start, start + steps):
        optimizer.zero_grad()
        terms = model.loss((X, y))
        terms.loss.backward()
        optimizer.step()
        elbo = float(terms.parts["elbo"])
        run.log(step, loss=terms.loss, elbo=terms.parts["elbo"])
    return elbo


def invlab_runs(data_dir: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, INVLAB_DATA=str(data_dir), PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "invlab", "runs"], capture_output=True, text=True, env=env,
                          timeout=120)


def test_a_watched_adam_loop_is_listed_by_invlab_runs_with_its_name_and_last_values(tmp_path):
    model, data, X, y = default_svgp()
    with watch(model, name="my-adam-loop", config=CONFIG, data=data, data_dir=tmp_path) as run:
        elbo = adam_loop(run, model, X, y, steps=30)
    out = invlab_runs(tmp_path)
    assert out.returncode == 0, out.stderr
    header, line = out.stdout.splitlines()[:2]
    assert header.split()[-1] == "name"
    fields = line.split()
    assert fields[-1] == "my-adam-loop"
    assert fields[1:5] == ["svgp", "digits", "finished", "30"]
    assert fields[5] == format(elbo, ".5g")  # the last ELBO logged
    with RunStore(tmp_path / "runs.sqlite") as store:
        record = store.runs.get(run.run_id)
        steps, values = store.metrics.read(run.run_id)["elbo"]
    assert (record.name, record.status, record.message) == ("my-adam-loop", "finished", None)
    assert steps == list(range(1, 31)) and values[-1] == pytest.approx(elbo)


def test_an_exception_in_the_block_marks_the_run_failed_with_its_message(tmp_path):
    model, data, X, y = default_svgp()
    with pytest.raises(RuntimeError, match="the loss exploded"):
        with watch(model, name="exploding", config=CONFIG, data=data, data_dir=tmp_path) as run:
            adam_loop(run, model, X, y, steps=3)
            raise RuntimeError("the loss exploded at step 3")
    with RunStore(tmp_path / "runs.sqlite") as store:
        record = store.runs.get(run.run_id)
        kept = store.metrics.read(run.run_id)["loss"][0]
    assert record.status == "failed" and record.step == 3
    assert record.message == "RuntimeError: the loss exploded at step 3"
    assert kept == [1, 2, 3]  # what was logged before the exception is kept
    out = invlab_runs(tmp_path)
    assert "failed" in out.stdout and "exploding" in out.stdout


def test_snapshot_records_the_models_hyperparameters_as_metrics(tmp_path):
    model, data, X, y = default_svgp()
    with watch(model, name="snap", config=CONFIG, data=data, data_dir=tmp_path) as run:
        adam_loop(run, model, X, y, steps=5)
        views = run.snapshot()
    assert {"kuu_spectrum", "hyperparameters", "inducing_inputs"} <= set(views)
    with RunStore(tmp_path / "runs.sqlite") as store:
        stored = store.metrics.read(run.run_id)
    hyper = {name: values for name, (steps, values) in stored.items() if name.startswith("hyperparameters/")}
    assert hyper, sorted(stored)
    expected = views["hyperparameters"].values
    assert {name.split("/", 1)[1]: values[-1] for name, values in hyper.items()} == pytest.approx(expected)
    assert all(stored[name][0] == [5] for name in hyper)  # at the last step logged


def test_any_object_with_diagnostics_can_be_snapshotted(tmp_path):
    from invlab.diagnostics import Scalars

    class Mine:
        def diagnostics(self):
            return {"mine": Scalars(title="mine", values={"temperature": 0.5})}

    with watch(Mine(), name="mine", data_dir=tmp_path) as run:
        run.log(1, loss=2.0)
        run.snapshot()
    with RunStore(tmp_path / "runs.sqlite") as store:
        assert store.metrics.read(run.run_id)["mine/temperature"] == ([1], [0.5])
        assert store.runs.get(run.run_id).model == "Mine"


def test_logged_values_reach_the_store_while_the_loop_runs_at_a_bounded_rate(tmp_path, monkeypatch):
    from invlab.train.watch import FLUSHES_PER_SECOND

    with watch(name="live", data_dir=tmp_path) as run:
        flushes = []
        monkeypatch.setattr(run.store.runs, "update", lambda *a, _real=run.store.runs.update, **k: (
            flushes.append(1), _real(*a, **k))[1])
        start = time.monotonic()
        for step in range(1, 20001):
            run.log(step, loss=1.0 / step)
        elapsed = time.monotonic() - start
        time.sleep(1.5 / FLUSHES_PER_SECOND)
        run.log(20001, loss=0.0)  # due: written now, before the block ends
        with RunStore(tmp_path / "runs.sqlite") as reader:
            seen = reader.metrics.read(run.run_id)["loss"][0]
            assert reader.runs.get(run.run_id).status == "running"
        assert seen[-1] == 20001 and len(seen) == 20001
    # one write per 1/FLUSHES_PER_SECOND at most, however many values were logged
    assert len(flushes) <= elapsed * FLUSHES_PER_SECOND + 2
