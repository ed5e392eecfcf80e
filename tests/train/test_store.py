"""The SQLite run store: round trips, corrupt files, and a writer killed mid-run."""
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest
import torch

from invlab.train import RunStore, RunStoreError


def test_runs_metrics_and_checkpoints_round_trip(tmp_path):
    with RunStore(tmp_path / "r.sqlite") as store:
        rid = store.runs.create('{"model": "svgp"}', "svgp", "digits")
        store.metrics.log(rid, 10, {"elbo": -5.0, "kl": 1.0})
        store.metrics.log(rid, 20, {"elbo": -4.0})
        assert store.metrics.read(rid) == {}  # buffered until flushed
        store.flush()
        assert store.metrics.read(rid)["elbo"] == ([10, 20], [-5.0, -4.0])
        ck = tmp_path / "ck.pt"
        ck.write_bytes(b"x")
        store.checkpoints.add(rid, 20, ck)
        store.runs.update(rid, status="finished", step=20, test_error=0.1)
        assert store.checkpoints.latest(rid) == (20, ck)
        assert store.runs.get(rid).summary()["test_error"] == 0.1
        store.runs.truncate(rid, 10)
        assert store.metrics.read(rid)["elbo"] == ([10], [-5.0])
    assert sqlite3.connect(tmp_path / "r.sqlite").execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_unknown_run_and_corrupt_store_give_clear_errors(tmp_path):
    with RunStore(tmp_path / "r.sqlite") as store:
        with pytest.raises(RunStoreError, match="invlab runs"):
            store.runs.get(99)
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(RunStoreError, match="left untouched"):
        RunStore(bad)
    assert bad.read_bytes() == b"this is not sqlite" * 100  # nothing was overwritten


WRITER = textwrap.dedent("""
    import os, sys, time
    from invlab.train import RunStore
    store = RunStore(sys.argv[1])
    rid = store.runs.create("{}", "svgp", "digits", status="running")
    step = 0
    while True:
        for _ in range(50):
            step += 1
            store.metrics.log(rid, step, {"elbo": -1.0 / step, "kl": float(step)})
        store.flush()
        with open(sys.argv[2] + ".tmp", "w") as f:
            f.write(str(step))
        os.replace(sys.argv[2] + ".tmp", sys.argv[2])  # the reader never sees a half-written file
""")


def test_store_survives_a_killed_writer_process(tmp_path):
    db, progress = tmp_path / "r.sqlite", tmp_path / "progress"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(progress)], cwd=os.getcwd())
    deadline, flushed = time.time() + 60, 0
    while time.time() < deadline and flushed < 2000:
        if progress.exists():
            flushed = int(progress.read_text())
        time.sleep(0.05)
    assert flushed >= 2000, "the writer process made no progress"
    os.kill(proc.pid, signal.SIGKILL)  # mid-write, most likely
    proc.wait()
    with RunStore(db) as store:
        assert store.connection.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        steps, values = store.metrics.read(1)["elbo"]
        assert len(steps) >= flushed and steps == list(range(1, len(steps) + 1))  # whole flushes, no gaps
        assert len(steps) % 50 == 0


def test_a_store_from_before_the_full_elbo_column_gets_it(tmp_path):
    path = tmp_path / "old.sqlite"
    old = sqlite3.connect(path)
    old.executescript("""CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL NOT NULL,
        updated REAL NOT NULL, model TEXT NOT NULL, dataset TEXT NOT NULL, config TEXT NOT NULL, status TEXT NOT NULL,
        step INTEGER NOT NULL DEFAULT 0, elbo REAL, test_error REAL, test_rmse REAL, test_nlpd REAL, message TEXT);
        INSERT INTO runs (created, updated, model, dataset, config, status)
        VALUES (0, 0, 'svgp', 'digits', '{}', 'finished');""")
    old.commit()
    old.close()
    with RunStore(path) as store:
        assert store.runs.get(1).full_elbo is None  # old runs keep their figures, the new one empty
        store.runs.update(1, full_elbo=-12.5)
        assert store.runs.list()[0].summary()["full_elbo"] == -12.5


def test_two_stores_in_one_folder_keep_their_checkpoints_apart(tmp_path):
    # a class server's pages or a second study in the same data directory: each store's run 1 has its own files
    first, second = RunStore(tmp_path / "runs.sqlite"), RunStore(tmp_path / "study.sqlite")
    a = first.runs.create("{}", "svgp", "digits")
    b = second.runs.create("{}", "svgp", "digits")
    assert a == b == 1
    assert first.checkpoints.folder(a) == tmp_path / "checkpoints" / "run_1"  # the default store's folder is unchanged
    assert second.checkpoints.folder(b) != first.checkpoints.folder(a)
    from invlab.sweeps.execute import write_checkpoint
    write_checkpoint(first, a, 10, b"first")
    write_checkpoint(second, b, 10, b"second")
    first.flush(), second.flush()
    assert first.checkpoints.latest(a)[1].read_bytes() == b"first"
    assert second.checkpoints.latest(b)[1].read_bytes() == b"second"
    first.close(), second.close()


def test_checkpoints_written_at_once_to_one_path_do_not_trip_on_each_other(tmp_path):
    # two writers of the same file (a resumed run racing its stale twin): each writes its own temporary file
    import threading

    from invlab.train.checkpoint import save_checkpoint
    path, errors = tmp_path / "step_00000010.pt", []

    def write(k):
        try:
            for _ in range(20):
                save_checkpoint(path, model_state={"w": torch.full((200, 200), float(k))}, optimizer_state={},
                                step=10, config_json="{}", rng_state=torch.zeros(1, dtype=torch.uint8))
        except Exception as err:  # noqa: BLE001 - the test reports any failure
            errors.append(err)

    threads = [threading.Thread(target=write, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*tmp"))
    assert torch.load(path, weights_only=True)["step"] == 10
