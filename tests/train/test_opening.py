"""One road to continue a stored run (`invlab.train.opening.open_run`): `invlab train --resume` and the page's opened
run (`OpenedRuns`, then ▶ Start) continue a run whose newest checkpoint is garbage from the same checkpoint, naming
the file they skipped, with the same history; opening without claiming changes nothing stored, claiming drops the
metrics and views past the checkpoint, and a second claimant is refused."""
import shutil

import pytest

from invlab.dashboard.session.opened_runs import OpenedRuns
from invlab.train import RunConfig, RunStore, RunStoreError, Trainer
from invlab.train.opening import open_run
from invlab.train.states import RunStatus
from tests.helpers.cli import run_main

CONFIG = RunConfig(model="svgp", data={"dataset": "two-moons"}, model_config={"num_inducing": 8},
                   train={"steps": 30, "log_every": 1, "eval_every": 0, "checkpoint_every": 5, "checkpoint_seconds": 0,
                          "keep_checkpoints": 0, "flush_every": 1, "device": "cpu"})


@pytest.fixture
def broken_run(tmp_path):
    """A run stored to step 17 with checkpoints at 5, 10 and 15, the one at 15 overwritten with garbage."""
    data = tmp_path / "data"
    with RunStore(data / "runs.sqlite") as store:
        trainer = Trainer(CONFIG, store=store)
        list(trainer.run(17))
        trainer.record.release(RunStatus.PAUSED)
        step, path = store.checkpoints.latest(trainer.record.run_id)
        assert step == 15
        path.write_bytes(b"this is not a checkpoint")
        return data, trainer.record.run_id, path


def test_the_page_and_the_command_line_continue_from_the_same_checkpoint(broken_run, tmp_path, capsys, monkeypatch):
    data, run_id, corrupt = broken_run
    other = tmp_path / "copy"  # the page opens one copy of the store, the command line the other
    shutil.copytree(data, other)
    with RunStore(other / "runs.sqlite") as store:
        opened = OpenedRuns(store, None, trainer=lambda: None)
        shown = opened.open(run_id)
        assert shown.trainer.step_count == 10 and shown.values["step"] == 10
        assert corrupt.name in shown.values["message"] and "at step 10" in shown.values["message"]
        assert store.metrics.read(run_id)["elbo"][0][-1] == 17  # opening changes nothing stored
        assert opened.claim(shown.trainer) is None  # ▶ Start: claimed, and what was stored past step 10 dropped
        page_history = {name: points for name, points in store.metrics.read(run_id).items()}
        assert page_history["elbo"][0][-1] == 10
    monkeypatch.setenv("INVLAB_DATA", str(data))
    code, _, err = run_main(capsys, "train", "--resume", str(run_id), "--steps", "12", "--quiet")
    assert code == 0, err
    assert f"resuming run {run_id} at step 10 of 12" in err and corrupt.name in err
    with RunStore(data / "runs.sqlite") as store:
        steps, values = store.metrics.read(run_id)["elbo"]
    assert steps[:10] == page_history["elbo"][0] and values[:10] == page_history["elbo"][1]


def test_open_run_claims_once_and_refuses_a_second_claimant(broken_run):
    data, run_id, corrupt = broken_run
    with RunStore(data / "runs.sqlite") as store:
        shown = open_run(store, run_id, claim=False)
        assert shown.step == 10 and not shown.claimed and [s.step for s in shown.skipped] == [15]
        assert shown.history["elbo"][0][-1] == 10 and shown.dropped == 7
        first = open_run(store, run_id)
        assert first.claimed and first.trainer.step_count == 10 and corrupt.name in first.notes[0]
        assert store.metrics.read(run_id)["elbo"][0][-1] == 10
        with pytest.raises(RunStoreError):
            open_run(store, run_id)
        first.trainer.record.release(RunStatus.PAUSED)
