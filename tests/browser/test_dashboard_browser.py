"""The dashboard in a real headless Chromium (Debian's headless shell or /usr/bin/chromium, driven by Playwright).

Serves `dashboard/app.py` with `panel serve` on a free localhost port, presses Start, waits for the ELBO
curve's data source in the page to fill, changes the learning rate live, pauses, and keeps a screenshot.
"""
import json
import re
import time

from pagekit import browser_page, column_length, page_texts, poll


def elbo_points(page) -> int:
    return column_length(page, "elbo")


def test_start_learning_rate_pause_in_a_real_browser(served_app, tmp_path):
    with browser_page() as (page, errors):
        # a shared link: the configuration comes from the query string
        page.goto(served_app + "?train.learning_rate=0.02&model.num_inducing=40")
        status = page.locator(".invlab-status").first
        poll(lambda: "lr 0.02" in status.inner_text())
        page.get_by_role("button", name="▶ Start").click(timeout=90_000)

        poll(lambda: elbo_points(page) >= 5)
        assert "running" in status.inner_text()
        page.locator(".bk-tab", has_text="Model").first.click()
        assert page.locator(".bk-input-group", has_text="Num inducing").locator("input").first.input_value() == "40"

        page.locator(".bk-tab", has_text="Optimisation").first.click()
        lr = page.locator(".bk-input-group", has_text="Learning rate").locator("input").first
        lr.fill("0.005")
        lr.press("Enter")
        poll(lambda: "lr 0.005" in status.inner_text())

        page.get_by_role("button", name="❚❚ Pause").click()
        poll(lambda: "paused" in status.inner_text())
        stopped_at = page.locator("[data-field=step]").first.inner_text()
        time.sleep(2.0)
        assert page.locator("[data-field=step]").first.inner_text() == stopped_at
        assert int(stopped_at) >= 5

        shot = tmp_path / "dashboard.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        assert not errors, errors


def test_prior_explorer_page_in_a_real_browser(served_app):
    with browser_page() as (page, errors):
        page.goto(served_app)
        page.locator(".bk-tab", has_text="Deep kernel prior").first.click(timeout=90_000)
        titles = lambda: " | ".join(page_texts(page))  # noqa: E731
        poll(lambda: "Inverse Wishart IW(δI, δ + N + 1), δ = 20" in titles()
             and "2-layer deep IW, δ = 20: top-layer sample 1" in titles())

        # switch the process: the function panels are redrawn from a deep Wishart process
        page.locator(".bk-input-group", has_text="Process").locator("select").first.select_option("wishart")
        poll(lambda: "2-layer deep Wishart, N = 5: top-layer sample 1" in titles())
        assert not errors, errors


def test_invariance_range_in_a_real_browser(served_app):
    """A family with invariance ranges: its range slider, moved with the keyboard, sets the running model's range,
    and the page says so. The message that brings the page's first notice restyles nothing: a text pane's first
    change used to resend its stylesheets, which made the server walk the whole document and the browser restyle
    the pane (the first notice took five times as long as the next)."""
    query = ("?model=invariant&model.augmentation=rotation&model.num_inducing=10&model.num_samples=4"
             "&data.subset=150&data.test_subset=60&train.batch_size=32&train.steps=100000")
    with browser_page() as (page, errors):
        messages = []

        def watch(ws):
            ws.on("framereceived", lambda payload: messages.append(json.loads(payload))
                  if isinstance(payload, str) and '"events"' in payload else None)

        page.on("websocket", watch)
        page.goto(served_app + query)
        status = page.locator(".invlab-status").first
        page.get_by_role("button", name="▶ Start").click(timeout=90_000)
        poll(lambda: "running" in status.inner_text() and elbo_points(page) >= 3)
        page.locator(".bk-tab", has_text="Invariance").first.click()
        handle = page.locator(".noUi-handle:visible").first  # the controls column comes first: the range's slider
        poll(lambda: page.get_by_text("rotation half-width (°)").count() > 0)
        messages.clear()
        handle.press("End")  # the slider's maximum, released: what a drag to the end does
        notice = page.get_by_text(re.compile(r"rotation half-width set to 1[78]\d")).first
        poll(lambda: notice.count() > 0 and notice.is_visible())
        events = [event for message in messages for event in message["events"]]
        assert any("set to 1" in str(e.get("new")) for e in events), "the notice came in no message"
        restyled = [e["model"]["id"] for e in events if e.get("attr") == "stylesheets"]
        assert not restyled, f"the first notice resent the stylesheets of {len(restyled)} models"
        assert not errors, errors


def test_a_training_page_gets_one_message_a_tick_and_its_busy_indicator_stays_still(served_app):
    """While a page trains, each tick of its updates (status, curves, views) reaches it as one message, and the
    header's busy indicator, which says the server is handling the person's input, does not flash at every tick:
    each message is handled and drawn by the browser on the cores training uses."""
    with browser_page() as (page, errors):
        messages = []

        def watch(ws):
            ws.on("framereceived", lambda payload: messages.append(json.loads(payload))
                  if isinstance(payload, str) and '"events"' in payload else None)

        page.on("websocket", watch)
        page.goto(served_app + "?train.steps=100000")
        page.get_by_role("button", name="▶ Start").click(timeout=90_000)
        poll(lambda: elbo_points(page) >= 5)
        page.wait_for_timeout(1000)
        messages.clear()
        started = time.monotonic()

        def events(received):
            return [event for message in received for event in message["events"]]

        page.wait_for_timeout(4000)  # four ticks of a second (fewer on a busy machine: the tick's period stretches)
        poll(lambda: sum(e.get("kind") == "ColumnsStreamed" for e in events(list(messages))) >= 2, timeout=30)
        seconds, received = time.monotonic() - started, list(messages)  # the curves grew; what came until then
        busy = [e for e in events(received)
                if e.get("attr") == "css_classes" and "pn-loading" in " ".join(e.get("new") or [])]
        assert not busy, f"the busy indicator turned on {len(busy)} times in {seconds:.0f} s of training"
        assert len(received) <= 3 * seconds, \
            f"{len(received)} messages in {seconds:.1f} s: {[len(m['events']) for m in received]}"
        assert "running" in page.locator(".invlab-status").first.inner_text()
        assert not errors, errors
