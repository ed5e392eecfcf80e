"""A checkpoint folder that stops taking writes in the middle of `invlab train`: the run stops with one sentence
naming the folder and what to do (never a traceback), stays resumable from the last checkpoint written, and
`--resume` goes on from there.

Tests run as root, which ignores a folder's permissions, so the write is made to fail in two other ways: torch's
own error for a file it may not open (as a read-only folder gives), and the run's checkpoint folder moved aside
with a plain file put in its place (torch then fails for real)."""
import json
import os
import shutil
from pathlib import Path

import pytest
import torch

from invlab.train import RunStore
from tests.helpers.cli import run_main

RUN = ["train", "--subset", "60", "--num-inducing", "10", "--steps", "20", "--checkpoint-every", "4",
       "--eval-every", "0", "--log-every", "1", "--quiet"]
DENIED = ("[enforce fail at inline_container.cc:747] . open file failed because of errno 13 on fopen: Permission "
          "denied, file path: {path}")


def _store() -> RunStore:
    return RunStore(Path(os.environ["INVLAB_DATA"]) / "runs.sqlite")


def _folder() -> Path:
    return Path(os.environ["INVLAB_DATA"]) / "checkpoints" / "run_1"


@pytest.mark.parametrize("how", ["permission-denied", "folder-replaced-by-a-file"])
def test_a_checkpoint_that_cannot_be_written_stops_the_run_resumably(how, capsys, monkeypatch):
    real_save, calls = torch.save, []
    folder = _folder()
    aside = folder.with_name("run_1.aside")

    def save(obj, f, *args, **kwargs):
        calls.append(f)
        if len(calls) == 3:  # the checkpoint at step 12; those at steps 4 and 8 were written
            if how == "permission-denied":
                raise RuntimeError(DENIED.format(path=f))
            folder.rename(aside)
            folder.write_text("not a folder")
        return real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", save)
    code, out, err = run_main(capsys, *RUN)
    monkeypatch.setattr(torch, "save", real_save)
    assert "Traceback" not in err + out
    assert code == 1, err
    line = err.strip().splitlines()[-1]
    assert line.startswith("invlab train: run 1 stopped at step 12: its checkpoint could not be written to "
                           f"{folder} ("), line
    assert ("Permission denied" if how == "permission-denied" else "not a folder") in line, line
    assert line.endswith("then continue from its latest checkpoint (step 8) with: invlab train --resume 1"), line
    with _store() as store:
        record = store.runs.get(1)
        assert record.status == "interrupted" and record.step == 12
        assert "could not be written" in record.message and "invlab train --resume 1" in record.message
        assert store.checkpoints.list(1)[0][0] == 8  # the newest written

    if how == "folder-replaced-by-a-file":  # what the user does: give the folder back
        folder.unlink()
        aside.rename(folder)
    code, out, err = run_main(capsys, "train", "--resume", "1", "--quiet", "--json")
    assert code == 0, err
    assert "resuming run 1 at step 8 of 20" in err
    assert json.loads(out.strip().splitlines()[-1])["step"] == 20
    with _store() as store:
        assert store.runs.get(1).status == "finished"
        stored = store.metrics.read(1)
        steps = stored["loss"][0] if "loss" in stored else stored["elbo"][0]
    assert list(steps) == list(range(1, 21))  # the steps after the checkpoint at 8 were trained once more, kept once
    shutil.rmtree(folder, ignore_errors=True)
