"""Every benchmark still starts: each module under benchmarks/ that runs as `python -m benchmarks.<...>` is run with
its smallest mode (`--smoke`: seconds, figures meaningless) and must end with exit status 0 and one JSON object as
its last line of output.

The modules are found by walking benchmarks/, so a new benchmark is covered without touching this file; the only
ones left out are named in EXCLUDED with the reason. The runs go two (or as many as there are cores) at a time,
started together by a module fixture, each a fork of one process that has imported torch and the lab once.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from concurrent.futures import Future
from pathlib import Path

import pytest

# the page's benchmarks (page_speed, latency, overhead, lessons) drive Chromium, and one fixture starts every run
pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
TIMEOUT_S = 480  # one run on a loaded 2-core machine (the page's benchmarks: ~70 s alone, over 240 s in the suite)

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
NEEDS = {"benchmarks.convolutional.vs_gpflow": "gpflow", "benchmarks.svgp.vs_gpytorch": "gpytorch",
         "benchmarks.gpytorch.conv": "gpytorch"}


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


def _environment(data: Path) -> dict:
    env = dict(os.environ, INVLAB_DATA=str(data), INVLAB_THREADS="1")
    if env.get("INVLAB_CHROMIUM", "").endswith("chromium-headless-shell"):  # the tests' browser (tests/conftest.py):
        del env["INVLAB_CHROMIUM"]  # the page's benchmarks drive Debian's full Chromium, as a person's browser
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


@pytest.fixture(scope="module")
def smoke_runs(tmp_path_factory):
    """Every runnable module's smoke run (`python -m <module> --smoke`), as many at a time as the machine has cores
    (up to 4): {module: a future of its CompletedProcess}. The runs are forks of one process that has imported
    torch, the engine and the dashboard once (tests/helpers/forked_runs.py), each running its module as
    `__main__` with its own output and exit status."""
    data, outdir = tmp_path_factory.mktemp("data"), tmp_path_factory.mktemp("smoke")
    wanted = [m for m in RUN if _installed(m)]
    width = max(1, min(4, os.cpu_count() or 1))
    runner = subprocess.Popen([sys.executable, str(ROOT / "tests" / "helpers" / "forked_runs.py"), str(outdir),
                               str(width), str(TIMEOUT_S), "--smoke", "--", *wanted],
                              cwd=ROOT, env=_environment(data), stdout=subprocess.PIPE, text=True)
    futures = {m: Future() for m in wanted}

    def completed(module: str, code: int) -> subprocess.CompletedProcess:
        out, err = (outdir / f"{module}.{k}" for k in ("out", "err"))
        stdout = out.read_text(errors="replace") if out.exists() else ""
        stderr = err.read_text(errors="replace") if err.exists() else ""
        if code == -1:
            stderr += f"\ntimed out after {TIMEOUT_S} s"
        return subprocess.CompletedProcess(["python", "-m", module, "--smoke"], code, stdout, stderr)

    def collect():
        for line in runner.stdout:
            module, code = line.split()
            futures[module].set_result(completed(module, int(code)))
        runner.wait()
        for module, future in futures.items():
            if not future.done():
                future.set_result(subprocess.CompletedProcess(
                    [module], -1, "", f"the runner ended (status {runner.returncode}) before this run did"))

    threading.Thread(target=collect, daemon=True).start()
    yield futures
    if runner.poll() is None:
        runner.kill()
        runner.wait()


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


def result_of(smoke_runs, module: str) -> tuple[dict, str]:
    """The JSON line a module's smoke run ended with, and what it wrote to stderr."""
    out = smoke_runs[module].result()
    assert out.returncode == 0, f"{module} --smoke failed:\n{out.stderr[-3000:]}"
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


# What some scripts' JSON lines hold, read from the same smoke runs. Timings are reported, never asserted; a ratio
# must be the ratio of the figures printed beside it.
def test_dkp_scaling_prints_its_ratios(smoke_runs):
    result, _ = result_of(smoke_runs, "benchmarks.dkp.scaling")
    assert result["ratio_double_pt"] > 0 and result["ratio_double_pi"] > 0
    steps = result["step_ms"]
    assert abs(result["ratio_double_pt"] - steps["pi_2pt"] / steps["pi_pt"]) < 0.01 * result["ratio_double_pt"]
    assert set(result["step_ms"]) == {"pi_pt", "pi_2pt", "2pi_pt"}


def test_page_defaults_prints_a_row_per_family_on_its_own_dataset(smoke_runs):
    result, _ = result_of(smoke_runs, "benchmarks.dashboard.page_defaults")
    assert set(result["families"]) == {"svgp"}  # the smoke run's one family
    row = result["families"]["svgp"]
    assert row["dataset"] == "digits" and row["steps_per_s"] > 0 and row["eval_ms"] > 0
    assert result["min_page_steps_per_s"] == row["page_steps_per_s"] and isinstance(result["below_target"], list)


def test_sweep_scaling_compares_serial_runs_with_a_local_cluster(smoke_runs):
    result, _ = result_of(smoke_runs, "benchmarks.sweep_scaling")
    assert result["runs"] == 2 and result["workers"] >= 1
    # the speedup is the ratio of the unrounded times, so it agrees with the printed (rounded to 1 ms) times within
    # what that rounding can move it
    serial, sweep = result["serial_s"], result["sweep_s"]
    slack = 0.0005 * (1 / sweep + serial / sweep ** 2) + 0.0005
    assert abs(result["speedup"] - serial / sweep) <= slack * 1.01
    assert {"overhead_s_per_run", "startup_s", "run_s_on_workers"} <= set(result)


def test_csv_load_prints_time_and_memory_per_method(smoke_runs):
    result, _ = result_of(smoke_runs, "benchmarks.data.csv_load")
    assert set(result["methods"]) == {"invlab", "invlab_read", "pandas", "numpy"} and result["rows"] == 2000
    assert all(m["seconds"] > 0 and m["peak_over_array"] >= 0 for m in result["methods"].values())
    assert result["time_ratio_invlab_over_pandas"] > 0 and isinstance(result["meets_targets"], bool)


def test_watch_overhead_prints_its_ratio(smoke_runs):
    result, stderr = result_of(smoke_runs, "benchmarks.watch.overhead")
    assert result["benchmark"] == "benchmarks.watch.overhead" and result["device"] == "cpu"
    assert result["steps"] == 10 and result["repeats"] == 1 and result["target_percent"] == 5.0
    # the ratio is the median of the per-repetition ratios of the printed times
    (bare,), (watched,) = result["seconds"]["bare"], result["seconds"]["watched"]
    assert result["ratios"] == [pytest.approx(watched / bare, abs=2e-3)]
    assert result["ratio"] == result["ratios"][0]
    assert result["overhead_percent"] == pytest.approx(100 * (result["ratio"] - 1), abs=0.01)
    assert "watch costs" in stderr and "steps/s bare" in stderr
