"""Runs, their store and resuming: what a watched loop logs, resuming what cannot be resumed, pages closed while their
run was built, and resumes that would store the same point twice."""

import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from tests.bad_inputs.worlds import run_cli

SMALL = ["--subset", "60", "--num-inducing", "10", "--eval-every", "0", "--quiet"]


def _store(world):
    from invlab.train import RunStore

    return RunStore(world / "data" / "runs.sqlite")


def _runs_line(capsys, run_id):
    code, out, err = run_cli(["runs"], capsys)
    assert code == 0, err
    return next(line for line in out.splitlines() if line.split()[:1] == [str(run_id)])


# -- item 10: what `run.log` cannot record ---------------------------------------------------------------------------

def test_watch_log_huge_int_or_meta_tensor_is_a_gap_with_one_warning(tmp_path):
    from invlab.train import RunStore, WatchWarning, watch

    with pytest.warns(WatchWarning) as caught, watch(name="odd values", data_dir=tmp_path) as run:
        run.log(1, x=10**400, m=torch.empty((), device="meta"), ok=1.0)
        run.log(2, x=10**400, m=torch.empty((), device="meta"), ok=2.0)
    said = sorted(str(w.message) for w in caught)
    assert len(said) == 2, said  # one per name
    assert ("m at step 1 is a tensor on the meta device (it holds no value), not a single number; it is recorded as "
            "a gap") in said[0]
    assert "x at step 1 is a whole number of 401 digits, too large for a float, not a finite number" in said[1]
    with RunStore(tmp_path / "runs.sqlite") as store:
        record, stored = store.runs.get(run.run_id), store.metrics.read(run.run_id)
    assert record.status == "finished" and record.step == 2
    assert stored["x"] == ([1, 2], [None, None]) and stored["m"] == ([1, 2], [None, None])
    assert stored["ok"] == ([1, 2], [1.0, 2.0])


@pytest.mark.parametrize("step", [2**63, -1, 1.5])
def test_watch_log_step_out_of_range_is_one_error_and_the_run_is_not_left_running(tmp_path, step):
    from invlab.errors import ConfigError
    from invlab.train import RunStore, watch

    with pytest.raises(ConfigError) as info, watch(name="far", data_dir=tmp_path) as run:
        run.log(1, loss=1.0)
        run.log(step, loss=2.0)
    assert str(info.value).startswith(f"run.log's step must be a whole number from 0 to {2**63 - 1} (SQLite's largest "
                                      f"integer), not {step!r}")
    with RunStore(tmp_path / "runs.sqlite") as store:
        record, stored = store.runs.get(run.run_id), store.metrics.read(run.run_id)
    assert record.status == "failed" and record.step == 1  # what an errored loop gets, never `running`
    assert record.message.startswith("ConfigError: run.log's step must be")
    assert stored["loss"] == ([1], [1.0])  # nothing of the refused step was written


# -- item 15: a watched run is not resumed by `invlab train --resume` -------------------------------------------------

def test_resume_of_a_watched_run_says_to_run_its_loop_again(world, capsys):
    from invlab.train import watch

    with watch(name="my-loop") as run:
        run.log(1, loss=1.0)
    code, out, err = run_cli(["train", "--resume", str(run.run_id)], capsys)
    assert code == 1, err
    assert err.strip() == (
        f"invlab train: run {run.run_id} is a watched run, written by your own loop (watch(name='my-loop')), not by "
        "invlab train, so it has no checkpoint to resume from; continue it by running that loop again (each "
        "watch(name='my-loop') records a new run under that name)")
    assert "unknown model" not in err


# -- item 16: a page closed while its run was built -------------------------------------------------------------------

def _small_config():
    from invlab.train import RunConfig

    return RunConfig(data={"dataset": "digits", "subset": 60, "test_subset": 30}, model_config={"num_inducing": 10},
                     train={"steps": 1000, "eval_every": 0})


@pytest.mark.parametrize("how", ["reset", "start-queued"])
def test_a_page_closed_while_its_run_was_built_leaves_no_created_run(world, capsys, monkeypatch, how):
    import invlab.dashboard.session.training as session_module
    from invlab.dashboard.session.scheduling import TrainingSlots
    from invlab.dashboard.session.training import TrainingSession

    building, release = threading.Event(), threading.Event()

    class SlowTrainer(session_module.Trainer):
        def __init__(self, *args, **kwargs):
            building.set()
            assert release.wait(60)  # the model is being built while the page closes
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(session_module, "Trainer", SlowTrainer)
    slots = TrainingSlots(1)
    if how == "start-queued":
        assert slots.acquire(timeout=0)  # another page trains: this one waits for the only slot
    session = TrainingSession(_small_config(), store=_store(world), owns_store=True, slots=slots)
    session.commands.reset() if how == "reset" else session.commands.start()
    assert building.wait(60)
    session.stop(wait=False)  # the tab went (Explorer.close under pn.state.on_session_destroyed)
    release.set()
    session.thread.join(60)
    assert not session.thread.is_alive()
    line = _runs_line(capsys, 1)
    assert line.split()[3] == "interrupted", line
    with _store(world) as store:
        record = store.runs.get(1)
    assert record.status == "interrupted" and record.step == 0
    assert record.message == ("its page was closed before it trained a step; train these settings as a new run with: "
                              "invlab train --resume 1 --restart")


def test_a_created_run_whose_process_is_gone_is_listed_as_not_running(world, capsys):
    from invlab.train import RunStore

    path = world / "data" / "runs.sqlite"
    script = (f"from invlab.train import RunStore\nwith RunStore({str(path)!r}) as s:\n"
              "    print(s.runs.create('{}', 'svgp', 'digits'))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=Path(__file__).parents[2], check=True)  # a process that made a run, then ended
    gone = int(done.stdout)
    with RunStore(path) as store:
        mine = store.runs.create("{}", "svgp", "digits")  # this live process's: still waiting to be trained
        old = store.runs.create("{}", "svgp", "digits")
    con = sqlite3.connect(path)  # as a version that recorded no creator left it, hours ago
    with con:
        con.execute("UPDATE runs SET writer_pid = NULL, writer_host = NULL, writer_token = NULL, updated = ? "
                    "WHERE id = ?", (time.time() - 7200, old))
    con.close()
    assert _runs_line(capsys, gone).split()[3] == "interrupted"
    assert _runs_line(capsys, old).split()[3] == "interrupted"
    assert _runs_line(capsys, mine).split()[3] == "created"
    with RunStore(path) as store:
        message = store.runs.get(gone).message
    assert message.startswith("its process (pid ") and message.endswith(
        f") ended before it trained a step; train these settings as a new run with: invlab train --resume {gone} "
        "--restart"), message


# -- item 17: a resume past the budget, and one value per (step, name) ------------------------------------------------

def test_resume_with_steps_below_the_run_s_step_is_refused_and_stores_nothing(world, capsys):
    code, _, err = run_cli(["train", "--steps", "6", *SMALL], capsys)
    assert code == 0, err
    with _store(world) as store:
        before = (store.runs.get(1), store.metrics.read(1))
    code, out, err = run_cli(["train", "--resume", "1", "--steps", "4", "--quiet"], capsys)
    assert code == 1, err
    assert err.strip() == ("invlab train: run 1 is already at step 6, past --steps 4 (--steps is the run's total "
                           "number of steps, not steps to add); nothing was trained or stored. To train on, give a "
                           "larger total, e.g. invlab train --resume 1 --steps 10")
    with _store(world) as store:
        after = (store.runs.get(1), store.metrics.read(1))
    assert after[1] == before[1]
    assert (after[0].status, after[0].step, after[0].config) == (before[0].status, before[0].step, before[0].config)


def test_resuming_a_finished_run_at_its_own_steps_stores_no_second_point(world, capsys):
    code, _, err = run_cli(["train", "--steps", "4", "--subset", "60", "--num-inducing", "10", "--quiet"], capsys)
    assert code == 0, err
    for _ in range(3):
        code, _, err = run_cli(["train", "--resume", "1", "--quiet"], capsys)
        assert code == 0, err
    with _store(world) as store:
        stored = store.metrics.read(1)
    for name, (steps, _) in stored.items():
        assert len(steps) == len(set(steps)), (name, steps)  # was: three copies of the final test error at step 4


def test_a_metric_written_twice_at_one_step_keeps_the_later_value(tmp_path):
    from invlab.train import RunStore

    with RunStore(tmp_path / "runs.sqlite") as store:
        run = store.runs.create("{}", "svgp", "digits")
        store.metrics.log(run, 5, {"test_error": 0.5, "loss": 1.0})
        store.flush()
        store.metrics.log(run, 5, {"test_error": 0.25})
        store.metrics.log(run, 6, {"loss": 2.0})
        store.flush()
        assert store.metrics.read(run) == {"loss": ([5, 6], [1.0, 2.0]), "test_error": ([5], [0.25])}


def test_a_store_with_duplicate_metric_rows_still_opens(tmp_path):
    from invlab.train import RunStore

    path = tmp_path / "runs.sqlite"
    con = sqlite3.connect(path)  # a store written before each (run, step, name) was kept once
    con.executescript("""
        CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL NOT NULL, updated REAL NOT NULL,
            model TEXT NOT NULL, dataset TEXT NOT NULL, config TEXT NOT NULL, status TEXT NOT NULL,
            step INTEGER NOT NULL DEFAULT 0, elbo REAL, test_error REAL, test_rmse REAL, test_nlpd REAL, message TEXT);
        CREATE TABLE metrics (run_id INTEGER NOT NULL REFERENCES runs(id), step INTEGER NOT NULL, name TEXT NOT NULL,
            value REAL);
        CREATE INDEX metrics_by_run ON metrics (run_id, name, step);
        INSERT INTO runs (created, updated, model, dataset, config, status, step) VALUES (0, 0, 'svgp', 'digits', '{}',
            'finished', 60);
        INSERT INTO metrics VALUES (1, 60, 'test_error', 0.1), (1, 60, 'test_error', 0.2), (1, 60, 'test_error', 0.3),
            (1, 50, 'loss', 1.0);
    """)
    con.close()
    with RunStore(path) as store:
        assert store.metrics.read(1) == {"loss": ([50], [1.0]), "test_error": ([60], [0.3])}
        store.metrics.log(1, 60, {"test_error": 0.4})
    with RunStore(path) as store:
        assert store.metrics.read(1)["test_error"] == ([60], [0.4])
