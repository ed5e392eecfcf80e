"""Helpers for the real-browser tests: serve the dashboard, open a Chromium page, poll, read the page's Bokeh data."""
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("INVLAB_CHROMIUM", "/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
HAVE_CHROMIUM = os.path.exists(CHROMIUM) or shutil.which("chromium") is not None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_dashboard(directory: Path, extra_env: dict | None = None, args=()):
    """`invlab serve` on a free localhost port with its own data directory; yields the page's URL."""
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = dict(os.environ, INVLAB_DATA=str(directory / "data"), INVLAB_TORCH_THREADS="1", **(extra_env or {}))
    log_path = directory / "server.log"
    log = open(log_path, "w")
    proc = subprocess.Popen([sys.executable, "-m", "engine", "serve", "--port", str(port), *args], cwd=ROOT, env=env,
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/app"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(url, timeout=5).status == 200:
                break
        except OSError:
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail("the dashboard did not start: " + log_path.read_text()[-2000:])
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def poll(fn, timeout=90.0, interval=0.2):
    deadline = time.time() + timeout
    value = None
    while time.time() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out; last value {value!r}")


@contextlib.contextmanager
def browser_page(width: int = 1400, height: int = 1000):
    """A page in headless Chromium and the list that collects its JavaScript errors."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium"),
                                    args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            errors = []
            page.on("pageerror", lambda err: errors.append(str(err)))
            yield page, errors
        finally:
            browser.close()


# The number of points in the page's data source holding column `name` (the largest such source).
def column_length(page, name: str) -> int:
    return page.evaluate("""(name) => {
      let n = 0;
      for (const doc of Bokeh.documents)
        for (const m of doc._all_models.values())
          if (m.data && m.data[name]) n = Math.max(n, m.data[name].length);
      return n;
    }""", name)


# Every text (titles, axis labels, markup) in the page's Bokeh documents.
def page_texts(page) -> list[str]:
    return page.evaluate("""() => {
      const out = [];
      for (const doc of Bokeh.documents)
        for (const m of doc._all_models.values()) {
          if (typeof m.text === "string") out.push(m.text);
          if (typeof m.axis_label === "string") out.push(m.axis_label);
        }
      return out;
    }""")
