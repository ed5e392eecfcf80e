"""Plugins that fail, `watch` given bad values, sweeps and discover without their needs, stored views."""

import json
import os
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.bad_inputs.worlds import hide_module, run_cli


def _bad_plugin(tmp_path, source):
    """`invlab plugins` as a real process with a plugin package `broken-plugin` (module `broken`) installed into a
    temporary folder on PYTHONPATH."""
    from tests.helpers.plugins import env_with, install, invlab, package

    site = install(package(tmp_path / "src", "broken-plugin", "broken", source), tmp_path / "site")
    out = invlab("plugins", env=env_with(site, INVLAB_DATA=str(tmp_path / "data")))
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert any(line.split()[:2] == ["kernel", "rbf"] for line in out.stdout.splitlines())  # the rest still works
    warnings = [line for line in out.stderr.splitlines() if line.startswith("invlab: warning: plugin 'broken'")]
    assert len(warnings) == 1, out.stderr
    return warnings[0], out.stdout


def test_a_plugin_that_raises_on_import_is_named_and_skipped(tmp_path):
    line, listing = _bad_plugin(tmp_path, "raise RuntimeError('the lab is not ready for me')\n")
    assert ("plugin 'broken' (module broken, package broken-plugin) failed to load and was skipped: RuntimeError: "
            "the lab is not ready for me; fix or uninstall broken-plugin") in line
    assert "plugin broken: module broken from package broken-plugin, skipped: RuntimeError" in listing


def test_a_plugin_that_clashes_with_a_built_in_is_named_and_skipped(tmp_path):
    source = ("import invlab.kernels\nfrom invlab.kernels import Stationary\n\n\n@invlab.kernels.register('rbf')\n"
              "class MyRBF(Stationary):\n    pass\n")
    line, listing = _bad_plugin(tmp_path, source)
    assert ("kernel name 'rbf' is taken by the built-in kernel invlab.kernels.stationary.RBF; register broken.MyRBF "
            "under another name") in line
    rbf = next(row for row in listing.splitlines() if row.split()[:2] == ["kernel", "rbf"])
    assert "built-in" in rbf and "invlab.kernels.stationary.RBF" in rbf  # the built-in is left as it was


def test_watch_log_non_finite_or_non_scalar_is_a_gap_with_one_warning(tmp_path):
    from invlab.train import RunStore, WatchWarning, watch

    with pytest.warns(WatchWarning) as caught, watch(name="gaps", data_dir=tmp_path) as run:
        for step in range(1, 5):
            run.log(step, loss=float("nan") if step % 2 else 1.0 / step, grad=torch.ones(3), note="text")
        run.log(5, loss=torch.tensor(float("inf")))
    said = sorted(str(w.message) for w in caught)
    assert len(said) == 3, said  # one per name, however often it happens
    assert "grad at step 1 is a tensor of shape (3,), not a single number; it is recorded as a gap" in said[0]
    assert "loss at step 1 is nan, not a finite number; it is recorded as a gap" in said[1]
    assert "note at step 1 is a str, not a single number" in said[2]
    with RunStore(tmp_path / "runs.sqlite") as store:
        record, stored = store.runs.get(run.run_id), store.metrics.read(run.run_id)
    assert record.status == "finished" and record.step == 5  # the loop went on
    assert stored["loss"] == ([1, 2, 3, 4, 5], [None, 0.5, None, 0.25, None])
    assert stored["grad"] == ([1, 2, 3, 4], [None] * 4)


def test_watch_a_run_another_process_writes_is_refused(tmp_path):
    import subprocess
    import textwrap

    from invlab.train import RunStore, RunStoreError, watch

    loop = textwrap.dedent(f"""
        import sys
        from invlab.train import watch
        with watch(name="shared", data_dir={str(tmp_path)!r}) as run:
            run.log(1, loss=1.0)
            print(run.run_id, flush=True)
            sys.stdin.readline()
    """)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1]))
    other = subprocess.Popen([sys.executable, "-c", loop], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env=env)
    try:
        run_id = int(other.stdout.readline())
        with pytest.raises(RunStoreError) as info:
            watch(name="shared", data_dir=tmp_path)
        assert str(info.value).startswith(f"run {run_id} ('shared') is being written by another process "
                                          f"(pid {other.pid} on ")
        assert "a run has one writer" in str(info.value)
        with RunStore(tmp_path / "runs.sqlite") as store:  # nor can a trainer or the page take it over
            with pytest.raises(RunStoreError, match=f"pid {other.pid}"):
                store.leases.claim_run(run_id)
    finally:
        other.communicate("\n", timeout=60)
    assert other.returncode == 0
    with RunStore(tmp_path / "runs.sqlite") as store:
        assert [(r.name, r.status) for r in store.runs.list()] == [("shared", "finished")]
    with watch(name="shared", data_dir=tmp_path) as again:  # once it has finished, the name can be watched again
        again.log(1, loss=0.5)
    assert again.run_id != run_id


def test_sweep_without_dask(world, capsys, monkeypatch):
    hide_module(monkeypatch, "dask", "distributed")
    code, _, err = run_cli(["sweep", "--study", "rotation-choice", "--quick", "--quiet"], capsys)
    assert code == 2 and "invlab sweep: sweeps run on Dask distributed" in err and "Traceback" not in err
    assert "pip install 'invariance-lab[sweeps]'" in err
    assert run_cli(["sweeps", "--json"], capsys)[1] == ""  # nothing stored


DISCOVER_SMALL = ["discover", "--dataset", "symmetric-2d", "--source-option", "num_train=30", "--seeds", "1",
                  "--steps", "20", "--num-inducing", "5", "--serial", "--quiet", "--json"]


@pytest.fixture
def exploding_orbit():
    """A registered vector orbit that diverges at its first step, for the time of one test."""
    from tests.helpers.orbits import exploding_orbit as registered

    with registered() as name:
        yield name


def test_discover_diverging_candidate(world, capsys, exploding_orbit):
    code, out, err = run_cli([*DISCOVER_SMALL, "--orbit", "exploding", "--orbit", "permutations"], capsys)
    assert code == 1 and "Traceback" not in err + out
    report = json.loads(out.strip().splitlines()[-1])
    rows = {r["candidate"]: r for r in report["ranking"]}
    assert rows["exploding"]["elbo_mean"] is None and "non-finite loss" in rows["exploding"]["failed"][0]
    assert rows["none"]["seeds"] == rows["permutations"]["seeds"] == 1  # the others went on
    assert report["ranking"][-1]["candidate"] == "exploding" and "exploding failed" in report["verdict"]
    assert any(note.startswith("exploding failed (seed 0: step 1 produced a non-finite loss") for note in
               report["notes"])


def test_discover_interrupted(world, capsys, monkeypatch):
    import invlab.sweeps.task as task

    real, calls = task.train_run, []

    def ctrl_c_on_the_third(*args, **kwargs):
        calls.append(args[1])
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(task, "train_run", ctrl_c_on_the_third)
    code, out, err = run_cli([*DISCOVER_SMALL, "--seeds", "2", "--report", str(world / "r.html")], capsys)
    assert code == 130 and "Traceback" not in err + out
    assert "interrupted: the finished candidates are kept; the report is partial" in err
    report = json.loads(out.strip().splitlines()[-1])
    assert report["partial"] and report["status"] == "interrupted" and report["runs_stored"] == 2
    assert "partial: 2/6 runs stored" in out
    assert "Partial report: 2 of 6 runs stored" in (world / "r.html").read_text()
    code, out, _ = run_cli(["sweeps", "--json"], capsys)
    assert '"status": "interrupted"' in out


def test_lab_without_jupyterlab(world, capsys, monkeypatch):
    hide_module(monkeypatch, "jupyterlab")
    code, _, err = run_cli(["lab", str(world / "nb")], capsys)
    assert code == 2 and "invlab lab: JupyterLab is not installed" in err
    assert "pip install 'invariance-lab[lab]'" in err and not (world / "nb").exists()


def test_a_stored_view_that_is_not_an_engine_view_is_skipped_and_never_run(tmp_path):
    import json
    import zlib

    import numpy as np

    from invlab import diagnostics as dg
    from invlab.train import RunConfig, RunStore

    with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = store.runs.create(RunConfig().to_json(), "svgp", "digits")
        store.views.save(run_id, 1, {"spectrum": dg.Spectrum(values=np.ones(3))})
        store.flush()
    db = sqlite3.connect(tmp_path / "runs.sqlite")
    with db:
        for name, payload in (("evil", {"type": "os.system", "fields": {"command": "touch pwned"}}),
                              ("broken", {"type": "Spectrum", "fields": {"values": {"array": {"dtype": "|O",
                                                                                            "shape": [1],
                                                                                            "data": ""}}}})):
            db.execute("INSERT INTO views (run_id, name, step, kind, payload, updated) VALUES (?, ?, 1, ?, ?, 0)",
                       (run_id, name, payload["type"], zlib.compress(json.dumps(payload).encode())))
    db.close()
    with RunStore(tmp_path / "runs.sqlite") as store:
        stored = store.views.read(run_id)
    assert list(stored.views) == ["spectrum"]
    assert sorted(name for name, _ in stored.skipped) == ["broken", "evil"]
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("bad", [np.array(["a", "b"]), np.array([object()])])
def test_a_view_holding_what_is_not_numbers_is_not_stored_with_a_warning(tmp_path, bad):
    from invlab import diagnostics as dg
    from invlab.train import RunConfig, RunStore

    with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = store.runs.create(RunConfig().to_json(), "svgp", "digits")
        with pytest.warns(UserWarning, match="odd.*cannot be stored"):
            store.views.save(run_id, 1, {"odd": dg.Spectrum(values=bad), "fine": dg.Spectrum(values=np.ones(2))})
            store.flush()
        assert list(store.views.read(run_id).views) == ["fine"]
