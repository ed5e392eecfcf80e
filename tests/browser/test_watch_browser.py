"""A loop you wrote, watched live in a real Chromium: a hand-written Adam loop on the default SVGP writes its run with
`engine.train.watch` (another process), the page opens it by link (as Runs → Open run does), and its ELBO curve
grows in the browser while the loop writes; the page never continues it."""
import os
import subprocess
import sys

import pytest

from pagekit import browser_page, column_length, page_texts, poll, serve_dashboard
from tests.dashboard.test_watch_follow import LOOP, ROOT


@pytest.fixture
def watched(tmp_path):
    """(page url, the user's loop process, its run id) once the loop has written its first 20 steps."""
    with serve_dashboard(tmp_path / "served") as url:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        loop = subprocess.Popen([sys.executable, "-c", LOOP, str(tmp_path / "served" / "data")],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        try:
            run_id, step = map(int, loop.stdout.readline().split())
            assert step == 20
            yield url, loop, run_id
        finally:
            if loop.poll() is None:
                loop.kill()
            loop.wait()


def test_the_page_draws_a_watched_loop_while_it_writes(watched):
    url, loop, run_id = watched
    with browser_page() as (page, errors):
        page.goto(url + f"?run={run_id}")
        poll(lambda: column_length(page, "elbo") == 20)
        poll(lambda: any("still being trained by another process" in text for text in page_texts(page)))
        loop.stdin.write("\n")
        loop.stdin.flush()
        assert loop.stdout.readline().split() == [str(run_id), "40"]
        poll(lambda: column_length(page, "elbo") == 40)  # the curve grew in the browser
        loop.stdin.write("\n")
        loop.stdin.flush()
        assert loop.wait(timeout=60) == 0
        poll(lambda: any("is now finished at step 40" in text for text in page_texts(page)))
        assert column_length(page, "elbo") == 40
        assert not errors, errors
