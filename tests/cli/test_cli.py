"""`invlab` end to end, as a user runs it: a real process, the real store, a real (small) training run."""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers.cli import run_main


def invlab(*args, data_dir, timeout=300):
    env = dict(os.environ, INVLAB_DATA=str(data_dir))
    return subprocess.run([sys.executable, "-m", "invlab", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


@pytest.fixture
def data_dir(tmp_path):
    return tmp_path / "data"


def test_train_on_digits_then_list_and_resume(capsys):
    """In this process (the same code the console script runs): the run trains, is listed and resumes. The command
    as a real process is `test_train_json_prints_the_final_metrics_as_one_json_line_last` below."""
    code, out, err = run_main(capsys, "train", "--model", "svgp", "--dataset", "digits", "--steps", "40",
                              "--num-inducing", "30", "--eval-every", "20", "--checkpoint-every", "20",
                              "--batch-size", "128")
    assert code == 0, err
    summary = out.strip().splitlines()[-1]
    assert summary.startswith("run 1 | svgp on digits | step 40 | ELBO")
    assert "test error" in summary and "NLPD" in summary
    error = float(summary.split("test error ")[1].split("%")[0])
    assert error < 50.0  # 40 steps from scratch already beat chance (90%) by far
    assert "step/s" in err  # the progress bar

    _, runs, _ = run_main(capsys, "runs", "--json")
    record = json.loads(runs.strip().splitlines()[0])
    assert record["id"] == 1 and record["status"] == "finished" and record["step"] == 40
    assert abs(record["test_error"] * 100 - error) < 0.01

    _, table, _ = run_main(capsys, "runs")
    assert "svgp" in table and "digits" in table and "finished" in table

    code, more, err = run_main(capsys, "train", "--resume", "1", "--steps", "50")
    assert code == 0, err
    assert "resuming run 1 at step 40 of 50" in err
    assert "| step 50 |" in more



def test_bad_values_are_refused_with_the_parameter_named(capsys):
    code, _, err = run_main(capsys, "train", "--num-inducing", "0", "--steps", "1")
    assert code == 1 and "--num-inducing must be at least 1" in err
    code, _, err = run_main(capsys, "train", "--dataset", "no-such-set", "--steps", "1")
    assert code == 1 and "digits" in err and "not a known dataset" in err
    code, _, err = run_main(capsys, "train", "--dataset", "mnist", "--steps", "1")
    assert code == 1 and "invlab fetch mnist" in err
    code, _, err = run_main(capsys, "train", "--likelihood", "bernoulli", "--steps", "1")
    assert code == 1 and "2 classes" in err
    code, _, err = run_main(capsys, "train", "--resume", "7")
    assert code == 1 and "no run with id 7" in err


def test_help_lists_generated_flags(capsys):
    code, out, _ = run_main(capsys, "train", "--help")
    assert code == 0
    for flag in ("--num-inducing", "--kernel", "--rotate", "--odd-even", "--learning-rate", "--data-seed", "--whiten"):
        assert flag in out
    assert "Range 1..5000" in out  # bounds come from the param config


def test_runs_on_an_empty_store(capsys):
    from pathlib import Path

    Path(os.environ["INVLAB_DATA"]).mkdir(parents=True, exist_ok=True)  # an empty data directory
    code, out, _ = run_main(capsys, "runs")
    assert code == 0 and f"no runs stored yet in {Path(os.environ['INVLAB_DATA']) / 'runs.sqlite'}" in out


def test_serve_binds_to_localhost_and_passes_panel_options_through():
    from invlab.cli import serve_command

    cmd, env = serve_command(["--port", "5100", "--basic-auth", "creds.json", "--max-training", "3"])
    assert cmd[1:4] == ["-m", "panel", "serve"] and cmd[4].endswith("dashboard/app.py")
    assert cmd[cmd.index("--address") + 1] == "127.0.0.1"
    assert "127.0.0.1:5100" in cmd and "localhost:5100" in cmd
    logins = os.path.join(os.path.dirname(cmd[4]), "serving", "_login_module.py")  # our logins, not Panel's
    assert cmd[cmd.index("--auth-module") + 1] == logins and "--basic-auth" not in cmd
    # logins (the password to the environment, never the command line): a class server's per-page cap; one malloc
    # arena unless the user chose otherwise
    expected = {"INVLAB_MAX_TRAINING": "3", "INVLAB_MAX_STEPS_PER_S": "25", "BOKEH_RESOURCES": "server",
                "INVLAB_BASIC_AUTH": "creds.json"}
    if "MALLOC_ARENA_MAX" not in os.environ:
        expected["MALLOC_ARENA_MAX"] = "1"
    assert env == expected


def test_serve_without_the_dashboard_installed_says_how_to_install_it(monkeypatch, capsys):
    """The engine installs without the dashboard: `invlab serve` then explains instead of failing on an import."""
    import importlib.util

    from invlab import cli

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "invlab.dashboard" else real_find_spec(name, *args))
    assert cli.main(["serve"]) == 2
    err = capsys.readouterr().err
    assert "dashboard is not installed" in err and "[dashboard]" in err


@pytest.mark.skipif(os.name != "posix", reason="on POSIX the server replaces the invlab process")
def test_stopping_invlab_serve_stops_the_server(data_dir):
    """SIGTERM (a service manager, a test harness, `kill`) must not leave the dashboard server running orphaned."""
    import signal
    import socket
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/app"
    proc = subprocess.Popen([sys.executable, "-m", "invlab", "serve", "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=dict(os.environ, INVLAB_DATA=str(data_dir)))
    try:
        deadline = time.time() + 90
        while time.time() < deadline:
            try:
                assert urllib.request.urlopen(url, timeout=5).status == 200
                break
            except OSError:
                time.sleep(0.3)
        else:
            pytest.fail("the dashboard did not start")
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        with pytest.raises(OSError):  # nobody listens any more
            urllib.request.urlopen(url, timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_train_help_shows_ranges_and_defaults_a_user_can_read(capsys):
    """An open bound reads "at least 0", not "Range 0..None"; an empty default is not printed as "(default: )"."""
    code, out, _ = run_main(capsys, "train", "--help")
    assert code == 0
    assert "..None" not in out and "None.." not in out and "(default: )" not in out
    flat = " ".join(out.split())  # argparse wraps help text at the terminal width
    assert "keeps all. At least 0. (default: 0)" in flat  # --subset: a lower bound only
    assert "Range 1..5000" in flat  # a closed range still reads as one


def test_serve_help_says_what_an_allowed_data_folder_is_for(capsys):
    """--allow-data-dir is every kind of own data file the page lists, not IDX data only."""
    code, out, _ = run_main(capsys, "serve", "--help")
    assert code == 0
    flat = " ".join(out.split())
    assert "IDX data pages" not in flat
    assert "CSV, npz and IDX files and image folders" in flat


def test_listing_and_compare_help_explain_every_argument(capsys):
    code, out, _ = run_main(capsys, "compare", "--help")
    flat = " ".join(out.split())
    assert code == 0 and "ID The stored sweep to compare" in flat and "invlab sweeps" in flat
    code, out, _ = run_main(capsys, "sweeps", "--help")
    assert code == 0 and "--limit LIMIT Show at most this many" in " ".join(out.split())


def test_a_sweep_names_a_refused_setting_by_its_dotted_name(capsys):
    """`--set train.steps=-1` is refused in the words the user typed, not param's `'TrainConfig.steps'`."""
    code, _, err = run_main(capsys, "sweep", "--set", "train.steps=-1", "--vary", "model.num_inducing=10,20",
                            "--dry-run")
    assert code != 0 and "train.steps must be at least 0, not -1" in err
    assert "TrainConfig" not in err and "parameter '" not in err
    code, _, err = run_main(capsys, "sweep", "--set", "data.subset=-3", "--vary", "train.steps=1,2", "--dry-run")
    assert code != 0 and "data.subset must be at least 0, not -3" in err and "DataConfig" not in err


def test_a_refused_setting_from_python_names_the_setting():
    from invlab.errors import ConfigError
    from invlab.train import RunConfig

    with pytest.raises(ConfigError) as caught:
        RunConfig(train={"steps": -1}).train_config()
    assert str(caught.value) == "invalid training setting: steps must be at least 0, not -1."


def test_train_json_prints_the_final_metrics_as_one_json_line_last(data_dir):
    """A real process, as a script reads it: its exit status and its last line of standard output."""
    out = invlab("train", "--steps", "5", "--num-inducing", "10", "--eval-every", "5", "--json", "--quiet",
                 data_dir=data_dir)
    assert out.returncode == 0, out.stderr
    last = json.loads(out.stdout.strip().splitlines()[-1])
    assert last["run_id"] == 1 and last["model"] == "svgp" and last["dataset"] == "digits" and last["step"] == 5
    assert last["status"] == "finished" and isinstance(last["elbo"], float)
    assert 0.0 <= last["test_error"] <= 1.0 and "test_nlpd" in last
    stored = json.loads(invlab("runs", "--json", data_dir=data_dir).stdout.splitlines()[0])
    assert stored["test_error"] == last["test_error"]


def test_the_compare_table_gives_every_mean_and_sd_of_a_column_the_same_precision(capsys, monkeypatch):
    """`-40.026 ± 2.297` beside `-87.736 ± 2.4355` read as different precisions: a column's numbers share one."""
    import invlab.sweeps
    from invlab.sweeps.compare import Comparison

    def group(value, elbo, sd, error, error_sd):
        return {"model.init_rotation": value, "n": 3, "failed": 0, "elbo_mean": elbo, "elbo_sd": sd,
                "error_mean": error, "error_sd": error_sd, "nlpd_mean": 0.51234, "nlpd_sd": 0.0213, "rmse_mean": None,
                "rmse_sd": None, "learned": {}, "run_ids": [1, 2, 3]}

    groups = [group(0, -40.0262, 2.2971, 0.1234, 0.0101), group(90, -87.7361, 2.4355, 0.31, 0.002)]
    cmp = Comparison(4, "rotation", ["model.init_rotation"], [], groups, True, "comparable", 6)
    monkeypatch.setattr(invlab.sweeps, "comparison", lambda store, sweep_id: cmp)
    code, out, _ = run_main(capsys, "compare", "4")
    assert code == 0, out
    rows = out.splitlines()[3:]
    assert "-40.0 ± 2.3" in rows[0] and "-87.7 ± 2.4" in rows[1]
    assert "12.34 ± 1.01%" in rows[0] and "31.00 ± 0.20%" in rows[1]


def test_serve_builds_a_page_before_it_listens_so_the_first_visitor_does_not_wait(tmp_path):
    """The first "Open lesson" after `invlab serve` started showed a blank page for 53 s on a busy laptop (7–26 s
    later): the first session imported torch and the dashboard. The server now builds a page before it listens: when
    its port first answers, torch is already loaded in it (its memory map holds libtorch) — before any request — and so
    is what the first ▶ Start took 3 s to import."""
    import socket
    import time

    from invlab.dashboard.serving.process import free_port

    port = free_port()
    env = dict(os.environ, INVLAB_DATA=str(tmp_path / "data"), INVLAB_TORCH_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-m", "invlab", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), 0.5).close()
                break
            except OSError:
                time.sleep(0.1)
        assert proc.poll() is None, "the server ended"
        with open(f"/proc/{proc.pid}/maps") as maps:
            mapped = maps.read()
        assert "libtorch_cpu" in mapped
        # and what the first ▶ Start would load: torch.optim's first optimiser imports torch._dynamo (about 3 s),
        # which maps the `_statistics` and `termios` extensions that nothing else on the page loads
        assert "/_statistics." in mapped and "/termios." in mapped
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_tables_rmse_is_named_by_its_target_column_and_the_name_cannot_drive_the_terminal(capsys, tmp_path):
    """`invlab train` on your own table gives the test RMSE in the target column's units, by the column's name; a name
    with a terminal escape in it is printed with the escape as `?`."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(80, 2))
    for name, shown in [("price_keur", "price_keur"), ("stars\x1b[2J", "stars?[2J")]:
        path = tmp_path / f"{len(shown)}.csv"
        rows = [f"{a:.4f},{b:.4f},{3 * a - b:.4f}" for a, b in x]
        path.write_text("area,age," + name + "\n" + "\n".join(rows) + "\n")
        code, out, err = run_main(capsys, "train", "--model", "svgp", "--dataset", f"csv:{path}", "--steps", "3")
        assert code == 0, err
        line = next(line for line in out.splitlines() if "test RMSE" in line)
        assert re.search(r"test RMSE [0-9.e+-]+ " + re.escape(shown) + r"( |$)", line), line
        assert "\x1b" not in out
