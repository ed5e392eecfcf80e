"""Closing tabs is quiet: ten pages opened (some training, one on the prior page) and closed leave no traceback
in the server's log, and the server frees every page's training thread."""
import os
import sys

import pytest

from invlab.dashboard.serving.process import serve_dashboard_process
from pagekit import poll
from tests.helpers.chromium import browser_context

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

SMALL = "?data.subset=200&data.test_subset=100&model.num_inducing=10&train.steps=1000000"
TABS = 10


def threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def thread_names(pid: int) -> list[str]:
    """The kernel's names of the process's threads (Python names its threads' comm since 3.x on Linux)."""
    names = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            pass
    return sorted(names)


def test_ten_tabs_opened_and_closed_leave_no_traceback_in_the_server_log(tmp_path):
    with serve_dashboard_process(tmp_path, timeout=600) as (url, proc), \
            browser_context(viewport={"width": 1200, "height": 900}) as context:
        before = threads(proc.pid)
        names_before = thread_names(proc.pid)
        pages = []
        for k in range(TABS):
            page = context.new_page()
            page.goto(url + SMALL, timeout=300_000)
            page.get_by_role("button", name="▶ Start").wait_for(timeout=300_000)
            if k % 3 == 0:  # a few train (their curves stream until the tab goes)
                page.get_by_role("button", name="▶ Start").click(timeout=120_000)
            elif k == 1:  # one looks at the prior page, whose redraws run off the server's thread
                page.locator(".bk-tab", has_text="Deep kernel prior").first.click(timeout=120_000)
            pages.append(page)
        poll(lambda: "running" in pages[0].locator(".invlab-status [data-field=state]").first.inner_text())
        for page in pages:
            page.close()
        # Bokeh ends a session within --unused-session-lifetime of its tab closing; then its thread goes
        try:
            poll(lambda: threads(proc.pid) <= before, timeout=90, interval=0.5)
        except AssertionError:
            raise AssertionError(f"threads before: {names_before}; after: {thread_names(proc.pid)}") from None
    log = (tmp_path / "server.log").read_text()
    assert "Traceback" not in log and "exception was never retrieved" not in log, log[-4000:]
    assert "WebSocketClosedError" not in log and "StreamClosedError" not in log, log[-4000:]
