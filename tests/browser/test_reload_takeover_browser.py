"""A page training a run keeps it against another browser: on a server without logins, a second browser that opens
the run's link with the header a reload sends (`Cache-Control: max-age=0`) gets a page of its own that follows the
run; it does not take the first browser's page over (that page still trains, its Pause still pauses its own run,
the second page's Pause does not). The first tab's own reload still comes back to its training run. In Debian's
Chromium, two browser contexts (two browsers: their own cookies and storage) on the shared server."""
from urllib.parse import parse_qsl, urlparse

from pagekit import column_length, poll
from tests.helpers.chromium import browser_context

SMALL = "?data.subset=200&data.test_subset=100&model.num_inducing=10&train.steps=100000"


def field(page, name: str) -> str:
    return page.locator(f".invlab-status [data-field={name}]").first.inner_text()


def step(page) -> int:
    return int(field(page, "step") or 0)


def run_in_address(page):
    return dict(parse_qsl(urlparse(page.evaluate("() => window.location.href")).query)).get("run")


def trains_on(page) -> None:
    """`page` shows its run training: its step counter goes on from where it is now."""
    now = step(page)
    poll(lambda: "running" in field(page, "state") and step(page) > now, timeout=60)


def test_another_browser_sending_the_reload_header_does_not_take_the_page_over(served_app):
    with browser_context(viewport={"width": 1400, "height": 1000}) as first_browser, \
            browser_context(viewport={"width": 1400, "height": 1000},
                            extra_http_headers={"Cache-Control": "max-age=0"}) as second_browser:
        first = first_browser.new_page()
        first.goto(served_app + SMALL)
        first.get_by_role("button", name="▶ Start").click(timeout=90_000)
        run = poll(lambda: run_in_address(first), timeout=60)
        poll(lambda: column_length(first, "elbo") >= 3)

        second = second_browser.new_page()
        second.goto(f"{served_app}?run={run}")
        poll(lambda: field(second, "step") not in ("", "0"), timeout=90)  # the second page shows the run
        trains_on(first)  # the first page is still the one training, and still drawn
        pause = second.get_by_role("button", name="❚❚ Pause")
        if pause.is_enabled():
            pause.click()
        trains_on(first)  # the second page's Pause did not pause the first page's run

        first.reload()  # the first tab's own reload comes back to its training run
        poll(lambda: run_in_address(first) == run, timeout=60)
        trains_on(first)
        first.get_by_role("button", name="❚❚ Pause").click()
        poll(lambda: field(first, "state") == "paused")
