"""README's "Your own data" section, run as written: every Python snippet in one namespace, in order, in a scratch
folder, then every command line as a real process (`invlab` is `python -m invlab`), with a small folder of class
folders of images standing in for the user's `photos`."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np

from tests.helpers.readme import run_python_blocks, section_blocks

ROOT = Path(__file__).resolve().parents[2]



def photos(folder: Path):
    from PIL import Image

    for c, name in enumerate(["beach", "forest"]):
        (folder / name).mkdir(parents=True)
        for i in range(6):
            Image.new("RGB", (20, 18), (200 * (1 - c), 100 + 10 * i, 200 * c)).save(folder / name / f"{i}.jpg")


def test_every_snippet_of_your_own_data_runs(tmp_path, monkeypatch, capsys):
    blocks = section_blocks("Your own data")
    assert [kind for kind, _ in blocks].count("python") >= 3 and any(kind == "bash" for kind, _ in blocks)
    namespace = run_python_blocks(blocks, tmp_path, monkeypatch)
    explorer = namespace["explorer"]
    try:
        assert explorer.settings.data.dataset.startswith("python:dataframe")
        assert explorer.settings.data.load().task == "regression"  # price: the DataFrame's column, as given
    finally:
        explorer.close()
    printed = capsys.readouterr().out
    assert "house.csv" in printed and "regression" in printed
    assert namespace["data"].class_names == ["cheap", "dear"]
    prices = namespace["prediction"].y_mean[:, 0].numpy()
    assert np.all(np.abs(prices - namespace["y"][:3]) < 10)  # in the price's own units
    photos(tmp_path / "photos")
    env = dict(os.environ, PYTHONPATH=str(ROOT), INVLAB_DATA=str(tmp_path / "data"))
    for kind, code in blocks:
        if kind != "bash":
            continue
        for line in code.splitlines():
            command = line.split("#")[0].strip()
            if not command:
                continue
            argv = shlex.split(command)
            assert argv[0] == "invlab"
            done = subprocess.run([sys.executable, "-m", "invlab", *argv[1:], *(["--quiet"] if argv[1] == "train"
                                                                              else [])],
                                  capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
            assert done.returncode == 0, f"{command}: {done.stderr}"
            assert "Traceback" not in done.stderr
