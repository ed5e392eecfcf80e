"""The browser tests' shared Chromium (tests/helpers/chromium.py): one browser serves every test of a process, each
test in a fresh context, and between two calls on the browser the thread has no running event loop, so a test that
runs asyncio (a server started in the test, `asyncio.run`) works after a browser test in the same process. A page
still training when its test ends is paused before its context closes."""
import asyncio

from pagekit import browser_page, poll
from tests.helpers.chromium import pause_training, per_module, shared_browser


def test_one_browser_for_the_process_a_fresh_context_each_time_and_asyncio_between_calls():
    with browser_page(800, 600) as (page, errors):
        page.set_content("<p id=said>one</p>")
        first, first_context = shared_browser(), page.context
        assert page.inner_text("#said") == "one"
        if not per_module():
            assert asyncio._get_running_loop() is None  # between calls: nothing marks the thread's loop as running
        assert asyncio.run(asyncio.sleep(0, result=7)) == 7  # asyncio runs while the page is open
        page.set_content("<p id=said>two</p>")
        assert page.inner_text("#said") == "two"  # and the browser still answers after it
    with browser_page(640, 480) as (page, errors):
        assert shared_browser() is first  # the same Chromium ...
        assert page.viewport_size == {"width": 640, "height": 480}  # ... in a context of this test's own
        assert page.context is not first_context and first_context not in first.contexts  # the first one was closed
        assert not errors, errors


def state_of(page) -> str:
    return page.locator(".invlab-status [data-field=state]").first.inner_text().strip()


def test_a_page_still_training_when_its_test_ends_is_paused_and_no_other_page_is_touched(served_app):
    with browser_page() as (page, errors):
        page.set_content("<p>not the dashboard</p>")
        assert pause_training(page) is False  # a page without the status line is left as it is
        page.goto(served_app + "?train.steps=100000")
        assert pause_training(page) is False  # not training yet: nothing pressed
        page.get_by_role("button", name="▶ Start").click(timeout=90_000)
        poll(lambda: state_of(page) == "running", timeout=120)
        assert pause_training(page) is True
        poll(lambda: state_of(page) == "paused", timeout=60)  # the page says so: the training thread has stopped
        assert pause_training(page) is False
        assert not errors, errors
