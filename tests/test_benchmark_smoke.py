"""Every benchmark still starts: each module under benchmarks/ that runs as `python -m benchmarks.<...>` is run with
its smallest mode (`--smoke`: seconds, figures meaningless) and must end with exit status 0 and one JSON object as
its last line of output.

The modules are found by walking benchmarks/, so a new benchmark is covered without touching this file; the only
ones left out are named in EXCLUDED with the reason. The runs go two (or as many as there are cores) at a time,
started together by a module fixture, so the whole file takes about as long as the slowest runs, not their sum.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

# the page's benchmarks (page_speed, latency, overhead, lessons) drive Chromium, and one fixture starts every run
pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
TIMEOUT_S = 240  # one run on a loaded 2-core machine; a smoke run takes seconds

# Modules that need what a clean checkout does not have; every other module is run.
EXCLUDED = {
    "benchmarks.convolutional.mnist01": "needs MNIST (`invlab fetch mnist`), which is not bundled",
    "benchmarks.convolutional.mnist10": "needs MNIST (`invlab fetch mnist`), which is not bundled",
    "benchmarks.invariant.mnist": "needs MNIST (`invlab fetch mnist`), which is not bundled",
    "benchmarks.invariant.rotated_mnist": "needs MNIST (`invlab fetch mnist`), which is not bundled",
    "benchmarks.dkp.mnist": "needs MNIST (`invlab fetch mnist`), which is not bundled",
    "benchmarks.gwi.mnist": "needs MNIST (`invlab fetch mnist`), which is not bundled",
    "benchmarks.rkhs.mnist": "needs MNIST (`invlab fetch mnist`), which is not bundled",
}
# Modules that need an optional package: run when it is installed (tests/test_benchmarks.py checks the message
# each gives without it).
NEEDS = {"benchmarks.convolutional.vs_gpflow": "gpflow", "benchmarks.svgp.vs_gpytorch": "gpytorch"}


def benchmark_modules() -> list[str]:
    """Every module under benchmarks/ with a `__main__` block, as a dotted name."""
    out = []
    for path in sorted(BENCHMARKS.rglob("*.py")):
        if "__pycache__" in path.parts or 'if __name__ == "__main__"' not in path.read_text():
            continue
        out.append(".".join(path.relative_to(ROOT).with_suffix("").parts))
    return out


MODULES = benchmark_modules()
RUN = [m for m in MODULES if m not in EXCLUDED]


def _installed(module: str) -> bool:
    import importlib.util

    return module not in NEEDS or importlib.util.find_spec(NEEDS[module]) is not None


def _smoke(module: str, data: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, INVLAB_DATA=str(data), INVLAB_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    try:
        return subprocess.run([sys.executable, "-m", module, "--smoke"], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as err:
        return subprocess.CompletedProcess(err.cmd, -1, err.stdout or "", f"timed out after {TIMEOUT_S} s")


@pytest.fixture(scope="module")
def smoke_runs(tmp_path_factory):
    """Every runnable module's smoke run, started together on a pool as wide as the machine's cores."""
    data = tmp_path_factory.mktemp("data")
    wanted = [m for m in RUN if _installed(m)]
    pool = ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1)))
    futures = {m: pool.submit(_smoke, m, data) for m in wanted}
    yield futures
    pool.shutdown(wait=False, cancel_futures=True)


def test_the_walk_finds_every_family_and_excludes_only_modules_that_exist():
    families = {m.split(".")[1] for m in MODULES}
    assert {"dashboard", "dkp", "gwi", "invariant", "rkhs", "svgp", "convolutional", "data", "watch"} <= families
    assert "benchmarks.dashboard.latency" in RUN and "benchmarks.sweep_scaling" in RUN
    assert set(EXCLUDED) <= set(MODULES)  # a renamed module must not leave a stale exclusion behind


@pytest.mark.parametrize("module", RUN)
def test_benchmark_smoke_run_ends_with_its_json_line(module, smoke_runs):
    if not _installed(module):
        pytest.skip(f"{module} needs {NEEDS[module]}, which is not installed")
    out = smoke_runs[module].result()
    assert out.returncode == 0, f"{module} --smoke failed:\n{out.stderr[-3000:]}"
    last = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    assert isinstance(json.loads(last), dict), f"{module}'s last line is not a JSON object: {last!r}"
