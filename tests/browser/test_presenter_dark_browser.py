"""The dark theme and presenter mode in a real Chromium, as a lecturer meets them mid-lesson: the theme switched
while a run trains restyles the diagnostics already drawn; presenter mode at 1280×720 keeps the lesson's key view on
the first screen and draws the diagnostics and the prior page's controls larger; a page tab not drawn yet says it is
being drawn at once instead of staying blank; the prior page shows no other lesson's banner."""
import re

from invlab.dashboard.lessons.catalogue import lesson_query
from pagekit import TEXT, background_is_dark, browser_page, column_length, poll

SMALL = "?model=svgp&data.subset=200&data.test_subset=100&model.num_inducing=10&train.steps=100000"


def field(page, name: str) -> str:
    return page.locator(f".invlab-status [data-field={name}]").first.inner_text()


def pause(page) -> None:
    """Stop the page's run (the shared server's other tests keep the machine)."""
    button = page.get_by_role("button", name="❚❚ Pause")
    if button.count():
        button.first.click()


# JavaScript: the computed text colour of the diagnostics' titles, captions and table cells (shadow roots included),
# with their text; and every shown axis's label and tick colours in the page's Bokeh documents.
COLOURS = """() => {
  const html = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) walk(el.shadowRoot);
      const c = el.classList;
      const kind = c && c.contains('invlab-view-title') ? 'title'
                 : c && c.contains('invlab-view-description') ? 'description'
                 : (el.tagName === 'TD' || el.tagName === 'TH') ? 'cell' : null;
      const text = el.textContent.trim().slice(0, 30);
      if (kind && text) html.push([kind, text, getComputedStyle(el).color]);
    }
  };
  walk(document);
  const axes = [];
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      if (m.axis_label_text_color !== undefined && m.visible !== false)
        axes.push([m.axis_label || '', m.axis_label_text_color, m.major_label_text_color]);
  return {html, axes};
}"""


def luminance(colour: str) -> float:
    """The relative luminance (0 black … 1 white) of a CSS colour given as #rrggbb or rgb(r, g, b)."""
    if colour.startswith("#"):
        values = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    else:
        values = [int(v) for v in re.findall(r"\d+", colour)[:3]]
    linear = [(v / 255) / 12.92 if v <= 10 else ((v / 255 + 0.055) / 1.055) ** 2.4 for v in values]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_on_dark(colour: str) -> float:
    """The contrast ratio of `colour` on the dark theme's background, rgb(33, 33, 33)."""
    return (luminance(colour) + 0.05) / (luminance("rgb(33, 33, 33)") + 0.05)


def test_switching_to_dark_while_training_restyles_the_diagnostics_already_drawn(served_app):
    """The K_uu, hyper-parameter and inducing-input headings, values and axis labels stayed rgb(26, 29, 33) on
    rgb(33, 33, 33) after the switch (a page opened with `theme=dark` was fine)."""
    with browser_page(1440, 900) as (page, errors):
        page.goto(served_app + SMALL)
        page.get_by_role("button", name="▶ Start").click(timeout=90_000)
        titles = page.locator(".invlab-view-title", has_text="K_uu")
        poll(lambda: titles.count() > 0 and page.locator("td").count() > 0, timeout=120)
        page.locator("#theme-switch").click()
        poll(lambda: background_is_dark(page), timeout=60)
        poll(lambda: field(page, "state") == "running" and titles.count() > 0 and column_length(page, "elbo") > 0,
             timeout=60)
        page.wait_for_timeout(1000)  # the diagnostics' plots drawn on the new page
        seen = page.evaluate(COLOURS)
        pause(page)
        kinds = {kind for kind, _, _ in seen["html"]}
        assert {"title", "description", "cell"} <= kinds, seen["html"]
        dim = [(kind, text, colour) for kind, text, colour in seen["html"]
               if contrast_on_dark(colour) < (3.0 if kind == "description" else 7.0)]
        assert not dim, dim
        labels = {label for label, _, _ in seen["axes"]}
        assert "log10 eigenvalue" in labels, labels  # the K_uu spectrum's axes are among those read
        dark_axes = [axis for axis in seen["axes"] if min(contrast_on_dark(c) for c in axis[1:]) < 7.0]
        assert not dark_axes, dark_axes
        assert not errors, errors


# JavaScript: what presenter mode changes about the lesson's key view and the diagnostics: the outlined key view's
# [top, bottom] on the screen and the width of the widest plot canvas in it, the height of the diagnostics' titles'
# text, and the font size (in the plot's own unit) of the axis labels of the decision plot drawn (axes x₁ and x₂).
PRESENTER_SIZES = """() => {
  let key = null, canvas = 0, title = 0;
  const canvases = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) canvases(el.shadowRoot);
      if (el.tagName === 'CANVAS') canvas = Math.max(canvas, el.getBoundingClientRect().width);
    }
  };
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.style && el.style.outline && el.style.outline.includes('solid') && !key) {
        const r = el.getBoundingClientRect();
        key = [r.top, r.bottom];
        canvases(el.shadowRoot || el);
      }
      if (el.classList && el.classList.contains('invlab-view-title') && el.textContent.trim())
        title = Math.max(title, el.getBoundingClientRect().height);
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(document);
  let axis = 0;
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values()) {
      if (!Array.isArray(m.below) || !Bokeh.index.find(m).some(v => v.el && v.el.isConnected)) continue;
      for (const a of [...m.below, ...(m.left || [])])  // the axes of a plot drawn now
        if ((a.axis_label === 'x₁' || a.axis_label === 'x₂') && typeof a.axis_label_text_font_size === 'string')
          axis = Math.max(axis, parseFloat(a.axis_label_text_font_size));
    }
  return {key, canvas, title, axis};
}"""


def test_presenter_mode_keeps_the_key_view_on_a_projectors_screen_and_enlarges_the_diagnostics(served_app):
    """At 1280×720 the outlined key view started at y ≈ 510, so only its top showed, and the diagnostics' text and
    the two-moons decision plot (about 240 px) were drawn at the laptop's sizes. The functional lesson's key view is
    that decision plot: it is whole on the first screen, and it and the diagnostics' text are larger than without
    presenter mode."""
    with browser_page(1280, 720) as (page, errors):
        page.goto(served_app + lesson_query("functional") + "&presenter=1")
        page.get_by_role("button", name="▶ Start").click(timeout=90_000)
        poll(lambda: (page.evaluate(PRESENTER_SIZES)["key"] or [0, 0])[1] > 0
             and page.evaluate(PRESENTER_SIZES)["canvas"] > 0, timeout=120)
        page.wait_for_timeout(1000)  # laid out
        large = page.evaluate(PRESENTER_SIZES)
        top, bottom = large["key"]
        assert 0 <= top and bottom <= 720, large
        page.locator(".bk-Checkbox", has_text="presenter").locator("input").first.click()
        poll(lambda: page.evaluate(PRESENTER_SIZES)["canvas"] < large["canvas"], timeout=30)
        page.wait_for_timeout(1000)
        normal = page.evaluate(PRESENTER_SIZES)
        pause(page)
        assert large["canvas"] >= 1.15 * normal["canvas"], (large, normal)  # the decision plot
        assert large["title"] >= 1.2 * normal["title"], (large, normal)  # the diagnostics' titles
        assert large["axis"] >= 1.2 * normal["axis"] > 0, (large, normal)  # the diagnostics' axis labels
        assert not errors, errors


# JavaScript: the height on the screen of the prior page's α slider's title (0 while not drawn).
ALPHA_LABEL = """() => {
  let height = 0;
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) walk(el.shadowRoot);
      if (el.classList && el.classList.contains('bk-slider-title') && el.textContent.includes('α (identity weight)'))
        height = Math.max(height, el.getBoundingClientRect().height);
    }
  };
  walk(document);
  return height;
}"""

# a "drawing…" line that starts with a symbol the page's fonts may lack (an emoji: a box on a browser without one)
GLYPH_BEFORE_DRAWING = re.compile(r"[\u2190-\u2bff\U0001F000-\U0001FAFF]\s*drawing…", re.IGNORECASE)


def test_the_prior_page_has_no_other_lessons_banner_and_presenter_mode_enlarges_its_controls(served_app):
    """Lesson 1's banner (rotation invariance) was shown on the Deep kernel prior page, its controls kept their
    laptop size in presenter mode, and its "drawing…" line began with ⏳, a box where the browser has no emoji."""
    sizes = {}
    with browser_page(1280, 720) as (page, errors):
        for mode, link in (("presenter", lesson_query("rotation") + "&presenter=1"), ("normal", "?page=prior")):
            page.goto(served_app + link)
            if mode == "presenter":
                page.locator(".bk-tab", has_text="Deep kernel prior").first.click(timeout=90_000)
            sizes[mode] = poll(lambda: page.evaluate(ALPHA_LABEL), timeout=90)
            shown = page.locator(".invlab-lesson-banner", has_text="rotation invariance")
            assert not any(banner.is_visible() for banner in shown.all()), mode
            text = page.evaluate(TEXT)
            assert not GLYPH_BEFORE_DRAWING.search(text), GLYPH_BEFORE_DRAWING.search(text)
        assert sizes["presenter"] >= 1.2 * sizes["normal"], sizes
        assert not errors, errors


def test_a_page_tab_not_drawn_yet_says_so_at_once(served_app):
    """A page tab is drawn by the server when first shown; while a run trained, Compare, Lessons and the prior page
    stayed blank for 2-4 s after the click. Here the server's messages are held back after the click, as on a busy
    server: what the tab shows meanwhile is what the browser already had, and it says the page is being drawn."""
    from tests.helpers.chromium import browser_context

    held, sockets = [], []

    def route(ws):
        server = ws.connect_to_server()
        sockets.append(ws)
        server.on_message(lambda message: held.append(message) if sockets[0] is None else ws.send(message))

    with browser_context(viewport={"width": 1280, "height": 720}) as context:
        context.route_web_socket("**/ws*", route)
        page = context.new_page()
        page.goto(served_app + SMALL)
        poll(lambda: field(page, "state") == "idle", timeout=90)
        sockets[0] = None  # from now on the server's messages wait
        page.locator(".bk-tab", has_text=re.compile(r"^\s*Compare\s*$")).first.click()
        placeholder = page.get_by_text("Drawing this page")
        poll(lambda: any(p.is_visible() for p in placeholder.all()), timeout=10)
        assert not GLYPH_BEFORE_DRAWING.search(page.evaluate(TEXT))


def test_the_idle_status_reads_on_either_theme(served_app):
    """The status's "idle" was a fixed #666: 5.7:1 on the light page, 2.9:1 on the dark one. It takes the theme's own
    faint text colour, which reads on both."""
    with browser_page(1280, 800) as (page, errors):
        for theme, background in (("dark", "rgb(33, 33, 33)"), ("default", "rgb(255, 255, 255)")):
            page.goto(served_app + SMALL + f"&theme={theme}")
            poll(lambda: field(page, "state") == "idle", timeout=90)
            colour = page.locator(".invlab-status [data-field=state]").first.evaluate(
                "e => getComputedStyle(e).color")
            lighter, darker = sorted((luminance(colour), luminance(background)), reverse=True)
            assert (lighter + 0.05) / (darker + 0.05) >= 4.5, (theme, colour)
        assert not errors, errors
