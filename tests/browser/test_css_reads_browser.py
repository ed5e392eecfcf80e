"""The served page skips Bokeh's per-property CSS lookups (invlab.dashboard.serving.css_reads) and its plots stay
exactly as Bokeh draws them: the Deep kernel prior page (histograms, function draws, a heat map with its colour
bar) is drawn once as served and once with Bokeh's own lookup put back before the page is built, and every canvas
holds the same pixels."""
from pagekit import browser_page, poll

# Put Bokeh's own lookup back after the page's script has replaced it and before the page builds its plots (Bokeh
# builds them when the document has loaded).
RESTORE = """(() => {
  let bk;
  Object.defineProperty(window, 'Bokeh', {configurable: true, get() { return bk; }, set(value) {
    bk = value;
    const proto = value.require('core/visuals/visual').VisualProperties.prototype;
    const own = proto._get_css_value;
    document.addEventListener('DOMContentLoaded', () => {
      proto._get_css_value = own;
      window.invlabCssReads = 'bokeh';
    }, {capture: true, once: true});
  }});
})();"""

# Every drawn canvas of the page, through the shadow roots, as a PNG data URL.
CANVASES = """() => {
  const out = [];
  const walk = (root) => root.querySelectorAll('*').forEach((el) => {
    if (el.tagName === 'CANVAS' && el.width > 0 && el.height > 0) out.push(el.toDataURL());
    if (el.shadowRoot) walk(el.shadowRoot);
  });
  walk(document);
  return out;
}"""


def settled_canvases(page, at_least: int) -> list[str]:
    """The page's canvases once there are `at_least` of them and two reads a second apart agree."""
    last = []

    def same():
        nonlocal last
        now = page.evaluate(CANVASES)
        stable = len(now) >= at_least and now == last
        last = now
        return stable

    poll(same, timeout=120, interval=1.0)
    return last


def test_the_prior_pages_plots_are_the_same_pixels_with_and_without_bokehs_css_lookups(served_app):
    drawn = {}
    for arm, marker in (("served", "skipped"), ("bokeh", "bokeh")):
        with browser_page(1280, 720) as (page, errors):
            if arm == "bokeh":
                page.add_init_script(RESTORE)
            page.goto(served_app + "?page=prior")
            poll(lambda: page.evaluate("() => window.invlabCssReads || null") == marker, timeout=60)
            drawn[arm] = settled_canvases(page, at_least=6)
            assert not errors, errors
    assert len(drawn["served"]) == len(drawn["bokeh"]) >= 6
    differ = [i for i, (a, b) in enumerate(zip(drawn["served"], drawn["bokeh"])) if a != b]
    assert differ == [], f"canvases {differ} of {len(drawn['served'])} differ"
