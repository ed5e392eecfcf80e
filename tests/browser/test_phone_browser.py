"""The page on a phone (an iPhone 13 held upright: 390×844, mobile emulation) and, for comparison, on a laptop.

A phone lays a page without `<meta name="viewport">` out 980 px wide and shrinks it to the screen (5 px text). With
it, the page is one column at the phone's own width: the lesson, ▶ Start, ↺ Reset, the status and the plots first,
the controls under them; nothing runs past the screen's right edge (the document never scrolls sideways, the curves
narrow to the screen, a view wider than it scrolls inside its own box); the
status line wraps instead of being cut with "…"; every page tab (Compare included) and the curves' options
("previous runs", "presenter") are on the screen. At 1280 px the controls and the plots stay side by side.
One browser context per screen size and one page load each keep the module cheap.
"""
import contextlib

from invlab.dashboard.lessons.catalogue import LESSONS, lesson_query
from pagekit import poll
from tests.helpers import chromium

PHONE_WIDTH = 390

# [left, top, right, bottom] of the first element whose own text is exactly `text` (a button, a tab, a checkbox's
# label), searched through every shadow root; null when none is drawn.
BOX_OF_TEXT = """(text) => {
  const all = [];
  const walk = (root) => root.querySelectorAll('*').forEach(e => {
    all.push(e);
    if (e.shadowRoot) walk(e.shadowRoot);
  });
  walk(document);
  for (const e of all) {
    if (e.children.length || e.textContent.trim() !== text) continue;
    const r = e.getBoundingClientRect();
    if (r.width > 0) return [r.left, r.top, r.right, r.bottom];
  }
  return null;
}"""

# Every drawn element matching `selector` (through shadow roots): its box and whether its text overflows it.
BOXES = """(selector) => {
  const out = [];
  const walk = (root) => root.querySelectorAll('*').forEach(e => {
    if (e.matches(selector)) {
      const r = e.getBoundingClientRect();
      if (r.width > 0) out.push({box: [r.left, r.top, r.right, r.bottom], cut: e.scrollWidth > e.clientWidth + 1,
                                 text: e.textContent.trim().slice(0, 60)});
    }
    if (e.shadowRoot) walk(e.shadowRoot);
  });
  walk(document);
  return out;
}"""

# How wide the page lays itself out and how wide its content is: the document's and the template's scroll areas.
WIDTHS = """() => {
  const main = document.getElementById('main');
  return {inner: window.innerWidth, doc: document.documentElement.scrollWidth, body: document.body.scrollWidth,
          main: main ? main.scrollWidth - main.clientWidth : 0,
          viewport: (document.querySelector('meta[name=viewport]') || {}).content || null};
}"""


@contextlib.contextmanager
def lesson_page(url: str, **context_options):
    """Lesson 1's page in a fresh context of the shared Chromium (a phone's emulation or a window size)."""
    with chromium.browser_context(**context_options) as context:
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda err: errors.append(str(err)))
        page.goto(url + lesson_query(LESSONS[0]))
        poll(lambda: page.locator(".invlab-status [data-field=state]").count() > 0, timeout=90)
        yield page, errors


def iphone_13() -> dict:
    """Playwright's iPhone 13 emulation (390×844 CSS px, a mobile browser, touch) as `new_context` options."""
    chromium.shared_browser()  # starts the shared playwright, which holds the devices' descriptions
    device = chromium._shared["playwright"].devices["iPhone 13"]
    return {key: value for key, value in device.items() if key != "default_browser_type"}


def box(page, text: str):
    return poll(lambda: page.evaluate(BOX_OF_TEXT, text), timeout=20)


def boxes(page, selector: str) -> list[dict]:
    return page.evaluate(BOXES, selector)


def on_screen(rect, width: float = PHONE_WIDTH) -> bool:
    return rect is not None and rect[0] >= -0.5 and rect[2] <= width + 0.5


def test_a_phone_gets_one_column_at_its_own_width_with_nothing_cut(served_app):
    with lesson_page(served_app, **iphone_13()) as (page, errors):
        widths = page.evaluate(WIDTHS)
        assert widths["viewport"] and "width=device-width" in widths["viewport"], widths
        assert widths["inner"] == PHONE_WIDTH, widths  # laid out at the phone's width, not 980 px shrunk
        for name in ("▶ Start", "↺ Reset", "Compare", "previous runs", "presenter (larger page)"):
            assert on_screen(box(page, name)), (name, box(page, name))
        # the status line wraps rather than being cut with an ellipsis
        lines = boxes(page, ".invlab-status > div")
        assert lines and not any(line["cut"] for line in lines), lines
        assert all(on_screen(line["box"]) for line in lines), lines
        # one column, the lesson and its buttons first: banner, Start, Reset, status, then the controls' tabs
        banner = boxes(page, ".invlab-lesson-banner")[0]["box"]
        start, reset, data_tab = box(page, "▶ Start"), box(page, "↺ Reset"), box(page, "Data")
        status = lines[0]["box"]
        assert banner[3] <= start[1] + 1 and start[1] <= reset[1] <= status[1] < data_tab[1], (banner, start, reset,
                                                                                              status, data_tab)
        # the lesson's first step: the plots come under the status, above the controls, within the screen
        page.get_by_role("button", name="▶ Start").click(timeout=60_000)
        figures = poll(lambda: boxes(page, ".bk-Figure"), timeout=120)
        curve = figures[0]["box"]
        assert status[3] <= curve[1] < box(page, "Data")[1], (status, curve)
        poll(lambda: len(boxes(page, ".invlab-view")) >= 2, timeout=60)  # the model's views drawn too
        widths = page.evaluate(WIDTHS)
        assert widths["doc"] <= PHONE_WIDTH + 1 and widths["body"] <= PHONE_WIDTH + 1, widths
        assert widths["main"] <= 1, widths  # nor does the template's scroll area scroll sideways
        # the curves narrow to the screen; a view (its plot or table) is at most the screen's width
        outside = [f for f in boxes(page, ".bk-Figure, .invlab-view") if not on_screen(f["box"])]
        assert not outside, outside
        # a table of values (the hyper-parameters) fits the screen: its values are read without a swipe
        tables = poll(lambda: boxes(page, "table.invlab-scalars"), timeout=60)
        assert all(on_screen(t["box"]) for t in tables), tables
        assert not errors, errors


def test_a_laptop_keeps_the_controls_beside_the_plots(served_app):
    with lesson_page(served_app, viewport={"width": 1280, "height": 800}) as (page, errors):
        widths = page.evaluate(WIDTHS)
        assert widths["doc"] <= 1281, widths
        data_tab, start = box(page, "Data"), box(page, "▶ Start")
        assert data_tab[2] <= start[0] and abs(data_tab[1] - start[1]) < 300, (data_tab, start)  # side by side
        start, reset = box(page, "▶ Start"), box(page, "↺ Reset")
        assert abs(start[1] - reset[1]) < 1, (start, reset)  # the run's buttons on one row
        lines = boxes(page, ".invlab-status > div")
        first, second = lines[0]["box"], lines[1]["box"]  # the status's first two lines: one row each, as before
        assert abs((first[3] - first[1]) - (second[3] - second[1])) < 1 and first[3] - first[1] < 25, lines
        assert box(page, "presenter (larger page)")[1] == box(page, "previous runs")[1]
        assert not errors, errors
