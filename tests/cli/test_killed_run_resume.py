"""`invlab train --resume ID` of a run killed with `kill -9` whose newest checkpoint is garbage goes on from the
checkpoint before it, naming the file it skipped, and trains the same run on to its new total."""
from invlab.train import RunStore
from invlab.train.states import RunStatus
from tests.helpers.cli import run_main
from tests.helpers.killed_run import killed_run


def test_a_killed_run_resumes_from_the_checkpoint_before_its_corrupt_newest(tmp_path, capsys, monkeypatch):
    data = tmp_path / "data"
    killed = killed_run(data)
    monkeypatch.setenv("INVLAB_DATA", str(data))
    steps = killed.previous + 5
    code, _, err = run_main(capsys, "train", "--resume", str(killed.run_id), "--steps", str(steps), "--quiet")
    assert code == 0, err
    assert f"resuming run {killed.run_id} at step {killed.previous} of {steps}" in err
    assert f"note: the checkpoint at step {killed.corrupt} was skipped" in err and killed.corrupt_path.name in err
    with RunStore() as store:
        record = store.runs.get(killed.run_id)
        assert (record.status, record.step) == (RunStatus.FINISHED, steps)
        assert [run.id for run in store.runs.list()] == [killed.run_id]  # no new run
