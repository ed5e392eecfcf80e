"""README's "Which invariances does my data have?" section, run as written: its command line as a real process
(`invlab` is `python -m invlab`) in a scratch folder, then its Python snippet."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from tests.helpers.readme import run_python_blocks, section_blocks

ROOT = Path(__file__).resolve().parents[2]
TITLE = "Which invariances does my data have?"



def test_the_discover_section_runs_as_written(tmp_path, monkeypatch, capsys):
    blocks = section_blocks(TITLE)
    commands = [line for kind, code in blocks if kind == "bash" for line in code.splitlines() if line.strip()]
    assert len(commands) == 1 and commands[0].startswith("invlab discover ")
    argv = shlex.split(commands[0])
    env = dict(os.environ, PYTHONPATH=str(ROOT), INVLAB_DATA=str(tmp_path / "data"))
    done = subprocess.run([sys.executable, "-m", "invlab", *argv[1:]], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    ranking = json.loads(done.stdout.strip().splitlines()[-1])["ranking"]
    assert ranking[0]["candidate"] == "rotation" and ranking[0]["log_bf"] > 0
    assert abs(ranking[0]["learned"]["rotation"]["final"] - 90) < 20
    assert "Which invariances does digits have?" in (tmp_path / "discover.html").read_text()

    namespace = run_python_blocks(blocks, tmp_path, monkeypatch)
    assert namespace["report"].verdict.startswith("invariant under permutations")
    assert "permutations 1 finished" in capsys.readouterr().out
