"""A served dashboard does no work for a page that never connects: plain `GET /app` requests (a link preview, a
crawler, a health check) leave the server's thread count and open run-store files where they were.

Measured on the real server process (`invlab serve`) through /proc/<pid>/task and /proc/<pid>/fd.
"""
import os
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from invlab.dashboard.serving.process import serve_dashboard_process

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# 15 plain requests (about 1 s of server CPU each; a thread or store file per page would show as 15 more);
# INVLAB_SERVER_GETS=N asks for another number.
GETS = int(os.environ.get("INVLAB_SERVER_GETS", "15"))


def threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def store_files(pid: int, data: Path) -> int:
    """Open file descriptors on the run store (the database, its WAL and shared-memory files)."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(data)) and "runs.sqlite" in target:
            count += 1
    return count


def get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=60) as response:
        response.read()
        return response.status


def test_pages_that_never_connect_start_nothing_and_leave_nothing(tmp_path):
    data = tmp_path / "served" / "data"
    with serve_dashboard_process(tmp_path / "served") as (url, proc):
        assert get(url) == 200  # the first page imports and warms everything up
        time.sleep(1.0)
        threads_before, files_before = threads(proc.pid), store_files(proc.pid, data)
        for _ in range(GETS):
            assert get(url) == 200
        threads_after, files_after = threads(proc.pid), store_files(proc.pid, data)
        print(f"\n{GETS} GET /app: threads {threads_before} -> {threads_after}, run-store files {files_before} -> "
              f"{files_after}")
        # Nothing was started for pages that never connected, not even for the few seconds before Bokeh expires
        # an unconnected session.
        assert threads_after <= threads_before + 1, (threads_before, threads_after)
        assert files_after <= files_before, (files_before, files_after)
