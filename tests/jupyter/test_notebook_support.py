"""What the dashboard does for notebooks, checked without a browser: the plotting backend, packaged
stylesheets, the heartbeat's notion of a page gone, the quick mode, and the README's snippet."""
import subprocess
import sys
import time

import pytest

from invlab.dashboard.notebook import display as notebook
from invlab.dashboard.notebook.view import NotebookView, page_changes
from invlab.dashboard.serving.process import ROOT


def test_the_readme_holds_the_snippet_the_browser_test_runs():
    from test_readme_snippet import SNIPPET

    assert f"```python\n{SNIPPET}" in (ROOT / "README.md").read_text()


def test_explorer_curves_draw_after_a_bare_pn_extension():
    """`pn.extension()` before the dashboard is imported loads no HoloViews backend; the dashboard loads it."""
    code = """
import panel as pn
pn.extension()
from invlab.dashboard import Explorer
from invlab.dashboard.views.panes import CurveBoard
import holoviews as hv
board = CurveBoard()
board.buffer("elbo")
board.send("elbo", [1, 2], [-3.0, -2.0])
assert hv.Store.current_backend == "bokeh", hv.Store.current_backend
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


def test_cdn_stylesheets_are_replaced_by_packaged_copies():
    from bokeh.document import Document
    from bokeh.models import Column, Div, ImportedStyleSheet
    from panel.io.resources import CDN_DIST

    url = f"{CDN_DIST}css/loading.css?v=1"
    data = notebook.packaged_stylesheet(url)
    assert data is not None and data.startswith("data:text/css;base64,")
    assert notebook.packaged_stylesheet("https://example.org/x.css") is None

    doc = Document()
    root = Column()
    doc.add_root(root)
    doc.models.flush_synced()
    sheet = ImportedStyleSheet(url=url)
    doc.hold()
    root.children = [Div(text="new", stylesheets=[sheet])]  # a model added after the first render
    assert notebook.inline_new_stylesheets(doc) == 1
    assert sheet.url == data


def test_heartbeat_takes_silence_only_after_beats_and_not_while_the_kernel_was_busy(monkeypatch):
    monkeypatch.setenv("INVLAB_HEARTBEAT_S", "0.1")
    beat = notebook.Heartbeat()
    assert beat.timeout == pytest.approx(1.8)
    beat._last_beat = beat._last_check = time.monotonic() - 10
    assert not beat.silent()  # never beat: a notebook run without a browser
    beat.beats = 1
    beat._last_beat = beat._last_check = time.monotonic() - 3
    assert beat.silent()  # beat, then silent for longer than the timeout
    beat._last_beat = time.monotonic() - 30
    beat._last_check = time.monotonic() - 30  # no check for 30 s: the kernel was busy, beats may be queued
    assert not beat.silent()


def test_quick_mode_trains_a_tenth(monkeypatch):
    monkeypatch.delenv("INVLAB_QUICK", raising=False)
    assert notebook.lesson_steps(600) == 600
    monkeypatch.setenv("INVLAB_QUICK", "1")
    assert notebook.lesson_steps(600) == 60
    assert notebook.lesson_steps(60) == 10


def test_widgets_and_settings_stay_in_step_both_ways():
    from invlab.dashboard import Explorer

    explorer = Explorer(store=False)
    explorer.controls()
    control = explorer.page.train_group.controls["learning_rate"]
    explorer.train.learning_rate = 0.0123
    assert control.box.value == pytest.approx(0.0123)
    control.box.value = 0.005
    assert explorer.train.learning_rate == pytest.approx(0.005)
    explorer.close()


def test_deleting_the_last_output_closes_the_explorer():
    from invlab.dashboard import Explorer

    explorer = Explorer(store=False)
    notebook.track(explorer, "root-a")
    notebook.track(explorer, "root-b")
    notebook._close_if_unseen(explorer)
    assert explorer.session.thread.is_alive()  # still shown
    notebook._views.pop("root-a")
    notebook._views.pop("root-b")
    notebook._close_if_unseen(explorer)
    assert not explorer.session.thread.is_alive()


def test_every_cdn_stylesheet_of_an_output_is_replaced():
    from bokeh.models import Column, Div, ImportedStyleSheet
    from panel.io.resources import CDN_DIST

    sheets = [ImportedStyleSheet(url=f"{CDN_DIST}css/listpanel.css"), ImportedStyleSheet(url="https://example.org/a.css")]
    root = Column(children=[Div(text="x", stylesheets=sheets)])
    assert notebook.inline_stylesheets(root) == 1
    assert sheets[0].url.startswith("data:text/css") and sheets[1].url == "https://example.org/a.css"


def _page_message(*events):
    """A PATCH-DOC message as the page sends it, and a stand-in for the comm manager that assembled it."""
    from bokeh.protocol import Protocol

    message = Protocol().create("PATCH-DOC", list(events))
    return {"content": {}}, type("Manager", (), {"assemble": staticmethod(lambda _msg: message)})()


def test_an_echo_of_an_older_layout_does_not_detach_the_plot_added_since():
    """The page sends back every update the kernel sent it. The echo of a layout's children from before the last
    plot was added must not put the old children back (the new plot would leave the kernel's document and its
    data would never be sent), nor echoed data be appended twice; a value the user typed still comes through."""
    import numpy as np
    import panel as pn
    from bokeh.document import Document
    from bokeh.document.events import ColumnsStreamedEvent, ModelChangedEvent
    from bokeh.plotting import figure

    first, second = figure(), figure()
    source = second.scatter([0], [0]).data_source
    layout = pn.FlexBox(pn.pane.Bokeh(first))
    box = pn.widgets.FloatInput(value=1.0)
    view = NotebookView(layout, box)
    doc = Document()
    root = view.get_root(doc)
    doc.add_root(root)
    ref = root.ref["id"]
    pn.state._views[ref] = (view, root, doc, None)
    try:
        flex = layout._models[ref][0]
        old_children = flex.children
        layout.append(pn.pane.Bokeh(second))
        assert second.document is doc
        points = len(source.data["x"])
        echo = [ModelChangedEvent(doc, flex, "children", old_children),
                ColumnsStreamedEvent(doc, source, "data", {"x": np.array([1.0]), "y": np.array([1.0])}, None),
                ModelChangedEvent(doc, box._models[ref][0], "value", 2.5)]
        msg, manager = _page_message(*echo)
        view._apply_msg(ref, manager, msg)
        assert second.document is doc
        assert second in flex.children["flex-item"]
        assert len(source.data["x"]) == points
        assert box.value == 2.5
    finally:
        pn.state._views.pop(ref, None)
        view._cleanup(root)


def test_page_changes_keep_what_the_page_authors():
    kept = [{"kind": "ModelChanged", "model": {"id": "w"}, "attr": "value", "new": 0.5},
            {"kind": "ModelChanged", "model": {"id": "r"}, "attr": "start", "new": -3.0},
            {"kind": "ModelChanged", "model": {"id": "s"}, "attr": "indices", "new": [1, 2]},
            {"kind": "MessageSent", "msg_type": "bokeh_event",
             "msg_data": {"name": "button_click", "values": {"type": "map", "entries": [["model", {"id": "b"}]]}}}]
    dropped = [{"kind": "ModelChanged", "model": {"id": "f"}, "attr": "children", "new": [{"id": "p"}]},
               {"kind": "ModelChanged", "model": {"id": "t"}, "attr": "tooltips",
                "new": [{"type": "object", "id": "x"}]},
               {"kind": "ModelChanged", "model": {"id": "h"}, "attr": "text", "new": "<b>old</b>"},
               {"kind": "ColumnsStreamed", "model": {"id": "c"}, "attr": "data", "data": {}, "rollover": 10}]
    assert page_changes(kept + dropped) == kept
