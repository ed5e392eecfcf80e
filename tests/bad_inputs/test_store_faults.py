"""The run store under faults: locked by another program, read-only, no data directory."""

import sqlite3
from pathlib import Path

import pytest

from invlab.errors import InvlabError
from tests.bad_inputs.worlds import QUICK, run_cli, setup_one_run

# -- the store under faults: locked by another program, read-only, no data directory --------------------------------


@pytest.fixture
def quick_store(monkeypatch):
    """Short waits for the lock, so a test sees queueing and giving up in a fraction of a second."""
    from invlab.train import RunStore

    monkeypatch.setattr(RunStore, "busy_timeout", 0.05)
    monkeypatch.setattr(RunStore, "max_wait", 0.3)
    return RunStore


def _hold_write_lock(path):
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # what a long write by another program looks like from here
    return other


def test_a_store_locked_by_another_program_queues_writes_and_training_goes_on(tmp_path, quick_store):
    from invlab.train import RunConfig, Trainer

    heard = []
    store = quick_store(tmp_path / "runs.sqlite", on_busy=heard.append)
    config = RunConfig(data={"dataset": "digits", "subset": 60}, model_config={"num_inducing": 10},
                       train={"steps": 40, "log_every": 5, "flush_every": 10, "eval_every": 20,
                              "checkpoint_every": 20})
    trainer = Trainer(config, store=store)
    other = _hold_write_lock(store.path)
    for _ in trainer.run():
        pass
    assert trainer.step_count == 40 and trainer.status == "finished"  # the run was never stopped
    assert store.pending > 0 and "locked by another program" in heard[0] and "training goes on" in heard[0]
    assert store.runs.get(trainer.record.run_id).status == "created"  # nothing reached the file yet
    other.rollback()  # the other program lets go
    assert store.flush() and "writable again" in heard[-1]
    record = store.runs.get(trainer.record.run_id)
    assert (record.status, record.step) == ("finished", 40)
    stored = store.metrics.read(trainer.record.run_id)
    assert set(stored) == set(trainer.history)
    for name, (steps, values) in trainer.history.items():
        assert stored[name] == (list(steps), list(values)), name  # every value, none twice
    assert store.checkpoints.latest(trainer.record.run_id)[0] == 40
    store.close()


def test_a_store_locked_at_close_sets_its_queue_aside_and_the_next_store_takes_it(tmp_path, quick_store):

    path = tmp_path / "runs.sqlite"
    store = quick_store(path)
    run = store.runs.create("{}", "svgp", "digits")
    other = _hold_write_lock(path)
    for step in range(30):
        store.metrics.log(run, step, {"loss": float(step)})
    store.runs.update(run, status="finished", step=29)
    with pytest.raises(InvlabError, match="stayed locked by another program .* saved in .*queued-.*json"):
        store.close()
    other.rollback()
    other.close()
    with quick_store(path) as again:
        assert again.runs.get(run).status == "finished"
        assert again.metrics.read(run)["loss"] == (list(range(30)), [float(s) for s in range(30)])
    assert not list(tmp_path.glob("*.json*"))  # taken back once, then removed


def test_train_refuses_to_start_on_a_store_that_stays_locked(tmp_path, monkeypatch, capsys, quick_store):
    monkeypatch.setenv("INVLAB_DATA", str(tmp_path / "data"))
    quick_store(tmp_path / "data" / "runs.sqlite").close()
    other = _hold_write_lock(tmp_path / "data" / "runs.sqlite")
    code, _, err = run_cli(["train", *QUICK], capsys)
    other.rollback()
    assert code == 1 and "Traceback" not in err
    assert "locked by another program" in err and "fuser" in err
    with quick_store(tmp_path / "data" / "runs.sqlite") as store:
        assert store.runs.list() == []  # nothing half-started


def _read_only(path: Path, monkeypatch):
    """The store file opened read-only, as for a file without write permission (root ignores chmod)."""
    import invlab.train.store as store_module

    real = sqlite3.connect

    def connect(target, *args, **kwargs):
        if str(target) == str(path):
            kwargs.pop("uri", None)
            return real(f"file:{path}?mode=ro", *args, uri=True, **kwargs)
        return real(target, *args, **kwargs)

    monkeypatch.setattr(store_module.sqlite3, "connect", connect)


def test_a_read_only_store_lists_its_runs_and_refuses_new_ones_with_the_fix(world, capsys, monkeypatch):
    setup_one_run(world)
    path = world / "data" / "runs.sqlite"
    capsys.readouterr()
    _read_only(path, monkeypatch)
    code, out, _ = run_cli(["runs"], capsys)
    assert code == 0 and "finished" in out
    code, _, err = run_cli(["train", *QUICK], capsys)
    assert code == 1 and "Traceback" not in err and "read-only" in err and "INVLAB_DATA" in err


def test_a_data_directory_that_cannot_be_created_is_named(world, capsys, monkeypatch):
    real = Path.mkdir

    def mkdir(self, *args, **kwargs):
        if str(self).startswith(str(world / "data")):
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    code, _, err = run_cli(["train", *QUICK], capsys)  # `invlab runs` creates nothing (the next test)
    assert code == 1 and "Traceback" not in err
    assert "INVLAB_DATA" in err and "cannot be created (Permission denied)" in err


def test_a_data_directory_that_does_not_exist_is_named_and_not_created_by_listing(world, capsys, monkeypatch):
    mistyped = world / "nonexistent" / "deep" / "x"
    monkeypatch.setenv("INVLAB_DATA", str(mistyped))
    for command in ("runs", "sweeps"):
        code, out, err = run_cli([command], capsys)
        assert code == 1 and "Traceback" not in err and out == ""
        assert f"invlab {command}: no run store at {mistyped / 'runs.sqlite'}: INVLAB_DATA={mistyped} does not " \
               "exist; check the path" in err
        assert not (world / "nonexistent").exists()  # nothing was created
    monkeypatch.delenv("INVLAB_DATA")
    monkeypatch.setenv("HOME", str(world / "home"))  # the default data directory, not made yet: nothing stored
    code, out, _ = run_cli(["runs"], capsys)
    assert code == 0 and f"no runs stored yet in {world / 'home' / '.cache' / 'invlab' / 'runs.sqlite'}" in out
    assert not (world / "home").exists()
    code, _, _ = run_cli(["train", *QUICK], capsys)  # a command that writes makes it
    assert code == 0 and (world / "home" / ".cache" / "invlab" / "runs.sqlite").exists()


def test_a_read_only_data_directory_is_listed_and_opened_read_only(world, capsys):
    """runs.sqlite mode 444 in a folder mode 555. Root may write through any mode, so what shows the store was
    opened read-only is that nothing in the folder changed: no WAL or lock files appeared, no byte of the store."""
    from invlab.train import RunStore

    setup_one_run(world)
    data = world / "data"
    with RunStore(data / "runs.sqlite") as store:
        store.sweeps.create("rotation-choice", "{}", 4)
    files = {path.name: path.read_bytes() for path in data.iterdir() if path.is_file()}
    (data / "runs.sqlite").chmod(0o444)
    data.chmod(0o555)
    capsys.readouterr()
    try:
        code, out, err = run_cli(["runs"], capsys)
        assert code == 0 and "finished" in out, err
        code, out, err = run_cli(["sweeps"], capsys)
        assert code == 0 and "rotation-choice" in out and "0/4" in out, err
        code, _, err = run_cli(["train", "--resume", "1", "--steps", "4", "--quiet"], capsys)
        assert code == 1 and "Traceback" not in err
        assert f"the run store {data / 'runs.sqlite'} is read-only" in err and "chmod u+w" in err
        assert {path.name: path.read_bytes() for path in data.iterdir() if path.is_file()} == files
    finally:
        data.chmod(0o755)
        (data / "runs.sqlite").chmod(0o644)
    (data / "runs.sqlite").chmod(0o444)  # the file alone read-only, its folder writable: listed as well
    try:
        code, out, err = run_cli(["runs"], capsys)
        assert code == 0 and "finished" in out, err
        with RunStore(data / "runs.sqlite") as store:
            assert store.read_only and store.runs.get(1).status == "finished"
    finally:
        (data / "runs.sqlite").chmod(0o644)
