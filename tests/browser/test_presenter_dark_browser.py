"""The dark theme and presenter mode in a real Chromium, as a lecturer meets them mid-lesson: the theme switched
while a run trains restyles the diagnostics already drawn; presenter mode at 1280×720 keeps the lesson's key view on
the first screen and draws the diagnostics and the prior page's controls larger; a page tab not drawn yet says it is
being drawn at once instead of staying blank; the prior page shows no other lesson's banner."""
import re

from pagekit import browser_page, column_length, poll

SMALL = "?model=svgp&data.subset=200&data.test_subset=100&model.num_inducing=10&train.steps=100000"


def field(page, name: str) -> str:
    return page.locator(f".invlab-status [data-field={name}]").first.inner_text()


def pause(page) -> None:
    """Stop the page's run (the shared server's other tests keep the machine)."""
    button = page.get_by_role("button", name="❚❚ Pause")
    if button.count():
        button.first.click()


def background_is_dark(page) -> bool:
    try:
        rgb = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
    except Exception:  # noqa: BLE001 — the page is reloading
        return False
    values = [int(v) for v in re.findall(r"\d+", rgb)[:3]]
    return len(values) == 3 and sum(values) < 3 * 100


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
