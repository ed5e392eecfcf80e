"""Serving the dashboard from a script: `invlab serve` on a free localhost port, and where Chromium is.

Used by the README screenshot (`invlab.dashboard.screenshot`), the page benchmarks and the real-browser tests, so
each drives the page exactly as `make run` serves it.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout: dashboard/serving/process.py -> .
CHROMIUM = "/usr/bin/chromium"  # Debian's package `chromium`; INVLAB_CHROMIUM names another build (read at each use)
# What headless Chromium needs on a machine with no display and a closed network.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


def chromium_path() -> str | None:
    """The Chromium executable to drive: `INVLAB_CHROMIUM` if set, else Debian's /usr/bin/chromium (or a `chromium`
    on the PATH); None when there is none."""
    path = os.environ.get("INVLAB_CHROMIUM") or CHROMIUM
    return path if os.path.exists(path) else shutil.which("chromium")


def free_port() -> int:
    """A free TCP port on 127.0.0.1, chosen by the operating system."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_server(args, *, cwd, env, log_path: Path, probe_url: str, what: str, timeout: float):
    """Start `args` with its output in `log_path`, wait until `probe_url` answers 200, yield, then stop it.
    Raises RuntimeError (with the end of the log) if it exits or does not answer within `timeout` seconds."""
    with open(log_path, "w") as log:
        proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + timeout
            while True:
                try:
                    # a page can take tens of seconds to render on a loaded machine; a probe given up early would
                    # leave its session rendering and ask for another, so the server never catches up
                    if urllib.request.urlopen(probe_url, timeout=max(5.0, deadline - time.time())).status == 200:
                        break
                except OSError:
                    if proc.poll() is not None or time.time() > deadline:
                        raise RuntimeError(f"{what} did not start: " + log_path.read_text()[-3000:]) from None
                    time.sleep(0.3)
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


@contextlib.contextmanager
def serve_dashboard(directory: Path, *, args=(), extra_env: dict | None = None, root: Path = ROOT,
                    timeout: float = 120.0):
    """`invlab serve ARGS` from `root` on a free port, one torch thread (`extra_env` may say otherwise), with its own
    data directory under `directory`; yields the page's URL and stops the server afterwards. Raises RuntimeError
    (with the end of the server's log) if the page does not answer within `timeout` seconds."""
    with serve_dashboard_process(directory, args=args, extra_env=extra_env, root=root, timeout=timeout) as (url, _):
        yield url


@contextlib.contextmanager
def serve_dashboard_process(directory: Path, *, args=(), extra_env: dict | None = None, root: Path = ROOT,
                            timeout: float = 120.0):
    """`serve_dashboard` yielding (the page's URL, the server's process): `invlab serve` becomes the Panel server
    (same process id), so its threads and open files can be inspected under /proc."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = dict(os.environ, INVLAB_DATA=str(directory / "data"), INVLAB_TORCH_THREADS="1")
    env.update(extra_env or {})  # a None value removes a variable (e.g. the thread override: the server's defaults)
    env = {name: value for name, value in env.items() if value is not None}
    if root != ROOT:
        env["PYTHONPATH"] = str(root)
    url = f"http://127.0.0.1:{port}/app"
    with running_server([sys.executable, "-m", "invlab", "serve", "--port", str(port), *args], cwd=root, env=env,
                        log_path=directory / "server.log", probe_url=url, what="the dashboard",
                        timeout=timeout) as proc:
        yield url, proc
