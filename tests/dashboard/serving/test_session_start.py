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


def test_a_pane_updated_while_its_tab_is_hidden_keeps_every_link_on_this_server():
    """A page tab that is not shown (dynamic tabs) holds its panes' models outside the document; a text pane updated
    there (the status line while the Lessons page is shown) had its stylesheets re-linked against the CDN, and the
    shared loading stylesheet of every pane on the page with them (137 CSP violations in Chromium)."""
    from panel.io.state import set_curdoc

    from invlab.dashboard.serving.session_start import stylesheets_from_this_server

    stylesheets_from_this_server()
    doc = Document()
    packaged_stylesheets(doc)
    status, other = pn.pane.HTML("step 1"), pn.pane.Markdown("lesson")
    tabs = pn.Tabs(("Training", pn.Column(status)), ("Lessons", other), dynamic=True)
    with set_curdoc(doc):
        root = tabs.get_root(doc)
        doc.add_root(root)
        tabs.active = 1  # the Training page's models leave the document
        (model, _), = status._models.values()
        assert model.document is None
        status.object = "step 2"  # what the live feed does at every tick
        links = [str(s.url) for m in (root, model) for s in m.select({"type": ImportedStyleSheet})]
    assert links and not [url for url in links if url.startswith("http")], links
