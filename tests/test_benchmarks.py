"""Benchmark scripts behave as documented: one JSON object as the last line, a clear message without peers, and
every `python -m benchmarks.<family>.<name>` the docs name is a module that exists. What each script's JSON line
holds is checked on its smoke run (tests/test_benchmark_smoke.py), which runs every script once."""
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

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
