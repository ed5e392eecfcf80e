"""The served page's plots paint without reading CSS variables that nothing on the page defines.

Bokeh 3 lets a stylesheet override any line, fill, hatch or text property of a plot through a CSS variable
(`--bk-line-color`, `--bk-major-tick-line-width`, …): every time a glyph, an axis, a grid or a label is painted, each
of its properties is first looked up with `getComputedStyle(element).getPropertyValue("--bk-…")`
(`VisualProperties._get_css_value` in BokehJS; bokeh/bokeh#15286). No stylesheet of Bokeh, Panel or this page
defines any such variable, so every lookup answers "" — after making Chromium bring the element's styles up to
date first. While a page builds its plots the DOM changes between lookups, and each one recalculates styles again.
Skipping them, the Deep kernel prior page's first draw of its plots took the browser 2.9 CPU-seconds instead of
4.1, and the Compare page's 1.8 instead of 2.3 (headless Chromium, 2 cores); a training page's redraws of its
curves change little.

`add_to(page)` puts one small script right after BokehJS's own in a served page: it makes that lookup answer ""
at once, which is what it answered anyway. The plots look exactly the same (the browser test compares them with
and without it). If a later Bokeh no longer has the method, the script changes nothing.
"""
from __future__ import annotations

import re

SCRIPT = """<script type="text/javascript">
(() => {
  // No stylesheet on this page defines a --bk-* variable: Bokeh's per-property CSS lookup always answers "".
  try {
    const visual = Bokeh.require("core/visuals/visual");
    const proto = visual && visual.VisualProperties && visual.VisualProperties.prototype;
    if (proto && typeof proto._get_css_value === "function") {
      proto._get_css_value = function () { return ""; };
      window.invlabCssReads = "skipped";
    }
  } catch (err) { /* another Bokeh: leave it as it is */ }
})();
</script>"""

# BokehJS's own bundle as Bokeh's server writes it into the page: <script ... src="static/js/bokeh.min.js?v=…"></script>
_BOKEH_TAG = re.compile(r'<script[^>]*\ssrc="[^"]*/bokeh(\.min)?\.js(\?[^"]*)?"[^>]*>\s*</script>', re.IGNORECASE)


def add_to(page: str) -> str:
    """`page` (a served HTML document) with `SCRIPT` right after the tag that loads BokehJS; unchanged if the page
    loads no BokehJS or already has the script."""
    if SCRIPT in page:
        return page
    match = _BOKEH_TAG.search(page)
    if match is None:
        return page
    return page[:match.end()] + "\n" + SCRIPT + page[match.end():]
