"""The deep kernel prior page in Chromium: a link's δ and layers are drawn, a δ move redraws the plots and reaches
the address bar, and that address brings the same page back."""
from urllib.parse import parse_qs, urlparse

from pagekit import browser_page, page_texts, poll


def open_prior(page, url):
    page.goto(url, timeout=300_000)
    page.locator(".bk-tab", has_text="Deep kernel prior").first.click(timeout=120_000)


def test_prior_sliders_round_trip_through_the_url_and_a_delta_move_redraws(served_app):
    with browser_page() as (page, errors):
        open_prior(page, served_app + "?prior.delta=5&prior.num_layers=3")
        titles = lambda: " | ".join(page_texts(page))  # noqa: E731
        poll(lambda: "IW(δI, δ + N + 1), δ = 5" in titles() and "3-layer deep IW, δ = 5" in titles(), timeout=180)
        page.locator(".noUi-handle:visible").first.press("End")  # δ to the end of its slider, released
        poll(lambda: "IW(δI, δ + N + 1), δ = 1000" in titles() and "3-layer deep IW, δ = 1000" in titles(),
             timeout=60)
        poll(lambda: parse_qs(urlparse(page.url).query).get("prior.delta") == ["1000"], timeout=30)
        link = page.url
        assert parse_qs(urlparse(link).query)["prior.num_layers"] == ["3"]
        assert parse_qs(urlparse(link).query)["page"] == ["prior"]  # the link keeps its page
        assert not errors, errors
    with browser_page() as (page, errors):
        page.goto(link, timeout=300_000)  # the link alone, no click: it opens the prior page with its δ slider
        titles = lambda: " | ".join(page_texts(page))  # noqa: E731
        poll(lambda: "IW(δI, δ + N + 1), δ = 1000" in titles() and "3-layer deep IW" in titles(), timeout=180)
        selected = page.locator(".bk-tab.bk-active", has_text="Deep kernel prior")
        poll(lambda: selected.count() == 1, timeout=60)
        poll(lambda: page.locator(".noUi-handle:visible").count() > 0, timeout=60)
        assert not errors, errors


def test_markup_in_a_prior_link_is_refused_as_text(served_app):
    with browser_page() as (page, errors):
        page.goto(served_app + "?prior.%3Cimg%20src=x%20onerror=alert(1)%3E=1&prior.delta=abc", timeout=300_000)
        # the notice names both refusals (its quotes may reach the page as HTML entities)
        poll(lambda: any("not a prior setting" in t and "prior.delta=" in t and "abc" in t for t in page_texts(page)),
             timeout=180)
        assert page.locator("img[src=x]").count() == 0  # shown as text, never as markup
        assert not errors, errors
