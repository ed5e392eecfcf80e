"""Helpers for the real-browser tests: serve the dashboard, open a Chromium page, poll, read the page's Bokeh data."""
import contextlib
import re
import time

from invlab.dashboard.serving.process import CHROMIUM_ARGS, chromium_path, serve_dashboard  # noqa: F401 — used by the tests
from tests.helpers.chromium import browser_context

HAVE_CHROMIUM = chromium_path() is not None


def poll(fn, timeout=90.0, interval=0.2):
    deadline = time.time() + timeout
    value = None
    while time.time() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out; last value {value!r}")


def background_is_dark(page) -> bool:
    """Whether the page's body is drawn dark (the dark theme); False while the page reloads."""
    try:
        rgb = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
    except Exception:  # noqa: BLE001 — the page is reloading
        return False
    values = [int(v) for v in re.findall(r"\d+", rgb)[:3]]
    return len(values) == 3 and sum(values) < 3 * 100


def open_tab(page, name: str) -> None:
    """Click the tab named exactly `name` (a page, or a tab of the controls), as a person does; a tab's widgets are
    drawn when it is first opened."""
    page.locator(".bk-tab", has_text=re.compile(r"^\s*" + re.escape(name) + r"\s*$")).first.click()


def panel_script_late(context) -> None:
    """From now on Panel's script reaches the pages of `context` a few seconds after `invlab serve` ends a session
    no browser is connected to: as on a busy server or a slow network."""
    from invlab.cli.serve import UNUSED_SESSION_LIFETIME_MS

    def slow(route):
        time.sleep(UNUSED_SESSION_LIFETIME_MS / 1000 + 4)
        route.continue_()

    context.route("**/panel.min.js*", slow)


def _with_place(err) -> str:
    """A page error's message and, after it, where it was thrown (the top of its stack: which script and function),
    so that a failure names the library that threw."""
    lines = (getattr(err, "stack", None) or "").splitlines()
    place = next((line.strip() for line in lines if line.strip().startswith("at ")), "")
    return f"{err} ({place})" if place else str(err)


@contextlib.contextmanager
def browser_page(width: int = 1400, height: int = 1000):
    """A page in a fresh context of the shared headless Chromium and the list that collects its JavaScript errors."""
    with browser_context(viewport={"width": width, "height": height}) as context:
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda err: errors.append(_with_place(err)))
        yield page, errors


# The number of points in the page's data source holding column `name` (the largest such source).
def column_length(page, name: str) -> int:
    return page.evaluate("""(name) => {
      let n = 0;
      for (const doc of Bokeh.documents)
        for (const m of doc._all_models.values())
          if (m.data && m.data[name]) n = Math.max(n, m.data[name].length);
      return n;
    }""", name)


# Every text (titles, axis labels, markup) in the page's Bokeh documents.
def page_texts(page) -> list[str]:
    return page.evaluate("""() => {
      const out = [];
      for (const doc of Bokeh.documents)
        for (const m of doc._all_models.values()) {
          if (typeof m.text === "string") out.push(m.text);
          if (typeof m.axis_label === "string") out.push(m.axis_label);
        }
      return out;
    }""")


# Everything in the page's document and its shadow roots that an HTML payload could have made: elements with an id
# `inj-…`, `<img src=x>`, an `<svg onload>`, a `javascript:` link, a script mentioning `__xss`.
INJECTED = """() => {
  const found = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.id && el.id.startsWith('inj-')) found.push('#' + el.id);
      if (el.tagName === 'IMG' && el.getAttribute('src') === 'x') found.push('img src=x');
      if (el.tagName === 'svg' && el.hasAttribute('onload')) found.push('svg onload');
      if (el.tagName === 'A' && (el.getAttribute('href') || '').toLowerCase().includes('javascript')) found.push('a');
      if (el.tagName === 'SCRIPT' && el.textContent.includes('__xss')) found.push('script');
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(document);
  return found;
}"""

# The page's text (every text node), shadow roots included; not the contents of <style> and <script> elements (the
# stylesheets of Panel's shadow roots are over a megabyte of text, which made each call cost about 60 ms of CPU
# between the browser, Playwright's driver and Python, against under 3 ms without them).
TEXT = """() => {
  const out = [];
  const shown = {acceptNode: (node) => ['STYLE', 'SCRIPT'].includes(node.parentNode && node.parentNode.nodeName)
    ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT};
  const walk = (root) => {
    const nodes = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, shown);
    while (nodes.nextNode()) out.push(nodes.currentNode.nodeValue);
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) walk(el.shadowRoot);
  };
  walk(document);
  return out.join('\\n');
}"""
