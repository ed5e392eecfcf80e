"""The Training page's layout in a real Chromium, as a lecturer sees it on a projector (1920×1080), a laptop
(1440×900) and a tablet (768×1024): the sidebar's tabs all fit, the status line keeps its height as the run goes
on and says how far it is, a finished run's Start says what to do, the theme changes without losing the run, a
presenter zoom, and the lesson's key view at the top (issue 26, items 3, 4 and 10)."""
import re

from pagekit import TEXT, browser_page, column_length, poll

SIDEBAR_TABS = ("Data", "Model", "Invariance", "Optimisation", "Runs")
SMALL = "?data.subset=200&data.test_subset=100&model.num_inducing=10"


def field(page, name: str) -> str:
    return page.locator(f".invlab-status [data-field={name}]").first.inner_text()


def tab(page, name: str):
    return page.locator(".bk-tab", has_text=re.compile(f"^{name}$")).first


def inside_strip(page, name: str) -> bool:
    """The tab is drawn whole inside its tab strip (not cut off at the strip's edge nor scrolled out of it)."""
    return tab(page, name).evaluate("""e => {
      const r = e.getBoundingClientRect(), s = e.closest('.bk-header').getBoundingClientRect();
      return r.width > 0 && r.left >= s.left - 0.5 && r.right <= s.right + 0.5
             && r.top >= s.top - 1.5 && r.bottom <= s.bottom + 1.5;
    }""")


def test_every_sidebar_tab_fits_at_projector_and_laptop_widths(served_app):
    for width, height in ((1920, 1080), (1440, 900)):
        with browser_page(width, height) as (page, errors):
            page.goto(served_app + SMALL)
            poll(lambda: field(page, "state") == "idle")
            for name in SIDEBAR_TABS:
                assert inside_strip(page, name), (width, name)
            tab(page, "Runs").click()
            poll(lambda: page.get_by_text("Stored runs").first.is_visible(), timeout=10)
            for name in SIDEBAR_TABS:  # choosing the last tab scrolls nothing out of sight
                assert inside_strip(page, name), (width, name, "after Runs")
            tab(page, "Data").click()
            poll(lambda: page.locator(".bk-input-group", has_text="Dataset").first.is_visible(), timeout=10)
            assert not errors, errors
