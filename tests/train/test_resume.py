"""Resume never destroys anything: exact continuation, checkpoints found after a move, refusals that keep the
stored metrics, flags applied or refused by name, and killed runs that say so."""
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
import torch

from invlab.train import RunConfig, RunStore, RunStoreError, Trainer, open_run
from invlab.train.checkpoint import CheckpointError, load_checkpoint
from tests.helpers.cli import run_main


def svgp_config(train_device, **train):
    return RunConfig(model="svgp", data={"dataset": "digits", "subset": 300, "test_subset": 100},
                     model_config={"num_inducing": 16},
                     train={"steps": 10, "log_every": 2, "eval_every": 3, "eval_size": 60, "batch_size": 64,
                            "checkpoint_seconds": 0, **train_device, **train})


def invariant_config(train_device, **train):
    """A sampled orbit: every step draws random rotations, and prediction (evaluation) draws some too."""
    return RunConfig(model="invariant", data={"dataset": "digits", "odd_even": True, "subset": 120, "test_subset": 40},
                     model_config={"num_inducing": 8, "num_samples": 3, "num_predict_samples": 4},
                     train={"steps": 10, "log_every": 2, "eval_every": 3, "eval_size": 40, "batch_size": 32,
                            "checkpoint_seconds": 0, **train_device, **train})


def state_of(trainer):
    return {k: v.detach().to("cpu", torch.float64).clone() for k, v in trainer.model.state_dict().items()}


# -- item 4: a resumed run is the uninterrupted run --------------------------------------------------------------------
@pytest.mark.float64_only("resume must reproduce the uninterrupted run to 1e-10")
@pytest.mark.parametrize("make", [svgp_config, invariant_config], ids=["svgp", "invariant-sampled-orbit"])
def test_resume_mid_epoch_equals_the_uninterrupted_run(tmp_path, train_device, make):
    config = make(train_device)
    whole = Trainer(config)
    list(whole.run())
    assert whole.step_count == 10

    store = RunStore(tmp_path / "runs.sqlite")
    first = Trainer(config, store=store)
    list(first.run(5))  # 5 of 10 steps: mid-epoch (300 / 64 and 120 / 32 are not whole numbers of steps)
    first.save_checkpoint()
    run_id = first.record.run_id
    del first
    torch.manual_seed(999)  # anything else the process draws in between must not matter
    torch.rand(17)
    second = open_run(store, run_id).trainer
    assert second.step_count == 5
    list(second.run())
    assert second.step_count == 10
    expected, got = state_of(whole), state_of(second)
    assert expected.keys() == got.keys()
    for name in expected:
        torch.testing.assert_close(got[name], expected[name], rtol=1e-10, atol=1e-10, msg=name)
    # the evaluations agree too (they draw their own, seeded, random numbers)
    assert second.report.last_metrics == pytest.approx(whole.report.last_metrics, rel=1e-10, abs=1e-10)
    store.close()


# -- item 1: never a silent restart, never lost metrics ----------------------------------------------------------------
def test_resume_without_a_checkpoint_refuses_and_keeps_the_metrics(tmp_path, train_device, capsys, monkeypatch):
    data = tmp_path / "data"
    monkeypatch.setenv("INVLAB_DATA", str(data))
    store = RunStore()
    trainer = Trainer(svgp_config(train_device, steps=40, flush_every=5, checkpoint_every=0), store=store)
    list(trainer.run(20))  # paused at step 20, no checkpoint written (interval-based ones are off)
    store.flush()
    before = store.metrics.read(trainer.record.run_id)
    assert before["elbo"][0][-1] == 20
    with pytest.raises(CheckpointError, match=rf"run {trainer.record.run_id} has no usable checkpoint"):
        open_run(store, trainer.record.run_id).trainer
    assert store.metrics.read(trainer.record.run_id) == before
    store.close()

    code, _, err = run_main(capsys, "train", "--resume", str(trainer.record.run_id), "--steps", "30")
    assert code == 1
    assert f"run {trainer.record.run_id}" in err and "--restart" in err
    with RunStore() as again:
        assert again.metrics.read(trainer.record.run_id) == before  # nothing deleted
        record = again.runs.get(trainer.record.run_id)
        assert record.step == 20
    # asked for: its settings again, as a new run; the old one stays
    code, out, err = run_main(capsys, "train", "--resume", str(trainer.record.run_id), "--restart", "--steps", "4",
                              "--quiet")
    assert code == 0, err
    assert out.startswith(f"run {trainer.record.run_id + 1} | svgp on digits | step 4 |")
    with RunStore() as again:
        assert again.metrics.read(trainer.record.run_id) == before and again.runs.get(trainer.record.run_id).step == 20
        config = RunConfig.from_json(again.runs.get(trainer.record.run_id + 1).config)
        assert config.model_config == {"num_inducing": 16}


def test_a_corrupt_latest_checkpoint_is_skipped_with_a_note(tmp_path, train_device):
    store = RunStore(tmp_path / "runs.sqlite")
    trainer = Trainer(svgp_config(train_device, steps=30, checkpoint_every=10, flush_every=5), store=store)
    list(trainer.run(25))
    latest = store.checkpoints.latest(trainer.record.run_id)
    assert latest[0] == 20
    latest[1].write_bytes(b"half a checkpoint")
    resumed = open_run(store, trainer.record.run_id).trainer
    assert resumed.step_count == 10
    assert any("step_00000020" in note and "cannot be read" in note for note in resumed.resume_notes)
    steps, _ = store.metrics.read(trainer.record.run_id)["elbo"]
    assert steps[-1] == 10  # only the metrics after the checkpoint it continues from are dropped
    store.close()


def test_a_moved_data_directory_still_resumes(tmp_path, train_device, capsys, monkeypatch, cli_device):
    old, new = tmp_path / "old", tmp_path / "new"
    monkeypatch.setenv("INVLAB_DATA", str(old))
    code, _, err = run_main(capsys, "train", "--dataset", "digits", "--subset", "200", "--test-subset", "50",
                            "--num-inducing", "10", "--steps", "10", "--eval-every", "0", "--batch-size", "50",
                            "--quiet", *cli_device)
    assert code == 0, err
    with RunStore() as store:  # a run stored by an older version: an absolute checkpoint path
        step, path = store.checkpoints.latest(1)
        rid = store.runs.create(store.runs.get(1).config, "svgp", "digits", status="paused")
        store.checkpoints.add(rid, step, path.resolve())
        store.connection.db.execute("UPDATE checkpoints SET path = ? WHERE run_id = ?", (str(path.resolve()), rid))
        store.connection.db.commit()
    shutil.move(old, new)
    monkeypatch.setenv("INVLAB_DATA", str(new))
    for run in ("1", str(rid)):
        code, out, err = run_main(capsys, "train", "--resume", run, "--steps", "12", "--quiet")
        assert code == 0, err
        assert f"resuming run {run} at step 10 of 12" in err and "| step 12 |" in out


# -- item 2: flags given with --resume ---------------------------------------------------------------------------------
def test_resume_applies_the_learning_rate_and_records_it(tmp_path, train_device, capsys, monkeypatch, cli_device):
    monkeypatch.setenv("INVLAB_DATA", str(tmp_path / "data"))
    code, _, err = run_main(capsys, "train", "--dataset", "digits", "--subset", "200", "--test-subset", "50",
                            "--num-inducing", "10", "--steps", "10", "--eval-every", "0", "--batch-size", "50",
                            "--learning-rate", "0.01", "--quiet", *cli_device)
    assert code == 0, err
    code, _, err = run_main(capsys, "train", "--resume", "1", "--steps", "14", "--learning-rate", "0.003",
                            "--log-every", "7", "--quiet")
    assert code == 0, err
    assert "learning_rate 0.01 -> 0.003" in err
    with RunStore() as store:
        config = RunConfig.from_json(store.runs.get(1).config)
        assert config.train["learning_rate"] == 0.003 and config.train["steps"] == 14 and config.train["log_every"] == 7
        step, path = store.checkpoints.latest(1)
    assert step == 14
    payload = load_checkpoint(path)
    assert [g["lr"] for g in payload["optimizer"]["param_groups"]] == [0.003]
    # at the trainer: the new rate is in force from the first resumed step
    store = RunStore()
    trainer = open_run(store, 1, train={"learning_rate": 0.002}).trainer
    assert trainer.edits.current_lr == 0.002 and trainer.tc.learning_rate == 0.002
    store.close()


def test_resume_refuses_flags_that_need_a_new_model_by_name(tmp_path, train_device, capsys, monkeypatch, cli_device):
    monkeypatch.setenv("INVLAB_DATA", str(tmp_path / "data"))
    code, _, err = run_main(capsys, "train", "--dataset", "digits", "--subset", "200", "--test-subset", "50",
                            "--num-inducing", "10", "--steps", "4", "--eval-every", "0", "--batch-size", "50",
                            "--quiet", *cli_device)
    assert code == 0, err
    code, _, err = run_main(capsys, "train", "--resume", "1", "--steps", "8", "--num-inducing", "20",
                            "--dataset", "wine", "--seed", "3")
    assert code == 2
    assert "--num-inducing" in err and "--dataset" in err and "--seed" in err and "run 1" in err
    assert "--steps" not in err.split("would need")[0]
    with RunStore() as store:
        assert store.runs.get(1).step == 4  # nothing ran
    # the same value as stored is no change, so it is accepted
    code, _, err = run_main(capsys, "train", "--resume", "1", "--steps", "6", "--num-inducing", "10", "--quiet")
    assert code == 0, err


# -- items 1 and 3: defaults write checkpoints; killed runs say so -----------------------------------------------------
def test_checkpoints_are_written_by_time_by_default(tmp_path, train_device, monkeypatch):
    from invlab.train import TrainConfig
    from invlab.train import trainer as trainer_module

    assert TrainConfig().checkpoint_seconds > 0  # on unless switched off
    clock = [1000.0]
    monkeypatch.setattr(trainer_module, "_clock", lambda: clock[0])
    store = RunStore(tmp_path / "runs.sqlite")
    config = svgp_config(train_device, steps=12)
    del config.train["checkpoint_seconds"]  # the default
    trainer = Trainer(config, store=store)
    for snap in trainer.run(every=1):
        if snap.step == 5:
            clock[0] += TrainConfig().checkpoint_seconds + 1
    steps = [s for s, _ in store.checkpoints.list(trainer.record.run_id)]
    assert 6 in steps and 12 in steps  # the interval passed during step 6; and the final one
    store.close()


def test_a_dead_or_reused_writer_is_noticed_and_a_live_one_is_not(tmp_path):
    import socket

    store = RunStore(tmp_path / "runs.sqlite")
    ids = [store.runs.create("{}", "svgp", "digits") for _ in range(5)]
    for rid in ids:
        store.runs.update(rid, status="running")  # written by this (live) process
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    now, host = time.time(), socket.gethostname()
    cases = {ids[1]: (int(dead.stdout), host, now),  # its process has ended
             ids[2]: (os.getpid(), host, now),  # another process that got the same pid (another start time)
             ids[3]: (12345, "elsewhere", now - 3600),  # another host, silent for an hour
             ids[4]: (12345, "elsewhere", now - 5)}  # another host, heard from just now
    for rid, (pid, where, updated) in cases.items():
        store.connection.db.execute("UPDATE runs SET writer_pid = ?, writer_host = ?, updated = ? WHERE id = ?",
                          (pid, where, updated, rid))
    store.connection.db.execute("UPDATE runs SET writer_token = 'another-boot:1' WHERE id = ?", (ids[2],))
    store.connection.db.commit()
    assert sorted(store.leases.mark_killed()) == [ids[1], ids[2], ids[3]]
    assert [store.runs.get(rid).status for rid in ids] == ["running", "killed", "killed", "killed", "running"]
    store.close()


def _start(args, data_dir):
    env = dict(os.environ, INVLAB_DATA=str(data_dir), OMP_NUM_THREADS="1")
    return subprocess.Popen([sys.executable, "-m", "invlab", "train", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for(db, sql, predicate, proc, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the training process ended early: {proc.stderr.read()}")
        if db.exists():
            try:
                with sqlite3.connect(db, timeout=5) as con:
                    row = con.execute(sql).fetchone()
                if row is not None and predicate(row):
                    return row
            except sqlite3.OperationalError:  # tables not created yet
                pass
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {sql}")


LONG_RUN = ["--dataset", "digits", "--subset", "200", "--test-subset", "50", "--num-inducing", "10",
            "--steps", "1000000", "--eval-every", "0", "--batch-size", "50", "--flush-every", "5", "--quiet"]


def test_a_killed_run_is_marked_killed_and_resumes_from_its_checkpoint(tmp_path, cli_device, capsys, monkeypatch):
    data = tmp_path / "data"
    proc = _start([*LONG_RUN, "--checkpoint-every", "20", *cli_device], data)
    db = data / "runs.sqlite"
    try:
        _wait_for(db, "SELECT MAX(step) FROM checkpoints", lambda r: r[0] is not None and r[0] >= 20, proc)
        _wait_for(db, "SELECT step FROM runs WHERE id = 1", lambda r: r[0] > 20 and r[0] % 20 != 0, proc)
        with RunStore(db) as store:  # two writers of one run would garble it
            with pytest.raises(RunStoreError, match=r"run 1 is still being trained by another process \(pid"):
                open_run(store, 1).trainer
            assert store.runs.get(1).status == "running"
    finally:
        proc.kill()  # SIGKILL: no handler runs
        proc.communicate()
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT status FROM runs WHERE id = 1").fetchone()[0] == "running"
        kept = con.execute("SELECT COUNT(*) FROM metrics WHERE run_id = 1 AND step <= "
                           "(SELECT MAX(step) FROM checkpoints WHERE run_id = 1)").fetchone()[0]
    monkeypatch.setenv("INVLAB_DATA", str(data))
    with RunStore() as store:  # opening the store notices the writer is gone
        record = store.runs.get(1)
        assert record.status == "killed" and "--resume 1" in record.message
        checkpoint_step = store.checkpoints.latest(1)[0]
    code, out, _ = run_main(capsys, "runs")
    assert code == 0 and "killed" in out
    code, out, err = run_main(capsys, "train", "--resume", "1", "--steps", str(checkpoint_step + 5), "--quiet")
    assert code == 0, err
    assert f"resuming run 1 at step {checkpoint_step}" in err
    with RunStore() as store:
        assert store.runs.get(1).status == "finished"
        config = RunConfig.from_json(store.runs.get(1).config)
        final = load_checkpoint(store.checkpoints.latest(1)[1])
    with sqlite3.connect(db) as con:  # what was stored up to the checkpoint is all still there
        assert con.execute(f"SELECT COUNT(*) FROM metrics WHERE run_id = 1 AND step <= {checkpoint_step}"
                           ).fetchone()[0] == kept
    if config.train["dtype"] == "float64":  # the killed process + this one took the steps of one uninterrupted run
        whole = Trainer(config)
        list(whole.run())
        assert final["step"] == whole.step_count == checkpoint_step + 5
        for name, value in state_of(whole).items():
            torch.testing.assert_close(final["model"][name].to("cpu", torch.float64), value, rtol=1e-10, atol=1e-10)


def test_sigterm_writes_a_final_checkpoint_and_marks_the_run(tmp_path, cli_device):
    data = tmp_path / "data"
    proc = _start([*LONG_RUN, "--checkpoint-seconds", "0", *cli_device], data)
    db = data / "runs.sqlite"
    try:
        _wait_for(db, "SELECT step FROM runs WHERE id = 1", lambda r: r[0] >= 10, proc)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "resume with: invlab train --resume 1" in err
    with sqlite3.connect(db) as con:
        status, step, message = con.execute("SELECT status, step, message FROM runs WHERE id = 1").fetchone()
        checkpoint = con.execute("SELECT MAX(step) FROM checkpoints WHERE run_id = 1").fetchone()[0]
    assert status == "interrupted" and "SIGTERM" in message
    assert checkpoint == step and step >= 10


def test_a_numerical_failure_leaves_a_checkpoint_of_the_last_good_state(tmp_path, train_device, monkeypatch):
    from invlab.errors import NonFiniteLossError

    store = RunStore(tmp_path / "runs.sqlite")
    trainer = Trainer(svgp_config(train_device, steps=20, log_every=1), store=store)
    list(trainer.run(7))
    good = state_of(trainer)
    monkeypatch.setattr(trainer.model, "loss", lambda batch: (_ for _ in ()).throw(NonFiniteLossError("boom")))
    with pytest.raises(NonFiniteLossError):
        list(trainer.run())
    assert store.runs.get(trainer.record.run_id).status == "failed"
    assert store.checkpoints.latest(trainer.record.run_id)[0] == 7
    resumed = open_run(store, trainer.record.run_id, train={"learning_rate": 0.001, "dtype": "float32"}).trainer
    assert resumed.step_count == 7 and resumed.edits.current_lr == 0.001 and resumed.dtype == torch.float32
    for name, value in state_of(resumed).items():
        torch.testing.assert_close(value, good[name], rtol=1e-6, atol=1e-6)  # the good state, now in float32
    list(resumed.run())
    assert resumed.step_count == 20 and store.runs.get(trainer.record.run_id).status == "finished"
    store.close()


def test_only_the_newest_checkpoints_are_kept(tmp_path, train_device):
    store = RunStore(tmp_path / "runs.sqlite")
    trainer = Trainer(svgp_config(train_device, steps=40, checkpoint_every=10, keep_checkpoints=2), store=store)
    list(trainer.run())
    assert [step for step, _ in store.checkpoints.list(trainer.record.run_id)] == [40, 30]
    assert sorted(p.name for p in store.checkpoints.folder(trainer.record.run_id).iterdir()) == ["step_00000030.pt",
                                                                                     "step_00000040.pt"]
    store.close()


def test_a_checkpoint_from_before_the_random_streams_were_kept_still_resumes(tmp_path, train_device):
    store = RunStore(tmp_path / "runs.sqlite")
    trainer = Trainer(svgp_config(train_device, steps=12), store=store)
    list(trainer.run(6))
    path = trainer.save_checkpoint()
    payload = torch.load(path, weights_only=True)
    old = {k: payload[k] for k in ("model", "optimizer", "step", "config", "rng")}
    torch.save({**old, "format": 1}, path)  # what the first format held
    resumed = open_run(store, trainer.record.run_id).trainer
    assert resumed.step_count == 6 and not resumed.resume_notes
    list(resumed.run())
    assert resumed.step_count == 12
    store.close()
