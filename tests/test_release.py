"""What a release carries and how a user meets it: the version, the license and metadata, `invlab --version`,
the notebooks copied out by `invlab notebooks DIR`, `invlab lab` and the extras each command needs."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.cli import run_main

ROOT = Path(__file__).resolve().parent.parent



def project_version() -> str:
    return re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)


def test_the_version_is_the_projects_and_invlab_prints_it(capsys):
    import invlab

    assert invlab.__version__ == project_version()
    code, out, _ = run_main(capsys, "--version")
    assert code == 0 and out.strip() == f"invlab {project_version()}"


def test_the_changelog_starts_at_the_released_version_in_keep_a_changelog_form():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "keepachangelog.com" in text and "semver.org" in text
    assert re.search(rf"^## \[{re.escape(project_version())}\] - \d{{4}}-\d{{2}}-\d{{2}}$", text, re.M)
    assert "## [Unreleased]" in text


def test_the_license_and_metadata_are_declared_as_packaging_expects():
    meta = (ROOT / "pyproject.toml").read_text()
    assert 'license = "MIT"' in meta and 'license-files = ["LICENSE"]' in meta
    assert "MIT License" in (ROOT / "LICENSE").read_text() and "Invariance Lab developers" in meta
    assert "github.com/invariance-lab" not in meta, "no address the project does not own"
    for package in ("engine", "dashboard"):
        assert (ROOT / package / "py.typed").is_file()


def test_invlab_notebooks_copies_the_teaching_notebooks_and_never_overwrites(tmp_path, capsys):
    target = tmp_path / "my-notebooks"
    code, out, err = run_main(capsys, "notebooks", str(target))
    assert code == 0, err
    copied = sorted(p.name for p in target.glob("*.ipynb"))
    assert copied == sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb")) and len(copied) == 8
    assert json.loads((target / copied[1]).read_text())["cells"]
    assert f"copied {len(copied)} notebooks to {target}" in out

    (target / copied[0]).write_text("my own edits")
    code, _, err = run_main(capsys, "notebooks", str(target))
    assert code == 1 and "already exist" in err and copied[0] in err and "nothing was copied" in err
    assert (target / copied[0]).read_text() == "my own edits"
    assert "Traceback" not in err


def test_invlab_notebooks_refuses_a_file_as_the_folder(tmp_path, capsys):
    target = tmp_path / "a-file"
    target.write_text("x")
    code, _, err = run_main(capsys, "notebooks", str(target))
    assert code == 1 and "is a file" in err and target.read_text() == "x"


def test_invlab_lab_copies_the_notebooks_once_and_opens_them_in_jupyterlab(tmp_path):
    from invlab.cli.notebooks import lab_command

    target = tmp_path / "nb"
    cmd = lab_command([str(target)])
    assert cmd[:3] == [sys.executable, "-m", "jupyterlab"]
    assert f"--notebook-dir={target}" in cmd and "--ServerApp.ip=127.0.0.1" in cmd
    assert len(list(target.glob("*.ipynb"))) == 8
    (target / "01_learning_invariances.ipynb").write_text("edited")
    lab_command([str(target)])  # opening the folder again keeps the user's edits
    assert (target / "01_learning_invariances.ipynb").read_text() == "edited"


def test_invlab_serve_without_the_dashboard_names_the_extra_a_wheel_user_installs(monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None if name == "panel" else real(name, *args))
    code, _, err = run_main(capsys, "serve")
    assert code == 2 and "pip install 'invariance-lab[dashboard]'" in err and "-e" not in err.split("pip install")[1]


def test_the_core_install_needs_no_dask_and_the_set_up_installs_every_extra():
    meta = (ROOT / "pyproject.toml").read_text()
    core = meta.split("dependencies = [", 1)[1].split("]", 1)[0]
    assert "dask" not in core and "panel" not in core
    extras = meta.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    assert re.search(r'^dashboard = \[.*"panel.*"holoviews.*"bokeh.*"pandas', extras, re.M)
    assert "jupyterlab" not in re.search(r"^dashboard = .*$", extras, re.M).group(0)
    assert re.search(r'^lab = \[.*"jupyterlab.*"notebook', extras, re.M)
    assert re.search(r'^sweeps = \["dask\[distributed\]', extras, re.M)
    names = set(re.findall(r"^(\w+) = \[", extras, re.M)) - {"peers"}  # peers need TensorFlow: opt-in
    makefile = (ROOT / "Makefile").read_text()
    setup_extras = set(re.search(r'-e "\.\[([\w,]+)\]"', makefile).group(1).split(","))
    assert setup_extras == names
    conda = set(re.search(r"-e \.\[([\w,]+)\]", (ROOT / "environment.yml").read_text()).group(1).split(","))
    assert conda == names


def test_the_engine_imports_without_dask_or_the_dashboard():
    code = ("import sys, invlab, invlab.cli, invlab.sweeps, invlab.train; "
            "bad = sorted(m for m in ('dask', 'distributed', 'panel', 'bokeh', 'holoviews') if m in sys.modules); "
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_page_imports_without_dask_or_jupyterlab():
    """The `dashboard` extra alone serves the page: its modules import neither Dask (the `sweeps` extra) nor
    JupyterLab (the `lab` extra) until a sweep runs."""
    code = ("import sys, invlab.dashboard, invlab.dashboard.explorer.explorer, invlab.dashboard.compare, "
            "invlab.dashboard.serving.process; "
            "print(sorted(m for m in ('dask', 'distributed', 'jupyterlab', 'notebook') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_commands_models_and_the_page_load_without_scipy():
    """SciPy (0.8 CPU-s of every process's start with its compiled libraries) is imported where it is used (the GWI
    temperature search, rotating images), not by every `invlab` command, server, kernel and worker that loads a
    model or the page."""
    code = ("import sys, invlab.cli, invlab.train, invlab.models, invlab.data, invlab.sweeps.task, invlab.dashboard; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'scipy', 'sklearn'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("name", ["engine", "dashboard"])
def test_each_package_ships_a_py_typed_marker(name):
    assert (ROOT / name / "py.typed").exists()
