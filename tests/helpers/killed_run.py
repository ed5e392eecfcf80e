"""A run as `kill -9` leaves it, with its newest checkpoint overwritten: `invlab train` on two-moons in a process of
its own, checkpointing every few steps, killed (SIGKILL: no handler runs) once it has written three checkpoints; then
the newest checkpoint file is overwritten with bytes that are no checkpoint. What a resume must go on from is the
checkpoint before it."""
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

TRAIN = ["--model", "svgp", "--dataset", "two-moons", "--num-inducing", "8", "--steps", "100000",
         "--checkpoint-every", "5", "--checkpoint-seconds", "0", "--keep-checkpoints", "0", "--flush-every", "5",
         "--eval-every", "0", "--log-every", "5", "--quiet"]


@dataclass
class KilledRun:
    """The killed run: its id, the step of its corrupt newest checkpoint (`corrupt`, whose file is `corrupt_path`),
    the step of the checkpoint before it (`previous`) and the step the store held when it was killed (`stored`)."""

    run_id: int
    corrupt: int
    corrupt_path: Path
    previous: int
    stored: int


def _checkpoints(db: Path, run_id: int) -> list[tuple[int, str]]:
    try:
        with sqlite3.connect(db, timeout=5) as con:
            return con.execute("SELECT step, path FROM checkpoints WHERE run_id = ? ORDER BY step",
                               (run_id,)).fetchall()
    except sqlite3.OperationalError:  # the tables are not created yet
        return []


def killed_run(data_dir: Path, *extra: str, timeout: float = 180.0) -> KilledRun:
    """Train two-moons with `invlab train` into the store under `data_dir` (`INVLAB_DATA`), SIGKILL it after three
    checkpoints and overwrite its newest checkpoint file with garbage."""
    env = dict(os.environ, INVLAB_DATA=str(data_dir), INVLAB_TORCH_THREADS="1", OMP_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-m", "invlab", "train", *TRAIN, *extra], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        run_id, said = None, []
        while run_id is None:  # its first line names the run: "run N: svgp on two-moons ..."
            line = proc.stderr.readline()
            said.append(line)
            if not line:
                raise AssertionError(f"invlab train ended before it named its run: {''.join(said)}")
            match = re.match(r"run (\d+): ", line)
            run_id = int(match.group(1)) if match else None
        db = Path(data_dir) / "runs.sqlite"
        deadline = time.time() + timeout
        while len(_checkpoints(db, run_id)) < 3:
            if proc.poll() is not None or time.time() > deadline:
                raise AssertionError(f"invlab train wrote fewer than three checkpoints: {proc.stderr.read()}")
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    (previous, _), (corrupt, path) = _checkpoints(db, run_id)[-2:]
    path = Path(data_dir) / path  # stored relative to the data directory
    path.write_bytes(b"this is not a checkpoint" * 8)
    with sqlite3.connect(db, timeout=5) as con:
        stored = con.execute("SELECT step FROM runs WHERE id = ?", (run_id,)).fetchone()[0]
    return KilledRun(run_id, corrupt, path, previous, stored)
