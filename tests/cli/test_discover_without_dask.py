"""`invlab discover` where only the dashboard's extra is installed (no Dask distributed): refused before anything is
stored, with a sentence naming `--serial`, which trains the candidates in this process without Dask."""
import json
import os
import sys
from pathlib import Path

from tests.bad_inputs.worlds import hide_module
from tests.helpers.cli import run_main

SMALL = ["discover", "--dataset", "symmetric-2d", "--source-option", "num_train=30", "--seeds", "1", "--steps", "5",
         "--num-inducing", "4", "--orbit", "sign_flips", "--no-combine", "--quiet"]


def _store_path() -> Path:
    return Path(os.environ["INVLAB_DATA"]) / "runs.sqlite"


def test_discover_without_dask_is_refused_before_storing_and_names_serial(capsys, monkeypatch):
    hide_module(monkeypatch, "distributed")
    code, out, err = run_main(capsys, *SMALL)
    assert code == 1 and "Traceback" not in err + out, err
    said = [line for line in err.splitlines() if line.startswith("invlab discover:")]
    assert len(said) == 1, err
    assert "Dask distributed, which is not installed" in said[0]
    assert "--serial" in said[0] and "pip install 'invariance-lab[sweeps]'" in said[0]
    # no "created 0/N" sweep for `invlab sweeps` to list: no store at all
    assert not _store_path().exists()


def test_discover_with_a_scheduler_but_without_dask_says_to_leave_it_out(capsys, monkeypatch):
    hide_module(monkeypatch, "distributed")
    code, _, err = run_main(capsys, *SMALL, "--scheduler", "tcp://127.0.0.1:9")
    assert code == 1 and "Traceback" not in err
    assert "not installed" in err and "leave --scheduler out" in err and "--serial" in err
    assert not _store_path().exists()


def test_discover_serial_trains_without_dask(capsys, monkeypatch):
    hide_module(monkeypatch, "distributed")
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` fails, as where it is not installed
    code, out, err = run_main(capsys, *SMALL, "--serial", "--json")
    assert code == 0 and "Traceback" not in err, err
    ranking = json.loads(out.strip().splitlines()[-1])["ranking"]
    assert {row["candidate"] for row in ranking} == {"none", "sign_flips"}
