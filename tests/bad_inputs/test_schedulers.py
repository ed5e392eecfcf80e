"""Dask schedulers that do not behave, and sweeps whose process is gone: a scheduler address where something listens
but never answers (discover, sweep, the Compare page's sweeps and Discover study), and a sweep left `running` by a
process killed with SIGKILL (`invlab sweeps`, `invlab compare`)."""

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from invlab.cli import main
from tests.bad_inputs.worlds import run_cli

TIMEOUT = 2.0  # the scheduler timeout these tests run under (the product's default is longer)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def silent_scheduler(monkeypatch):
    """The address of a real listening socket that accepts every connection and never says a word (not Dask), with
    the scheduler timeout cut to `TIMEOUT` seconds."""
    import invlab.sweeps.scheduler as scheduler_module

    monkeypatch.setattr(scheduler_module, "SCHEDULER_TIMEOUT", TIMEOUT)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    held, stop = [], threading.Event()

    def accept():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            held.append(conn)  # accepted, and never answered

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(2)
    for conn in held:
        conn.close()
    server.close()


def bounded_cli(argv, capsys, limit=60.0):
    """`invlab ARGV` in-process on a thread, so that a hang fails the test instead of stalling it: (code, out, err,
    seconds)."""
    result = {}

    def go():
        try:
            result["code"] = main(argv)
        except SystemExit as exit_:
            result["code"] = exit_.code
        except BaseException as err:  # noqa: BLE001 — reported by the assertion below
            result["error"] = err

    start = time.monotonic()
    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    thread.join(limit)
    seconds = time.monotonic() - start
    assert not thread.is_alive(), f"`invlab {' '.join(argv)}` had said nothing after {limit:.0f} s"
    assert "error" not in result, repr(result.get("error"))
    out = capsys.readouterr()
    return result["code"], out.out, out.err, seconds


def silent_words(address: str) -> str:
    return f"the Dask scheduler at {address} did not answer within {TIMEOUT:g} s"


def no_sweep_left_running(capsys) -> None:
    """Nothing was stored: no sweep in the store, or (a command refused before it opened one) no store at all."""
    code, out, err = run_cli(["sweeps", "--json"], capsys)
    if code == 1:
        assert "no run store at" in err, err
        return
    assert code == 0
    assert [json.loads(line)["status"] for line in out.splitlines() if line.strip()] == []


def test_discover_on_a_silent_scheduler_says_so_within_its_timeout(world, capsys, silent_scheduler):
    code, _, err, seconds = bounded_cli(["discover", "--dataset", "symmetric-2d", "--seeds", "1", "--steps", "2",
                                         "--scheduler", silent_scheduler], capsys)
    assert code == 1 and err.startswith("invlab discover: " + silent_words(silent_scheduler)), err
    assert "not a Dask scheduler" in err and "leave --scheduler out" in err and "Traceback" not in err
    assert seconds < 8 * TIMEOUT
    no_sweep_left_running(capsys)  # nothing stored


def test_sweep_on_a_silent_scheduler_says_so_within_its_timeout(world, capsys, silent_scheduler):
    code, _, err, seconds = bounded_cli(["sweep", "--study", "symmetric-2d-swap", "--quick", "--quiet",
                                         "--scheduler", silent_scheduler], capsys)
    assert code == 2 and err.startswith("invlab sweep: " + silent_words(silent_scheduler)), err
    assert "Traceback" not in err and seconds < 8 * TIMEOUT
    no_sweep_left_running(capsys)  # nothing stored


def test_the_compare_page_on_a_silent_scheduler_says_so_for_a_sweep_and_a_discover_study(tmp_path,
                                                                                         silent_scheduler):
    """The Compare page's sweep form (its runs start on a background thread) and its Discover study (checked before
    anything is stored) both say what the scheduler did, in seconds; nothing is stored."""
    from invlab.dashboard.compare import ComparePage
    from invlab.train import RunStore
    from tests.helpers.ticking import follow

    with RunStore(tmp_path / "runs.sqlite") as store:
        page = ComparePage(store=store, data_choices=lambda: ["symmetric-2d"])
        page.context.scheduler = silent_scheduler
        start = time.monotonic()
        page.launch_study("symmetric-2d-swap", quick=True)
        follow(page, lambda: page.state == "failed", timeout=60)
        assert page.message.startswith("the sweep failed: " + silent_words(silent_scheduler)), page.message
        assert page.following.stop_button.disabled and time.monotonic() - start < 8 * TIMEOUT
        study = page.discover
        study.refresh()
        study.form.data_box.value = "symmetric-2d"
        assert study.form.candidates.options and not study.form.error.visible, study.form.error_text
        start = time.monotonic()
        study.start()
        assert study.form.error_text.startswith(silent_words(silent_scheduler)), study.form.error_text
        assert not study.running() and time.monotonic() - start < 8 * TIMEOUT
        assert store.sweeps.list() == []  # nothing stored by either


WRITER = """
import sys
from invlab.cli import main
sys.exit(main(["discover", "--dataset", "symmetric-2d", "--serial", "--seeds", "1", "--steps", "1000000",
               "--no-combine", "--quiet", "--orbit", "permutations:0,1"]))
"""


def _sweep_rows(path: Path) -> list[tuple]:
    """(id, status) of the stored sweeps, read with plain sqlite3 (the store's own reader would judge the writer)."""
    if not path.exists():
        return []
    con = sqlite3.connect(path, timeout=5)
    try:
        return con.execute("SELECT id, status FROM sweeps").fetchall()
    except sqlite3.OperationalError:  # the tables are not made yet
        return []
    finally:
        con.close()


def test_a_sweep_whose_process_was_killed_is_listed_as_interrupted_with_the_resume_command(world, capsys):
    """A real `invlab discover --serial` killed with SIGKILL while its sweep runs: `invlab sweeps` and `invlab compare
    ID` say it is interrupted, its process gone, and how to continue it (was: `running` for ever)."""
    store = world / "data" / "runs.sqlite"
    env = {**os.environ, "INVLAB_DATA": str(world / "data"), "PYTHONPATH": str(ROOT)}
    writer = subprocess.Popen([sys.executable, "-c", WRITER], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 90
        while not any(status == "running" for _, status in _sweep_rows(store)):
            assert writer.poll() is None, writer.stderr.read().decode()
            assert time.monotonic() < deadline, "the discover run never marked its sweep running"
            time.sleep(0.1)
        (sweep_id, _), = _sweep_rows(store)
        code, out, _ = run_cli(["sweeps", "--json"], capsys)
        assert code == 0 and json.loads(out)["status"] == "running"  # its writer is alive: left alone
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait(10)
        writer.stderr.close()
    resume = f"invlab sweep --resume {sweep_id}"
    code, out, _ = run_cli(["sweeps"], capsys)
    row = next(line for line in out.splitlines() if line.split()[:1] == [str(sweep_id)])
    assert code == 0 and "interrupted" in row and "running" not in out, out
    assert f"sweep {sweep_id} is interrupted: the process that ran it is gone; continue it with: {resume}" in out
    code, out, _ = run_cli(["sweeps", "--json"], capsys)
    assert json.loads(out)["status"] == "interrupted"
    code, out, err = run_cli(["compare", str(sweep_id)], capsys)
    assert code == 0 and f"interrupted: the process that ran it is gone; continue it with: {resume}" in out, out + err
