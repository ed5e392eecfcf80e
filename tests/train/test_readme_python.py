"""The README's "Using the engine from Python" section, run as written: the names at the top of `invlab` import on
first use, and its Trainer snippet trains the dashboard's default family on digits and prints a snapshot every 100
steps."""
import subprocess
import sys

from tests.helpers.readme import ROOT, run_python_blocks, section_blocks

TITLE = "Using the engine from Python"


def test_the_top_level_names_import_on_first_use_and_are_the_sub_packages_own():
    code = ("import sys, invlab\n"
            "print(sorted(m for m in ('torch', 'panel', 'invlab.train', 'invlab.dashboard') if m in sys.modules))\n"
            "from invlab import Explorer, watch, load, RunConfig, Trainer, RunStore\n"
            "import invlab.dashboard, invlab.data, invlab.train\n"
            "print(Explorer is invlab.dashboard.Explorer, watch is invlab.train.watch, load is invlab.data.load,\n"
            "      RunConfig is invlab.train.RunConfig, Trainer is invlab.train.Trainer,\n"
            "      RunStore is invlab.train.RunStore)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded, same = done.stdout.strip().splitlines()
    assert loaded == "[]"  # `import invlab` alone: no torch, no dashboard
    assert same == "True True True True True True"


def test_the_trainer_snippet_runs_as_written(tmp_path, monkeypatch, capsys):
    blocks = section_blocks(TITLE)
    assert [kind for kind, _ in blocks] == ["python"]
    assert "from invlab import RunConfig, Trainer" in blocks[0][1]
    namespace = run_python_blocks(blocks, tmp_path, monkeypatch)
    printed = [line.split() for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert [int(row[0]) for row in printed] == [100, 200, 300, 400, 500]
    assert namespace["trainer"].step_count == 500
    elbos = [float(row[1]) for row in printed]
    assert elbos[-1] > elbos[0]  # it learns
