"""A sweep whose Dask scheduler goes away mid-sweep (`invlab sweep --scheduler ADDRESS`, and the Compare page given
an address): one sentence says the scheduler was lost, with no traceback; the runs it had not finished are stored
as `interrupted` (not failed), the sweep is `interrupted`, and resuming it later trains them.

Each test starts a `dask scheduler` and one `dask worker` of its own (it kills that scheduler with SIGKILL); the
resume runs on the session's shared cluster."""
import signal
import sqlite3

import pytest

from invlab.sweeps import run_sweep
from invlab.train import RunStore

from .conftest import Cluster, tiny_spec
from .test_cluster import start_cli, stored, wait

pytestmark = pytest.mark.cluster


def sweep_status(data_dir, sweep_id=1) -> str:
    with sqlite3.connect(data_dir / "runs.sqlite", timeout=30) as db:
        return db.execute("SELECT status FROM sweeps WHERE id = ?", (sweep_id,)).fetchone()[0]


def stop(cluster: Cluster) -> None:
    """End the test cluster's processes at once: a worker whose scheduler is gone has nothing left to finish."""
    for proc in cluster.procs:
        if proc.poll() is None:
            proc.kill()
    cluster.close()


def test_a_lost_scheduler_is_said_in_one_sentence_and_its_runs_resume(tmp_path, scheduler):
    spec_file = tmp_path / "sweep.json"
    spec = tiny_spec(steps=300, seeds=(0, 1), name="lost")  # 4 runs of under a second, one worker
    spec_file.write_text(spec.to_json())
    keys = {run.key for run in spec.runs()}
    log = tmp_path / "cli.log"
    cluster = Cluster(1, tmp_path)
    try:
        cli = start_cli(["sweep", str(spec_file), "--scheduler", cluster.address], tmp_path, log)
        try:
            wait(lambda: any(s == "finished" for _, s, _ in stored(tmp_path).values()), 240, "the first stored run")
            cluster.scheduler.send_signal(signal.SIGKILL)  # the scheduler's machine is gone
            code = cli.wait(timeout=120)
        finally:
            if cli.poll() is None:
                cli.kill()
    finally:
        stop(cluster)
    said = log.read_text()
    assert code == 1, said
    assert f"the Dask scheduler at {cluster.address} was lost mid-sweep" in said, said
    assert "invlab sweep --resume 1" in said and "Traceback" not in said and "task cancelled" not in said, said
    before = stored(tmp_path)
    statuses = {status for _, status, _ in before.values()}
    assert set(before) == keys and statuses == {"finished", "interrupted"}, before
    assert sweep_status(tmp_path) == "interrupted"

    # later, on another cluster (the session's): what `invlab sweep --resume 1` runs trains only the interrupted
    # runs, and the finished keep their ids
    with RunStore(tmp_path / "runs.sqlite") as store:
        assert run_sweep(None, store=store, sweep_id=1, scheduler=scheduler) == 1
    after = stored(tmp_path)
    assert set(after) == keys and all(copies == 1 and status == "finished" for _, status, copies in after.values())
    assert all(after[key][0] == run_id for key, (run_id, status, _) in before.items() if status == "finished")
    assert sweep_status(tmp_path) == "finished"


def test_the_compare_page_says_its_scheduler_was_lost_and_offers_resume(tmp_path, capfd):
    from invlab.dashboard.compare import ComparePage
    from tests.helpers.ticking import follow

    cluster = Cluster(1, tmp_path)
    try:
        with RunStore(tmp_path / "runs.sqlite") as store:
            page = ComparePage(store=store)  # a notebook's page: its user gives the address
            page.context.scheduler = cluster.address
            page.launch(tiny_spec(steps=300, seeds=(0, 1), name="lost"))
            follow(page, lambda: any(s == "finished" for _, s, _ in stored(tmp_path).values()), timeout=240)
            cluster.scheduler.send_signal(signal.SIGKILL)
            follow(page, lambda: page.state not in ("starting", "running", "stopping"), timeout=120)
            assert page.state == "stopped", page.message
            assert f"the Dask scheduler at {cluster.address} was lost" in page.message, page.message
            assert page.following.resume_button.visible
            statuses = {run.status for run in store.sweeps.runs(page.sweep_id)}
            assert statuses == {"finished", "interrupted"}, statuses
            assert store.sweeps.get(page.sweep_id).status == "interrupted"
    finally:
        stop(cluster)
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err, out + err
