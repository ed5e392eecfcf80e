"""The release as a pip user gets it: the sdist and the wheel are built from a copy of this checkout (setuptools'
own build hooks, offline), their contents checked, and the wheel installed with --no-deps into a fresh venv whose
dependencies come from this interpreter's site-packages through a .pth file (no download, seconds). From another
folder the installed `invlab` prints its version, trains, copies the notebooks out and serves the page.

About a minute: marked `package`, so a quick run can leave it out with `-m "not package"`.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import time
import urllib.request
import venv
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.package

ROOT = Path(__file__).resolve().parent.parent
SKIP = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
                              ".ipynb_checkpoints", "*.sqlite", "*.npz", "*.pt")


def build(hook: str, source: Path, out: Path) -> tuple[Path, str]:
    """Run setuptools' PEP 517 `hook` (build_sdist / build_wheel) in `source`; (the file built, what it printed)."""
    out.mkdir(exist_ok=True)
    done = subprocess.run([sys.executable, "-c", f"from setuptools import build_meta; "
                           f"print(build_meta.{hook}({str(out)!r}))"], cwd=source, capture_output=True, text=True,
                          timeout=300, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert done.returncode == 0, done.stderr[-3000:]
    return out / done.stdout.strip().splitlines()[-1], done.stdout + done.stderr


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(sdist, wheel, build output): the sdist from a copy of the checkout, the wheel from the unpacked sdist."""
    tmp = tmp_path_factory.mktemp("release")
    shutil.copytree(ROOT, tmp / "checkout", ignore=SKIP)
    sdist, said = build("build_sdist", tmp / "checkout", tmp / "dist")
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp / "unpacked", filter="data")
    (unpacked,) = (tmp / "unpacked").iterdir()
    wheel, said_wheel = build("build_wheel", unpacked, tmp / "dist")
    return sdist, wheel, said + said_wheel, unpacked


def test_building_gives_no_deprecation_warning(built):
    _, _, said, _ = built
    assert "Deprecat" not in said and "deprecat" not in said, said[-3000:]


def test_the_sdist_carries_tests_notebooks_docs_and_the_set_up(built):
    sdist, _, _, unpacked = built
    for path in ("LICENSE", "CHANGELOG.md", "README.md", "Makefile", "environment.yml", "pyproject.toml",
                 "tests/conftest.py", "tests/cli/test_cli.py", "tests/kernels", "tests/browser/pagekit.py",
                 "tests/jupyter/conftest.py", "docs/bad_inputs.md", "notebooks/01_learning_invariances.ipynb",
                 "engine/py.typed", "dashboard/py.typed", "dashboard/screenshots/lesson.png"):
        assert (unpacked / path).exists(), f"{path} is missing from {sdist.name}"
    meta = (unpacked / "PKG-INFO").read_text()
    assert "License-Expression: MIT" in meta and "Version: 0.2.0" in meta


def fresh_venv(env_dir: Path) -> Path:
    """A venv at `env_dir` whose dependencies come from this interpreter's site-packages (a .pth file: no download);
    its Python."""
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    ours = [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and Path(p).is_dir()]
    Path(site, "invlab-test-deps.pth").write_text("\n".join(ours) + "\n")  # dependencies only, after the venv's own
    return python


def pip_install(python: Path, *args) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                           "--quiet", *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def test_pytest_runs_from_the_unpacked_sdist(built, tmp_path):
    """As a contributor starts from the sdist: an editable install of it (engine/ and dashboard/ mapped into `invlab`,
    as `make setup` does), then its own tests, on its own code."""
    *_, unpacked = built
    python = fresh_venv(tmp_path / "venv")
    pip_install(python, "--no-build-isolation", "-e", str(unpacked))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    where = subprocess.run([str(python), "-c", "import invlab, invlab.dashboard; print(invlab.__file__); "
                            "print(invlab.dashboard.__file__)"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert where.returncode == 0, where.stderr
    assert [Path(line).parent for line in where.stdout.split()] == [unpacked / "engine", unpacked / "dashboard"]
    done = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_parameters.py",
                           "tests/kernels/test_kernels.py"], cwd=unpacked, capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "error" not in done.stdout.splitlines()[-1]


def test_the_wheel_carries_the_notebooks_type_markers_and_metadata(built):
    _, wheel, _, _ = built
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        (meta_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = whl.read(meta_name).decode()
    notebooks = {n for n in names if n.startswith("invlab/notebooks/") and n.endswith(".ipynb")}
    assert len(notebooks) == len(list((ROOT / "notebooks").glob("*.ipynb"))) == 8
    assert {"invlab/py.typed", "invlab/dashboard/py.typed", "invlab/dashboard/screenshots/lesson.png",
            "invlab/dashboard/compare/__init__.py", "invlab/train/trainer.py"} <= names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not any(n.startswith("tests/") for n in names)
    assert "License-Expression: MIT" in meta and "Author: The Invariance Lab developers" in meta
    assert "Project-URL" not in meta  # no address until the project has a public home
    for extra in ("dashboard", "lab", "sweeps"):
        assert f"Provides-Extra: {extra}" in meta
    requires = [line for line in meta.splitlines() if line.startswith("Requires-Dist:")]
    assert all("extra ==" in line for line in requires if "dask" in line or "panel" in line or "jupyterlab" in line)


def test_the_wheel_installs_one_top_level_package_invlab(built):
    """Nothing named `engine` or `dashboard` (names a user's own engine.py or dashboard/ would shadow, or be shadowed
    by) lands in site-packages: `invlab` and the distribution's metadata are all there is at the top level."""
    _, wheel, _, _ = built
    with zipfile.ZipFile(wheel) as whl:
        tops = {name.split("/")[0] for name in whl.namelist()}
    (dist_info,) = [t for t in tops if t.endswith(".dist-info")]
    assert tops == {"invlab", dist_info}, tops
    assert dist_info.startswith("invariance_lab-")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_installed_wheel_works_from_another_folder(built, tmp_path):
    _, wheel, _, _ = built
    env_dir = tmp_path / "venv"
    python = fresh_venv(env_dir)
    pip_install(python, str(wheel))

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["INVLAB_DATA"] = str(tmp_path / "data")
    invlab = str(env_dir / "bin" / "invlab")

    def run(*args, timeout=300):
        return subprocess.run([invlab, *args], cwd=elsewhere, capture_output=True, text=True, env=env,
                              timeout=timeout)

    where = subprocess.run([str(python), "-c", "import invlab, invlab.dashboard, importlib.util as u; "
                            "print(invlab.__file__, invlab.dashboard.__file__, u.find_spec('engine'), "
                            "u.find_spec('dashboard'))"], cwd=elsewhere, capture_output=True, text=True, env=env)
    assert where.stdout.count(str(env_dir)) == 2, where  # the wheel's code, not this checkout's
    assert where.stdout.split()[-2:] == ["None", "None"], where  # no top-level engine or dashboard
    assert run("--version").stdout.strip() == "invlab 0.2.0"

    trained = run("train", "--steps", "5", "--num-inducing", "10", "--eval-every", "5", "--quiet", "--json")
    assert trained.returncode == 0, trained.stderr
    assert json.loads(trained.stdout.splitlines()[-1])["step"] == 5

    copied = run("notebooks", "nb")
    assert copied.returncode == 0, copied.stderr
    assert len(list((elsewhere / "nb").glob("*.ipynb"))) == 8

    port = free_port()
    server = subprocess.Popen([invlab, "serve", "--port", str(port)], cwd=elsewhere, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline, status = time.time() + 120, None
        while time.time() < deadline and server.poll() is None:
            try:
                status = urllib.request.urlopen(f"http://127.0.0.1:{port}/app", timeout=30).status
                break
            except OSError:
                time.sleep(0.5)
        assert status == 200, server.stderr.read().decode()[-3000:] if server.poll() is not None else "no answer"
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
