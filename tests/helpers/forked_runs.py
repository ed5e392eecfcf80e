"""Run many `python -m <module> <args>` commands from one process that has already imported torch, the engine and the
dashboard: each command is a fork of that process running its module as `__main__` (as `python -m` does), with
its own stdout and stderr files and exit status, so every run skips the seconds of start-up a fresh interpreter
spends importing them (about 2 CPU-seconds a run on a 2-core machine).

Used by tests/test_benchmark_smoke.py. As a script::

    python tests/helpers/forked_runs.py OUTDIR WIDTH TIMEOUT_S ARG... -- MODULE...

runs `python -m MODULE ARG...` for every MODULE, WIDTH at a time; each run writes OUTDIR/MODULE.out and
OUTDIR/MODULE.err, and the script prints `MODULE STATUS` on its stdout as each run ends (STATUS -1: killed after
TIMEOUT_S seconds, with everything it started).

Nothing but imports happens before the forks: no torch operation (whose OpenMP threads a fork would not carry) and
no event loop, thread or subprocess.
"""
from __future__ import annotations

import os
import signal
import sys
import time


def preload() -> None:
    """Import what the benchmarks import, once, in the process every run is forked from."""
    import numpy  # noqa: F401
    import torch  # noqa: F401

    import invlab  # noqa: F401
    import invlab.models  # noqa: F401
    import invlab.train  # noqa: F401

    try:  # the page's benchmarks (the dashboard extra)
        import playwright.sync_api  # noqa: F401

        import invlab.dashboard  # noqa: F401
    except ImportError:
        pass


def run_child(module: str, args: list[str], outdir: str) -> int:
    """In the forked child: `module` as `__main__` with `args`, its output to files; the exit status."""
    import atexit
    import runpy
    import traceback

    os.setpgid(0, 0)  # a group of its own: a timeout ends the run and whatever it started
    for fd, suffix in ((1, "out"), (2, "err")):
        f = os.open(os.path.join(outdir, f"{module}.{suffix}"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(f, fd)
        os.close(f)
    sys.argv = [module, *args]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as err:  # as the interpreter reports `sys.exit(x)`
        if err.code is None or isinstance(err.code, int):
            code = err.code or 0
        else:
            print(err.code, file=sys.stderr)
            code = 1
    except BaseException:  # noqa: BLE001 - the traceback `python -m` would print
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()  # what the interpreter runs at exit
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return code


def main(argv: list[str]) -> None:
    outdir, width, timeout = argv[0], int(argv[1]), float(argv[2])
    split = argv.index("--")
    args, modules = argv[3:split], argv[split + 1:]
    preload()
    pending, running = list(modules), {}  # pid -> (module, deadline)
    while pending or running:
        while pending and len(running) < width:
            module = pending.pop(0)
            sys.stdout.flush()
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    code = run_child(module, args, outdir)
                finally:
                    os._exit(code)
            running[pid] = (module, time.monotonic() + timeout)
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            for pid, (module, deadline) in list(running.items()):
                if time.monotonic() > deadline:
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    os.waitpid(pid, 0)
                    del running[pid]
                    print(module, -1, flush=True)
            time.sleep(0.05)
            continue
        module, _ = running.pop(pid)
        print(module, os.waitstatus_to_exitcode(status), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
