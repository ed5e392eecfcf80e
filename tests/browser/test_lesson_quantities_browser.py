"""One quantity, one parameter, in a real Chromium: a value a lesson asks the user to set is the same setting
wherever its control appears (the Invariance tab's ν and the Model tab's Nu box), it re-solves the RKHS machine and
it reaches the URL."""
import re

from invlab.dashboard.lessons.catalogue import lesson_query
from pagekit import TEXT, browser_page, poll


def group(page, label: str):
    return page.locator(".bk-input-group", has_text=re.compile(r"^\s*" + re.escape(label))).first


def field(page, label: str):
    return group(page, label).locator("input").first


def address(page) -> str:
    """The address bar (history.replaceState changes it without a navigation that page.url would see)."""
    return page.evaluate("() => window.location.href")


def state(page) -> str:
    cell = page.locator("[data-field=state]").first
    return cell.inner_text().strip() if cell.count() else ""


def test_nu_on_the_invariance_tab_is_the_model_tabs_nu_and_re_solves(served_app):
    with browser_page() as (page, errors):
        page.goto(served_app + lesson_query("functional"))
        page.get_by_role("button", name="▶ Start").click(timeout=90_000)
        poll(lambda: state(page) in ("converged", "finished"), timeout=150)
        page.locator(".bk-tab", has_text="Invariance").first.click()
        box = field(page, "invariance weight ν")
        poll(lambda: box.count() > 0 and box.is_visible(), timeout=30)
        box.fill("1")
        box.press("Enter")
        poll(lambda: re.search(r"model\.nu=1(&|$)", address(page)), timeout=30)
        poll(lambda: "re-solving" in page.evaluate(TEXT), timeout=30)
        page.locator(".bk-tab", has_text=re.compile(r"^\s*Model\s*$")).first.click()
        nu = field(page, "Nu")
        poll(lambda: nu.count() > 0 and nu.input_value() == "1", timeout=30)
        assert not errors, errors
