"""A crafted link cannot run script or add elements to the page: every query key the Training, Compare and prior
pages read (and unknown keys), with HTML and Markdown payloads in keys and values, in Debian's Chromium.

Each payload carries a number; script that runs records it in `window.__xss`, an element it injects carries the id
`inj-<number>`. The page must show the refusals as text (the payload's characters appear in the notice) while
nothing records and no such element exists, in the document or any shadow root.
"""
import time
from urllib.parse import quote

import pytest

from invlab.dashboard.state.settings import FLAGS, SECTIONS, RunSettings, family_defaults
from invlab.models import get_model, model_names
from invlab.models.dkp import PriorExplorer
from pagekit import INJECTED, TEXT, browser_page, open_tab, poll

PAYLOAD = ('"\'><img src=x onerror=window.__xss.push({n})><script>window.__xss.push({n})</script>'
           '<b id=inj-{n}>b</b>[md](javascript:window.__xss.push({n})) **{n}** <svg onload=window.__xss.push({n})>')

SIDEBAR_TABS = ("Model", "Invariance", "Optimisation", "Runs", "Data")  # the Training page's controls


def _keys_for(family: str) -> list[str]:
    settings = RunSettings(model=family)
    keys = [f"{section}.{name}" for section in SECTIONS for name in settings.section(section).param if name != "name"]
    return keys + [f"prior.{name}" for name in PriorExplorer.param if name != "name"]


def _links() -> list[tuple[str, str]]:
    """(what, query string): each family with every key it reads carrying a payload, on the Training, prior and
    Compare pages in turn; unknown keys and the page flags on all three pages."""
    n = iter(range(1, 100000))
    pages = ("", "prior", "compare")
    links = []
    for i, family in enumerate(model_names()):
        pairs = [("model", family)] + [(key, PAYLOAD.format(n=next(n))) for key in _keys_for(family)]
        links.append((family, pairs, pages[i % 3:i % 3 + 1]))
    unknown = [(PAYLOAD.format(n=next(n)), "1"), (f"data.{PAYLOAD.format(n=next(n))}", "2"),
               ("model", PAYLOAD.format(n=next(n)))]
    unknown += [(flag, PAYLOAD.format(n=next(n))) for flag in FLAGS if flag != "page"]
    links.append(("unknown keys and page flags", unknown, pages))
    out = []
    for what, pairs, on in links:
        query = "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in pairs)
        for page in on:
            out.append((f"{what}, page={page or 'training'}", query + (f"&page={page}" if page else "")))
    return out


def test_every_family_has_keys_to_walk():
    """The walk covers each family's own model settings (a family whose config reads nothing would be skipped)."""
    for family in model_names():
        keys = _keys_for(family)
        model_keys = [k for k in keys if k.startswith("model.")]
        assert len(model_keys) == len([p for p in get_model(family).config.param if p != "name"]) > 0, family
        assert set(family_defaults(family)) == set(SECTIONS)


@pytest.mark.timeout(600)
def test_crafted_links_run_no_script_and_inject_nothing(served_app):
    links = _links()
    with browser_page() as (page, errors):
        page.add_init_script("window.__xss = [];")
        dialogs = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        for what, query in links:
            page.goto(f"{served_app}?{query}")
            # the refusals are shown ...
            try:
                text = poll(lambda: (lambda t: t if "Some settings in the link were refused" in t else None)(
                    page.evaluate(TEXT)), timeout=60)
            except AssertionError:
                shown = page.evaluate(TEXT)[-600:]
                raise AssertionError(f"{what}: no refusal shown; the page says {shown!r}") from None
            # ... as the characters of the payload, every refusal at once (a bad run number does not hide the rest)
            assert "<img src=x onerror=window.__xss.push(" in text, what
            if "&run=" in query:
                def notice():
                    lines = page.evaluate(TEXT).splitlines()
                    return next((line for line in lines if "Some settings in the link were refused" in line), "")
                try:
                    poll(lambda: "a stored run is named by its number" in notice(), timeout=30)
                except AssertionError:
                    raise AssertionError(f"{what}: the run's refusal is not in the notice {notice()!r}") from None
                assert "model: unknown family" in notice(), notice()
            # every tab is drawn when first opened: open each, as a person reading the page would
            if "page=" not in query.rsplit("&", 1)[-1]:
                for tab in SIDEBAR_TABS:
                    if page.locator(".bk-tab", has_text=tab).count():
                        open_tab(page, tab)
                        time.sleep(0.3)
            ran = page.evaluate("() => window.__xss")
            injected = page.evaluate(INJECTED)
            assert ran == [] and dialogs == [] and injected == [], (what, ran, dialogs, injected)
        assert not [e for e in errors if "__xss" in e], errors
