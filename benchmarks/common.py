"""What every benchmark script shares: its `--quick`, `--smoke` and `--threads` flags, a timed training run that logs
its progress to stderr, and its ending, one JSON object as the last line of output with the machine it ran on (cores,
torch threads, load average: what says how far a timing can be trusted on a shared machine).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence


def log(message: str) -> None:
    """Progress goes to stderr, so the last line of stdout stays the result."""
    print(message, file=sys.stderr, flush=True)


# torch CPU threads unless a script or --threads says otherwise: 1 on a shared machine, or $INVLAB_THREADS
THREADS = int(os.environ.get("INVLAB_THREADS", "1"))


def arguments(doc: str, *, quick: str | None = None, threads: int | None | bool = THREADS) -> argparse.ArgumentParser:
    """A parser described by the first paragraph of the script's docstring, with `--quick` (when `quick` says what
    it shrinks) and `--smoke` (the smallest run: it only shows that the script starts and ends, in seconds; its
    figures mean nothing; implies `--quick`), and `--threads`, torch's CPU threads: `THREADS` by default, None for
    torch's choice, False for no such flag (a script that runs no torch itself)."""
    p = argparse.ArgumentParser(description=doc.strip().split("\n\n")[0])
    if quick is not None:
        p.add_argument("--quick", action="store_true", help=quick)
        p.add_argument("--smoke", action="store_true", help="the smallest run, seconds long: shows the script starts "
                                                            "and ends (its figures mean nothing); implies --quick")
    if threads is not False:
        p.add_argument("--threads", type=int, default=threads, help="torch CPU threads (default: %(default)s)")
    return p


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the flags (`--smoke` sets `quick` too) and give torch the `--threads` asked for."""
    args = parser.parse_args(argv)
    if getattr(args, "smoke", False):
        args.quick = True
    if getattr(args, "threads", None):
        import torch

        torch.set_num_threads(args.threads)
    return args


def timed_run(trainer, *, label: str = "", steps: int | None = None, every: int | None = None,
              describe: Callable | None = None) -> float:
    """Run a `Trainer` (`steps` more steps, by default to its configured total) and return the wall-clock seconds;
    with `describe(snapshot) -> str`, log one line per snapshot (every `every` steps)."""
    start = time.perf_counter()
    for snap in trainer.run(steps=steps, every=every):
        if describe is not None:
            log(f"[{label}] step {snap.step}: {describe(snap)} ({time.perf_counter() - start:.0f} s)")
    return time.perf_counter() - start


def machine(load_before: float | None = None) -> dict:
    """Cores, torch threads and the 1-minute load average (a pair, before and after, when `load_before` is given)."""
    load = os.getloadavg()[0]
    out = {"cpu_count": os.cpu_count(), "load_average_1min": load if load_before is None else [load_before, load]}
    torch = sys.modules.get("torch")  # a script that never imported torch (a browser client) does not pay for it
    if torch is not None:
        out["torch_threads"] = torch.get_num_threads()
    return out


def emit(result: dict, *, load_before: float | None = None) -> dict:
    """Print `result` as one JSON object, the last line of output, with the machine's figures added (the result's
    own keys win); warn on stderr when other processes were using more than the machine's cores."""
    out = {**result, **{k: v for k, v in machine(load_before).items() if k not in result}}
    load = out.get("load_average_1min")
    peak = max(load) if isinstance(load, list) else load
    cores = os.cpu_count() or 1
    if isinstance(peak, (int, float)) and peak > cores:
        log(f"warning: load average {peak:.1f} on {cores} cores: other processes skewed the timings "
            "(try a quieter moment, or --threads 1)")
    print(json.dumps(out), flush=True)
    return out
