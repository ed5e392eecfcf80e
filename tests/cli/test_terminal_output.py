"""What `invlab` writes to a terminal or a pipe: stored names cannot drive the terminal (control characters are
shown as escapes), a reader that stops early (`invlab runs | head -1`) ends the command quietly, and a warning from
inside training is one plain sentence, never Python's line with a source path."""
import os
import subprocess
import sys
from pathlib import Path

from invlab.train import RunStore
from tests.helpers.cli import run_main

EVIL_RUN = "evil\x1b[2J\x1b[H\nid 99 fake line"
EVIL_SWEEP = "sw\x1b]0;owned\x07\r\nfake\u202eeman"


def _store_with_evil_names() -> None:
    from invlab.sweeps import SweepSpec

    path = Path(os.environ["INVLAB_DATA"]) / "runs.sqlite"
    spec = SweepSpec(name=EVIL_SWEEP, vary={"data.subset": [10, 20]})
    with RunStore(path) as store:
        store.runs.create("{}", "svgp", "data\x1b[31m", name=EVIL_RUN)
        store.sweeps.create(EVIL_SWEEP, spec.to_json(), 2)


def test_names_in_listings_are_printed_escaped(capsys):
    _store_with_evil_names()
    for argv, rows in ((["runs"], 1), (["sweeps"], 1), (["compare", "1"], None)):
        code, out, err = run_main(capsys, *argv)
        assert code == 0, err
        assert not any(c in out for c in "\x1b\x07\r\u202e"), (argv, out)
        if rows is not None:
            assert len(out.splitlines()) == 1 + rows, (argv, out)  # a header and one line per row: no line faked
    _, out, _ = run_main(capsys, "runs")
    assert r"evil\x1b[2J\x1b[H\nid 99 fake line" in out and r"data\x1b[31m" in out
    _, out, _ = run_main(capsys, "sweeps")
    assert r"sw\x1b]0;owned" in out  # cut to the column's width after escaping
    _, out, _ = run_main(capsys, "compare", "1")
    assert out.splitlines()[0].startswith(r"sweep 1 (sw\x1b]0;owned\x07\r\nfake\u202eeman): 0/2 runs finished")


def _into_a_closed_pipe(*args) -> subprocess.CompletedProcess:
    """`invlab ARGS` whose reader has gone before it writes, as `invlab runs | head -0` would leave it."""
    proc = subprocess.Popen([sys.executable, "-m", "invlab", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ), text=True)
    proc.stdout.close()  # the reader stops before the command has written anything
    err = proc.stderr.read()
    proc.wait(timeout=120)
    return subprocess.CompletedProcess(args, proc.returncode, "", err)


def test_a_reader_that_stops_early_ends_the_listing_quietly():
    _store_with_evil_names()
    done = _into_a_closed_pipe("runs")
    assert done.stderr == "", done.stderr  # was: a BrokenPipeError traceback
    assert done.returncode == 141, done.returncode  # 128 + SIGPIPE, as the shell reports a Unix tool that it ended


class _GonePipe:
    """Standard output whose reader has gone: every write fails as a closed pipe does."""

    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        pass


def test_every_command_ends_quietly_when_its_reader_has_gone(capsys, monkeypatch):
    from invlab.cli import main

    _store_with_evil_names()
    for argv in (["sweeps", "--json"], ["compare", "1"], ["plugins"],
                 ["sweep", "--dry-run", "--vary", "data.subset=1,2"]):
        with monkeypatch.context() as m:
            m.setattr(sys, "stdout", _GonePipe())
            assert main(argv) == 141, argv
        assert "Traceback" not in capsys.readouterr().err


def test_a_float32_resume_says_an_escalated_jitter_in_one_plain_sentence(capsys):
    """Two-moons in float32: between steps 20 and 30, K_uu needs more jitter than the default, which the engine
    escalates and reports. The resume runs as a real process: Python's own printing of a warning is what a user saw."""
    code, _, err = run_main(capsys, "train", "--dataset", "two-moons", "--dtype", "float32", "--steps", "20",
                            "--eval-every", "0", "--quiet")
    assert code == 0, err
    done = subprocess.run([sys.executable, "-m", "invlab", "train", "--resume", "1", "--steps", "30", "--quiet"],
                          capture_output=True, text=True, env=dict(os.environ), timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr and ".py:" not in done.stderr, done.stderr  # was: linalg.py:81: RuntimeWarning
    notes = [line for line in done.stderr.splitlines() if "not positive definite" in line]
    assert len(notes) == 1, done.stderr
    assert notes[0].startswith("note: K_uu was not positive definite with jitter 1e-06 in float32, so 1e-05 was used "
                               "and the run goes on"), notes[0]
    assert "--jitter" in notes[0] and "--dtype float64" in notes[0], notes[0]
