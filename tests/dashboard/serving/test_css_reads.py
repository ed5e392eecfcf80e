"""The served page's script that skips Bokeh's per-property CSS lookups (invlab.dashboard.serving.css_reads): where
it goes in the page, that the page's policy lets it run, and the premise it rests on — nothing the page loads
defines a `--bk-*` CSS variable, so the lookup it skips could only ever answer "". The plots it draws are compared
with Bokeh's own in tests/browser/test_css_reads_browser.py."""
from __future__ import annotations

import re
from pathlib import Path

import bokeh
import panel

from invlab.dashboard.serving import css_reads
from invlab.dashboard.serving.csp import secure_page

DASHBOARD = Path(__file__).resolve().parents[3] / "dashboard"

PAGE = """<html><head>
<script type="text/javascript" src="static/js/bokeh.min.js?v=6acf"></script>
<script type="text/javascript" src="static/js/bokeh-gl.min.js?v=491e"></script>
<script type="text/javascript" src="static/extensions/panel/panel.min.js?v=32f9"></script>
</head><body><div id="root"></div></body></html>"""


def test_the_script_follows_bokehjs_and_comes_before_its_extensions():
    page = css_reads.add_to(PAGE)
    assert page.count(css_reads.SCRIPT) == 1
    assert page.index("bokeh.min.js") < page.index(css_reads.SCRIPT) < page.index("bokeh-gl.min.js")
    assert css_reads.add_to(page) == page  # once only


def test_a_page_without_bokehjs_is_left_as_it_is():
    other = PAGE.replace("bokeh.min.js", "other.min.js")
    assert css_reads.add_to(other) == other
    assert css_reads.add_to("") == ""


def test_the_pages_policy_lets_the_script_run():
    page, policy = secure_page(css_reads.add_to(PAGE))
    nonce = re.search(r"'nonce-([^']+)'", policy).group(1)
    at = page.index("Bokeh.require(")
    tag = page[page.rindex("<script", 0, at):at]
    assert f'nonce="{nonce}"' in tag, tag


def _defined_bokeh_variables(text: str) -> list[str]:
    """`--bk-…` custom properties a stylesheet (or a style string in code) defines: `--bk-name:` — not the one place
    BokehJS builds the names it looks up (`--bk-${prefix}`)."""
    return re.findall(r"--bk-[\w-]+\s*:", text)


def test_nothing_the_page_loads_defines_a_bokeh_css_variable():
    """Bokeh's and Panel's scripts and stylesheets (their stylesheets ship inside the scripts too) and every style
    of the dashboard: if one ever defines `--bk-…`, the skipped lookup would have found it, and the script must go."""
    roots = [Path(bokeh.__file__).parent / "server" / "static", Path(panel.__file__).parent / "dist", DASHBOARD]
    found, read = {}, 0
    for root in roots:
        for path in root.rglob("*"):
            if path.suffix not in (".js", ".css", ".py", ".html") or not path.is_file():
                continue
            read += 1
            names = _defined_bokeh_variables(path.read_text(errors="replace"))
            if names:
                found[str(path)] = names[:3]
    assert read > 50 and found == {}, found
    # the lookup itself is still what the script replaces
    bundle = (Path(bokeh.__file__).parent / "server" / "static" / "js" / "bokeh.min.js").read_text()
    assert "_get_css_value(" in bundle and "--bk-${" in bundle


def test_the_definition_scan_sees_a_defined_variable():
    assert _defined_bokeh_variables(".bk-Figure { --bk-line-color: red; }") == ["--bk-line-color:"]
    assert _defined_bokeh_variables("this.css_prefix=`--bk-${s}`") == []
