"""A stopped server leaves its runs resumable: SIGTERM (what `kill`, systemd and a container's stop send) or Ctrl-C
to `invlab serve` while two pages train stops each page's run at its next step with a checkpoint there and status
`interrupted`, and the server exits 0 without aborting; `invlab train --resume ID` then goes on from that step."""
import os
import signal
import sqlite3
import subprocess
import sys

from invlab.dashboard.serving.process import serve_dashboard_process
from pagekit import poll
from tests.helpers.chromium import browser_context

SMALL = "?data.subset=200&data.test_subset=50&model.num_inducing=8&train.steps=100000&train.eval_every=0"


def stored_runs(db) -> dict[int, tuple[str, int, str | None]]:
    """{run id: (status, step, message)} as the store holds them now."""
    with sqlite3.connect(db, timeout=10) as con:
        return {rid: (status, step, message) for rid, status, step, message in
                con.execute("SELECT id, status, step, message FROM runs ORDER BY id")}


def checkpoint_steps(db, run_id: int) -> list[int]:
    with sqlite3.connect(db, timeout=10) as con:
        return [step for (step,) in con.execute("SELECT step FROM checkpoints WHERE run_id = ? ORDER BY step",
                                                (run_id,))]


def test_sigterm_stops_every_training_page_with_a_checkpoint_and_exits_0(tmp_path):
    db = tmp_path / "data" / "runs.sqlite"
    with serve_dashboard_process(tmp_path, timeout=600) as (url, proc), \
            browser_context(viewport={"width": 1200, "height": 900}) as context:
        for _ in range(2):
            page = context.new_page()
            page.goto(url + SMALL, timeout=300_000)
            page.get_by_role("button", name="▶ Start").click(timeout=300_000)
        # both runs are training and have stored some steps
        poll(lambda: db.exists() and len([r for r in stored_runs(db).values() if r[0] == "running" and r[1] > 0]) == 2,
             timeout=300)
        proc.send_signal(signal.SIGTERM)  # Ctrl-C (SIGINT) takes the same road (serving/signals.py)
        code = proc.wait(timeout=120)
        log = (tmp_path / "server.log").read_text()
    assert code == 0, log[-4000:]
    assert "terminate called" not in log and "Traceback" not in log, log[-4000:]
    runs = stored_runs(db)
    assert len(runs) == 2, runs
    for run_id, (status, step, message) in runs.items():
        assert status == "interrupted", (run_id, status, message, log[-3000:])
        assert step > 0 and checkpoint_steps(db, run_id)[-1] == step, (run_id, step, checkpoint_steps(db, run_id))
        assert f"invlab train --resume {run_id}" in message
    run_id, (_, step, _) = next(iter(runs.items()))
    env = dict(os.environ, INVLAB_DATA=str(tmp_path / "data"), INVLAB_TORCH_THREADS="1")
    out = subprocess.run([sys.executable, "-m", "invlab", "train", "--resume", str(run_id), "--steps", str(step + 3),
                          "--quiet"], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert f"resuming run {run_id} at step {step} of {step + 3}" in out.stderr
    assert stored_runs(db)[run_id][:2] == ("finished", step + 3)
