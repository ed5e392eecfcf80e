"""A run killed with `kill -9` whose newest checkpoint is garbage, opened on the page from its link (`?run=ID`), in a
real Chromium: it opens at the checkpoint before the garbage one, the page names the file it skipped, and ▶ Start
continues that same run (the link keeps its id) past the step it opened at, as `invlab train --resume` does."""
import sqlite3

from pagekit import browser_page, poll
from tests.helpers.killed_run import killed_run


def field(page, name: str) -> str:
    return page.locator(f".invlab-status [data-field={name}]").first.inner_text()


def stored_step(db, run_id: int) -> int:
    with sqlite3.connect(db, timeout=10) as con:
        return con.execute("SELECT step FROM runs WHERE id = ?", (run_id,)).fetchone()[0]


def test_a_killed_run_with_a_corrupt_checkpoint_opens_at_the_one_before_and_start_continues_it(served_home):
    url, folder = served_home
    killed = killed_run(folder / "data")  # the store the served page reads (its INVLAB_DATA)
    with browser_page(1400, 1000) as (page, errors):
        page.goto(url + f"?run={killed.run_id}")
        poll(lambda: f"opened stored run {killed.run_id}" in field(page, "message")
             or "cannot be read" in field(page, "message"), timeout=120)
        message = field(page, "message")
        assert f"opened stored run {killed.run_id} at step {killed.previous}" in message, message
        assert killed.corrupt_path.name in message, message  # the skipped file is named
        assert int(field(page, "step")) == killed.previous
        page.get_by_role("button", name="▶ Start").click()
        db = folder / "data" / "runs.sqlite"
        poll(lambda: field(page, "state") == "running" and int(field(page, "step")) > killed.previous, timeout=120)
        poll(lambda: stored_step(db, killed.run_id) > killed.previous, timeout=60)  # the same run trains on
        poll(lambda: f"run={killed.run_id}" in page.url, timeout=30)  # and the link still names it
        page.get_by_role("button", name="❚❚ Pause").click()
        poll(lambda: field(page, "state") == "paused", timeout=60)
        assert not errors, errors
