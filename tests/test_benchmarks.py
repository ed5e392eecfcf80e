"""Benchmark scripts behave as documented: one JSON object as the last line, a clear message without peers, and
every `python -m benchmarks.<family>.<name>` the docs name is a module that exists."""
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.common import emit

ROOT = Path(__file__).resolve().parents[1]


def run(code: str, tmp_path, timeout=300):
    env = dict(os.environ, INVLAB_DATA=str(tmp_path / "data"))
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env,
                          timeout=timeout)


def test_gpflow_benchmark_without_gpflow_says_what_to_install_and_fails(tmp_path):
    out = run("import sys, runpy; sys.modules['gpflow'] = None; "  # as if GPflow were not installed
              "runpy.run_module('benchmarks.convolutional.vs_gpflow', run_name='__main__')", tmp_path)
    assert out.returncode != 0
    assert "pip install -e '.[peers]'" in out.stderr and "GPflow" in out.stderr


def test_dkp_scaling_quick_prints_its_ratios(tmp_path):
    out = run("import sys, runpy; sys.argv = ['dkp_scaling', '--quick']; "
              "runpy.run_module('benchmarks.dkp.scaling', run_name='__main__')", tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["ratio_double_pt"] > 0 and result["ratio_double_pi"] > 0  # timings: reported, never asserted
    steps = result["step_ms"]
    assert abs(result["ratio_double_pt"] - steps["pi_2pt"] / steps["pi_pt"]) < 0.01 * result["ratio_double_pt"]
    assert set(result["step_ms"]) == {"pi_pt", "pi_2pt", "2pi_pt"}


def test_page_defaults_prints_a_row_per_family(tmp_path):
    out = run("import sys, runpy; sys.argv = ['page_defaults', '--family', 'svgp', 'conv-weighted', '--steps', '4', "
              "'--repeats', '1']; runpy.run_module('benchmarks.dashboard.page_defaults', run_name='__main__')",
              tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(result["families"]) == {"svgp", "conv-weighted"}
    row = result["families"]["conv-weighted"]
    assert row["dataset"] == "rectangles" and row["steps_per_s"] > 0 and row["eval_ms"] > 0  # reported, not asserted
    assert isinstance(result["below_target"], list)


def test_every_benchmark_the_docs_name_exists():
    docs = [ROOT / "README.md", ROOT / "Makefile", *sorted((ROOT / "benchmarks").rglob("*.md")),
            *sorted((ROOT / "benchmarks").rglob("*.py"))]
    named = {m for path in docs for m in re.findall(r"python -m (benchmarks(?:\.\w+)+)", path.read_text())}
    assert "benchmarks.svgp.vs_gpytorch" in named and len(named) > 20
    assert [m for m in sorted(named) if importlib.util.find_spec(m) is None] == []


def test_emit_prints_the_result_and_the_machine_as_the_last_line(capsys):
    out = emit({"ratio": 0.5, "cpu_count": 64}, load_before=0.25)
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last == out and last["ratio"] == 0.5
    assert last["cpu_count"] == 64  # the result's own keys win
    assert last["load_average_1min"][0] == 0.25 and len(last["load_average_1min"]) == 2


def test_sweep_scaling_quick_compares_serial_runs_with_a_local_cluster(tmp_path):
    out = run("import sys, runpy; sys.argv = ['sweep_scaling', '--quick', '--runs', '4']; "
              "runpy.run_module('benchmarks.sweep_scaling', run_name='__main__')", tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["runs"] == 4 and result["workers"] >= 1
    # timings: reported, never asserted; the speedup is the ratio of the unrounded times, so it agrees with the
    # printed (rounded to 1 ms) times within what that rounding can move it
    serial, sweep = result["serial_s"], result["sweep_s"]
    slack = 0.0005 * (1 / sweep + serial / sweep ** 2) + 0.0005
    assert abs(result["speedup"] - serial / sweep) <= slack * 1.01
    assert {"overhead_s_per_run", "startup_s", "run_s_on_workers"} <= set(result)


def test_csv_load_prints_time_and_memory_per_method(tmp_path):
    out = run("import sys, runpy; sys.argv = ['csv_load', '--rows', '3000', '--repeats', '1']; "
              "runpy.run_module('benchmarks.data.csv_load', run_name='__main__')", tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(result["methods"]) == {"invlab", "invlab_read", "pandas", "numpy"} and result["rows"] == 3000
    assert all(m["seconds"] > 0 and m["peak_over_array"] >= 0 for m in result["methods"].values())  # reported only
    assert result["time_ratio_invlab_over_pandas"] > 0 and isinstance(result["meets_targets"], bool)


def test_watch_overhead_quick_prints_its_ratio(tmp_path):
    out = run("import sys, runpy; sys.argv = ['overhead', '--quick']; "
              "runpy.run_module('benchmarks.watch.overhead', run_name='__main__')", tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["benchmark"] == "benchmarks.watch.overhead" and result["device"] == "cpu"
    assert result["steps"] == 100 and result["repeats"] == 1 and result["target_percent"] == 5.0
    # timings: reported, never asserted; the ratio is the median of the per-repetition ratios of the printed times
    (bare,), (watched,) = result["seconds"]["bare"], result["seconds"]["watched"]
    assert result["ratios"] == [pytest.approx(watched / bare, abs=2e-3)]
    assert result["ratio"] == result["ratios"][0]
    assert result["overhead_percent"] == pytest.approx(100 * (result["ratio"] - 1), abs=0.01)
    assert "watch costs" in out.stderr and "steps/s bare" in out.stderr


def test_the_gpu_script_says_when_there_is_no_cuda_and_runs_nothing():
    """benchmarks/gpu/run.sh is valid bash; on a machine without CUDA it prints one JSON line saying so and exits 1
    (on a GPU machine it prints one JSON line per check)."""
    import torch

    script = ROOT / "benchmarks" / "gpu" / "run.sh"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    if torch.cuda.is_available():
        return  # the real run takes minutes: benchmarks/gpu/README.md
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHON": sys.executable})
    assert out.returncode == 1
    line = json.loads(out.stdout.strip().splitlines()[-1])
    assert line["check"] == "cuda" and line["ok"] is False and "nothing was run" in line["reason"]
