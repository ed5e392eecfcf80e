"""A run has one writer: claiming it is one transaction, a second claimant is refused by name, a dead or silent
holder's lease is taken over, and two `invlab train --resume N` started together never store a metric twice."""
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from invlab.train import RunConfig, RunStore, RunStoreError, Trainer, open_run

# One claimant: for each line "RUN START" it waits until START (a shared moment), claims run RUN, and when it wins
# stores what a resume stores (metrics after the truncation point); it answers "won RUN" or "refused RUN MESSAGE".
CLAIMANT = textwrap.dedent("""
    import sys, time
    from invlab.train import RunStore, RunStoreError
    store = RunStore(sys.argv[1])
    for line in sys.stdin:
        run_id, start = int(line.split()[0]), float(line.split()[1])
        time.sleep(max(0.0, start - time.time()))
        try:
            store.leases.claim_run(run_id)
        except RunStoreError as err:
            print("refused", run_id, err, flush=True)
            continue
        store.runs.truncate(run_id, 2)
        for step in range(3, 8):
            store.metrics.log(run_id, step, {"elbo": -1.0 / step, "kl": float(step)})
        store.flush()
        print("won", run_id, flush=True)
    store.close()
""")


def duplicated_metrics(db) -> list:
    with sqlite3.connect(db) as con:
        return con.execute("SELECT run_id, step, name, COUNT(*) FROM metrics GROUP BY run_id, step, name "
                           "HAVING COUNT(*) > 1").fetchall()


def test_two_processes_racing_for_a_run_have_one_winner_each_round(tmp_path):
    db, rounds = tmp_path / "runs.sqlite", 50
    with RunStore(db) as store:
        ids = [store.runs.create("{}", "svgp", "digits", status="interrupted") for _ in range(rounds)]
        for rid in ids:
            for step in range(1, 3):
                store.metrics.log(rid, step, {"elbo": -1.0, "kl": 1.0})
    procs = [subprocess.Popen([sys.executable, "-c", CLAIMANT, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        answers = []
        for rid in ids:
            start = f"{rid} {time.time() + 0.05}\n"
            for proc in procs:
                proc.stdin.write(start)
                proc.stdin.flush()
            answers.append([proc.stdout.readline().split(" ", 2) for proc in procs])
    finally:
        for proc in procs:
            proc.stdin.close()
            proc.wait(timeout=60)
    for rid, pair in zip(ids, answers):
        assert sorted(answer[0] for answer in pair) == ["refused", "won"], pair
        winner = procs[[answer[0] for answer in pair].index("won")]
        refusal = next(answer[2] for answer in pair if answer[0] == "refused")
        assert f"run {rid} is still being trained by another process (pid {winner.pid} on {socket.gethostname()})" \
            in refusal
    assert duplicated_metrics(db) == []
    with sqlite3.connect(db) as con:  # every run: steps 1-2 kept, 3-7 written once by its winner
        assert con.execute("SELECT COUNT(*) FROM metrics").fetchone()[0] == rounds * 7 * 2


def _holder(db, code: str = "") -> subprocess.Popen:
    """A process that claims run 1, says so, then runs `code` (by default it waits to be killed)."""
    script = ("import sys, time\nfrom invlab.train import RunStore\nstore = RunStore(sys.argv[1])\n"
              "store.leases.claim_run(1)\nprint('claimed', flush=True)\n" + (code or "time.sleep(600)\n"))
    proc = subprocess.Popen([sys.executable, "-c", script, str(db)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "claimed"
    return proc


def test_a_dead_holders_lease_is_taken_over_and_a_live_ones_is_not(tmp_path):
    db = tmp_path / "runs.sqlite"
    with RunStore(db) as store:
        store.runs.create("{}", "svgp", "digits", status="interrupted")
    live = _holder(db)
    try:
        with RunStore(db) as store:
            with pytest.raises(RunStoreError, match=rf"pid {live.pid} on {socket.gethostname()}"):
                store.leases.claim_run(1)
            assert store.runs.get(1).status == "running"
    finally:
        live.kill()
        live.wait()
    with RunStore(db) as store:  # its holder died (SIGKILL: nothing was given back)
        lease = store.leases.claim_run(1)
        assert store.leases.live_writer(1, lease) is None  # this claim holds it now
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT status, writer_pid FROM runs WHERE id = 1").fetchone() == ("running", os.getpid())


def test_a_lease_whose_heartbeat_is_too_old_is_taken_over(tmp_path):
    from invlab.train.store import LEASE_SECONDS

    db = tmp_path / "runs.sqlite"
    with RunStore(db) as store:
        store.runs.create("{}", "svgp", "digits", status="interrupted")
    live = _holder(db)
    try:
        with RunStore(db) as store:
            with pytest.raises(RunStoreError, match=f"pid {live.pid}"):
                store.leases.claim_run(1)
            db = store.connection.db
            with db:  # the holder still runs, but has not been heard from for longer than a lease lasts
                db.execute("UPDATE runs SET updated = ? WHERE id = 1", (time.time() - LEASE_SECONDS - 1,))
            lease = store.leases.claim_run(1)
            assert store.leases.live_writer(1, lease) is None
    finally:
        live.kill()
        live.wait()


def svgp_config(train_device, **train):
    return RunConfig(model="svgp", data={"dataset": "digits", "subset": 200, "test_subset": 50},
                     model_config={"num_inducing": 8},
                     train={"steps": 6, "log_every": 1, "eval_every": 0, "eval_size": 50, "batch_size": 50,
                            "checkpoint_seconds": 0, **train_device, **train})


def test_a_paused_trainer_does_not_continue_a_run_taken_over_since(tmp_path, train_device):
    store = RunStore(tmp_path / "runs.sqlite")
    trainer = Trainer(svgp_config(train_device), store=store)
    list(trainer.run(steps=3))  # paused at step 3, still holding its lease
    other = _holder(tmp_path / "runs.sqlite", "store.runs.update(1, status='paused')\n")  # trained it meanwhile
    other.wait()
    rows = sum(len(steps) for steps, _ in store.metrics.read(trainer.record.run_id).values())
    with pytest.raises(RunStoreError, match=r"run 1 was taken over by another process \(pid \d+ on .*invlab train "
                                            r"--resume 1"):
        list(trainer.run())
    assert trainer.step_count == 3
    assert sum(len(steps) for steps, _ in store.metrics.read(trainer.record.run_id).values()) == rows
    store.close()


def test_a_failed_resume_gives_the_run_back_as_it_was(tmp_path, train_device):
    with RunStore(tmp_path / "runs.sqlite") as store:
        rid = store.runs.create(svgp_config(train_device).to_json(), "svgp", "digits", status="interrupted")
        with pytest.raises(Exception, match="no usable checkpoint"):
            open_run(store, rid).trainer
        assert store.runs.get(rid).status == "interrupted"
        assert store.leases.claim_run(rid)  # not held by the failed attempt


LONG_RESUME = ["--steps", "1000000", "--eval-every", "0", "--flush-every", "5", "--checkpoint-seconds", "0", "--quiet"]


def test_two_cli_resumes_started_together_train_the_run_once(tmp_path, cli_device):
    data = tmp_path / "data"
    env = dict(os.environ, INVLAB_DATA=str(data), OMP_NUM_THREADS="1")
    first = subprocess.run([sys.executable, "-m", "invlab", "train", "--dataset", "digits", "--subset", "200",
                            "--test-subset", "50", "--num-inducing", "8", "--batch-size", "50", "--steps", "10",
                            "--eval-every", "0", "--quiet", *cli_device], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    procs = [subprocess.Popen([sys.executable, "-m", "invlab", "train", "--resume", "1", *LONG_RESUME], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        deadline, done = time.time() + 120, None
        while time.time() < deadline and done is None:
            done = next((proc for proc in procs if proc.poll() is not None), None)
            time.sleep(0.1)
        assert done is not None, "neither resume ended: both train the run"
        winner = procs[1 - procs.index(done)]
        err = done.stderr.read()
        assert done.returncode == 1, err
        assert f"run 1 is still being trained by another process (pid {winner.pid} on {socket.gethostname()})" in err
        db = data / "runs.sqlite"
        deadline = time.time() + 60
        while time.time() < deadline:  # the winner trains on past the refusal
            with sqlite3.connect(db, timeout=5) as con:
                if con.execute("SELECT step FROM runs WHERE id = 1").fetchone()[0] >= 30:
                    break
            time.sleep(0.1)
        winner.send_signal(signal.SIGTERM)
        winner.communicate(timeout=60)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
    assert winner.returncode == 128 + signal.SIGTERM
    assert duplicated_metrics(data / "runs.sqlite") == []
    with sqlite3.connect(data / "runs.sqlite") as con:
        assert con.execute("SELECT status FROM runs WHERE id = 1").fetchone()[0] == "interrupted"


def test_a_sweep_has_one_runner(tmp_path):
    db = tmp_path / "runs.sqlite"
    with RunStore(db) as store:
        sweep = store.sweeps.create("rotation-choice", "{}", 4)
    script = ("import sys, time\nfrom invlab.train import RunStore\nstore = RunStore(sys.argv[1])\n"
              f"store.leases.claim_sweep({sweep})\nprint('claimed', flush=True)\ntime.sleep(600)\n")
    holder = subprocess.Popen([sys.executable, "-c", script, str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "claimed"
        with RunStore(db) as store:
            with pytest.raises(RunStoreError, match=rf"sweep {sweep} is still being run by another process "
                                                    rf"\(pid {holder.pid} on {socket.gethostname()}\)"):
                store.leases.claim_sweep(sweep)
    finally:
        holder.kill()
        holder.wait()
    with RunStore(db) as store:  # its runner died: the sweep can be resumed
        store.leases.claim_sweep(sweep)
        assert store.sweeps.get(sweep).status == "running"
