"""Sweeps on a real cluster: a `dask scheduler` and two `dask worker` processes on 127.0.0.1, driven through
`invlab sweep --scheduler`. A client killed mid-sweep resumes with only the missing runs; a worker killed mid-run has
its run retried elsewhere, and every run is stored exactly once.

The resume test runs first: the worker test leaves the cluster one worker short."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from .conftest import ROOT, env, tiny_spec

pytestmark = pytest.mark.cluster


def start_cli(args, data_dir, log_path):
    log = open(log_path, "w")
    return subprocess.Popen([sys.executable, "-m", "invlab", *args], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            env={**env(), "INVLAB_DATA": str(data_dir)})


def stored(data_dir, sweep_id=1) -> dict[str, tuple[int, str, int]]:
    """sweep_key → (run id, status, copies), read straight from SQLite."""
    path = data_dir / "runs.sqlite"
    if not path.exists():
        return {}
    with sqlite3.connect(path, timeout=30) as db:
        try:
            rows = db.execute("SELECT sweep_key, MIN(id), MIN(status), COUNT(*) FROM runs WHERE sweep_id = ? "
                              "GROUP BY sweep_key", (sweep_id,)).fetchall()
        except sqlite3.OperationalError:  # the client has not created its tables yet
            return {}
    return {key: (run_id, status, copies) for key, run_id, status, copies in rows}


def wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_killed_client_resumes_with_only_the_missing_runs(cluster, tmp_path):
    spec_file = tmp_path / "sweep.json"
    spec = tiny_spec(steps=400, seeds=(0, 1, 2), name="resume")  # 6 runs of about a second
    spec_file.write_text(spec.to_json())
    keys = {run.key for run in spec.runs()}
    client = start_cli(["sweep", str(spec_file), "--scheduler", cluster.address], tmp_path, tmp_path / "first.log")
    try:
        wait(lambda: any(s == "finished" for _, s, _ in stored(tmp_path).values()), 240, "the first stored run")
    finally:
        client.send_signal(signal.SIGKILL)  # no clean-up at all: the store is as the dead client left it
        client.wait()
    before = stored(tmp_path)
    assert 1 <= len(before) < len(keys), (before, (tmp_path / "first.log").read_text())

    out = subprocess.run([sys.executable, "-m", "invlab", "sweep", "--resume", "1", "--scheduler", cluster.address],
                         cwd=ROOT, capture_output=True, text=True, env={**env(), "INVLAB_DATA": str(tmp_path)},
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert f"sweep 1: {len(keys)} runs, {len(before)} already stored" in out.stderr
    assert f"submitted {len(keys) - len(before)} runs" in out.stderr  # only the missing ones
    after = stored(tmp_path)
    assert set(after) == keys and all(copies == 1 and status == "finished" for _, status, copies in after.values())
    assert {key: after[key][0] for key in before} == {key: run_id for key, (run_id, _, _) in before.items()}
    assert min(after[key][0] for key in keys - set(before)) > max(run_id for run_id, _, _ in before.values())


def test_a_worker_killed_mid_run_loses_nothing_and_stores_nothing_twice(cluster, tmp_path):
    spec_file = tmp_path / "sweep.json"
    spec = tiny_spec(steps=800, seeds=(0, 1, 2), name="kill")  # 6 runs of a second or two
    spec_file.write_text(spec.to_json())
    keys = {run.key for run in spec.runs()}
    with cluster.client() as dask:
        pids = dask.run(os.getpid)  # worker address → process id
        started = time.time()
        cli = start_cli(["sweep", str(spec_file), "--scheduler", cluster.address], tmp_path, tmp_path / "cli.log")
        try:
            def running_on_a_worker():
                """(worker, key) of a run that has reported training steps from a worker still processing it."""
                processing = dask.processing()
                for stamp, event in dask.get_events("invlab-sweep-1"):
                    worker = event.get("worker")
                    if (stamp >= started and event.get("kind") == "step" and 0 < event["step"] < event["steps"]
                            and processing.get(worker)):
                        return worker, event["key"]
                return None

            victim, key = wait(running_on_a_worker, 240, "a run in progress")
            os.kill(pids[victim], signal.SIGKILL)
            assert cli.wait(timeout=300) == 0, (tmp_path / "cli.log").read_text()
        finally:
            if cli.poll() is None:
                cli.kill()
    after = stored(tmp_path)
    assert set(after) == keys and all(copies == 1 and status == "finished" for _, status, copies in after.values())
    with sqlite3.connect(tmp_path / "runs.sqlite") as db:
        infos = {k: json.loads(info) for k, info in db.execute("SELECT sweep_key, sweep_info FROM runs")}
    assert infos[key]["worker"] != victim  # the interrupted run was trained again, on the surviving worker
