"""A served page's stylesheet links point at this server from its first model on (serving/session_start.py); the
real-browser checks of a late-connecting page are in tests/browser/test_offline_browser.py and
tests/browser/test_layout_browser.py."""
import panel as pn
from bokeh.document import Document
from bokeh.models import ImportedStyleSheet
from panel.io.resources import CDN_DIST

from invlab.dashboard.serving.session_start import packaged_stylesheets


def _links(doc) -> list[str]:
    column = pn.Column(pn.pane.Markdown("a"), pn.widgets.Button(name="b"))
    root = column.get_root(doc)
    return [str(sheet.url) for sheet in root.select({"type": ImportedStyleSheet})]


def test_a_document_built_before_its_html_links_the_packaged_stylesheets():
    before = _links(Document())  # Panel's own default: the CDN, until the page's HTML is rendered
    assert before and all(url.startswith(CDN_DIST) for url in before)
    doc = Document()
    packaged_stylesheets(doc)
    after = _links(doc)
    assert len(after) == len(before)
    assert not any("cdn" in url for url in after), after
    assert all(url.startswith("static/extensions/panel/") for url in after), after
