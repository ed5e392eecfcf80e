"""The page's tabs are drawn when first shown and kept (dashboard/explorer/tabs.py): a switch back to a drawn tab
makes no model again and sends nothing but the new active tab, where Panel's dynamic tabs sent every tab again and
walked the whole document (what made a Pause pressed after a tab switch take 360-400 ms;
benchmarks/dashboard/latency.py measures it in Chromium)."""
import panel as pn
import pytest
from bokeh.document import Document
from panel.io.state import set_curdoc

from invlab.dashboard.explorer.tabs import KeptTabs


def _served(tabs):
    doc = Document()
    with set_curdoc(doc):
        root = tabs.get_root(doc)
        doc.add_root(root)
    return doc, root


def _switch(doc, tabs, index):
    with set_curdoc(doc):
        tabs.active = index


def _tabs(cls, **params):
    widgets = [pn.widgets.FloatInput(label=f"value {i}", value=i) for i in range(3)]
    tabs = cls(*(pn.Column(w, name=f"Tab {i}") for i, w in enumerate(widgets)), **params)
    return tabs, widgets


def _in(doc, widget) -> bool:
    return any(model.document is doc for model, _ in widget._models.values())


def test_a_tab_is_drawn_when_first_shown_and_switching_back_sends_only_the_active_tab():
    tabs, widgets = _tabs(KeptTabs)
    doc, root = _served(tabs)
    assert _in(doc, widgets[0]) and not _in(doc, widgets[1]) and not _in(doc, widgets[2])  # one tab drawn
    assert root.tabs[1].child.tags == ["hidden"] and "Drawing this page" in root.tabs[1].child.text  # says so
    before = list(root.tabs)
    _switch(doc, tabs, 1)
    assert root.tabs[1] is not before[1] and _in(doc, widgets[1]) and not _in(doc, widgets[2])  # drawn now
    assert root.tabs[0] is before[0] and root.tabs[2] is before[2]  # the others untouched
    drawn = list(root.tabs)
    _switch(doc, tabs, 0)
    assert root.active == 0 and all(a is b for a, b in zip(root.tabs, drawn))  # nothing drawn or sent again
    _switch(doc, tabs, 1)
    assert root.active == 1 and all(a is b for a, b in zip(root.tabs, drawn))
    assert _in(doc, widgets[0]) and _in(doc, widgets[1])  # both kept
    assert not _in(doc, widgets[2]) and tabs.drawn(0) and tabs.drawn(1) and not tabs.drawn(2)
    widgets[0].value = 7.5  # a hidden tab's widget still follows its value
    assert widgets[0]._models[root.ref["id"]][0].value == 7.5


def test_panels_dynamic_tabs_send_the_tabs_again_at_each_switch():
    """The behaviour KeptTabs replaces, so that this file notices if Panel's own tabs stop doing it."""
    tabs, _ = _tabs(pn.Tabs, dynamic=True)
    doc, root = _served(tabs)
    _switch(doc, tabs, 1)
    drawn = list(root.tabs)
    _switch(doc, tabs, 0)
    assert root.tabs[0] is not drawn[0] and root.tabs[1] is not drawn[1]  # both tabs' models made again, and sent


def test_kept_tabs_cannot_be_made_dynamic_and_keep_their_objects():
    tabs, widgets = _tabs(KeptTabs, dynamic=True)
    assert tabs.dynamic is False
    assert [t.name for t in tabs] == ["Tab 0", "Tab 1", "Tab 2"] and tabs[1].objects == [widgets[1]]
    with pytest.raises(IndexError):
        tabs[5]  # noqa: B018
