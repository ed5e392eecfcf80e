"""The page laid out for a projector, headless: presenter mode (the curves' text and lines larger, the status on
rows that wrap between its cells, never inside one, the lesson's steps folded under its title, the page's parts drawn
larger while its plots size themselves) and the lessons' views brought to the first screen. The Chromium tests at
1280×720, 768 px and 1440 px are in tests/browser/test_layout_browser.py."""
import re

from invlab.dashboard.explorer.explorer import Explorer
from invlab.dashboard.explorer.status import StatusBar
from invlab.dashboard.lessons.catalogue import BY_KEY, steps_markdown
from invlab.dashboard.views.curve_plot import NORMAL_SIZES, PRESENTER_SIZES, CurvePlot


def _px(size: str) -> float:
    return float(size[:-2]) * (4 / 3 if size.endswith("pt") else 1)


def test_a_curve_in_presenter_mode_has_larger_text_and_lines_and_goes_back():
    plot = CurvePlot("elbo", length=100)
    fig = plot.figure
    assert fig.title.text_font_size == NORMAL_SIZES["title"]
    plot.enlarge(True)
    assert _px(fig.title.text_font_size) > _px(NORMAL_SIZES["title"])
    assert _px(fig.yaxis[0].major_label_text_font_size) > _px(NORMAL_SIZES["ticks"])
    assert _px(plot.legend.label_text_font_size) > _px(NORMAL_SIZES["legend"])
    assert plot.line.glyph.line_width == PRESENTER_SIZES["line"] > NORMAL_SIZES["line"]
    plot.rebuild(True, [1, 2], [-3.0, -2.0])  # a log axis: a new figure, still large
    assert plot.figure.xaxis[0].axis_label_text_font_size == PRESENTER_SIZES["label"]
    plot.enlarge(False)
    assert plot.figure.title.text_font_size == NORMAL_SIZES["title"]


def test_the_wrapped_status_breaks_between_cells_only_and_keeps_every_field():
    bar = StatusBar(state="running", run="invariant on digits", step=640, total=5000, steps_per_sec=78.6,
                    device="cpu", dtype="float64", learning_rate=0.01, jitter=1e-6, condition=229.0)
    plain = bar.html()
    bar.wrap = True
    wrapped = bar.pane.object
    assert wrapped == bar.html() != plain
    lines = re.findall(r'<div style="([^"]*)">(.*?)</div>', wrapped)[:2]
    for style, body in lines:
        assert "height:2.9em" in style and "white-space:normal" in style
        cells = re.findall(r'<span style="white-space:nowrap">', body)
        assert len(cells) >= 4, body
    for field in ("state", "step", "total", "rate", "lr", "jitter", "condition"):  # every field still there
        assert f'data-field="{field}"' in wrapped


def test_folded_steps_keep_every_step_in_a_closed_disclosure():
    lesson = BY_KEY["rotation"]
    folded = steps_markdown(lesson, folded=True)
    assert "<details>" in folded and "open" not in folded.split("<details>")[1].split(">")[0]
    assert f"The lesson's {len(lesson.steps)} steps" in folded
    plain = steps_markdown(lesson)
    for line in plain.splitlines():
        assert line in folded.splitlines()


def test_presenter_mode_enlarges_the_parts_but_never_a_plot():
    explorer = Explorer(presenter=True)
    explorer.__panel__()
    assert explorer.curves.large and explorer.status.wrap
    zoomed = [part for part in explorer.page.enlarged if (part.styles or {}).get("zoom") not in (None, "1")]
    assert explorer.status.pane in zoomed and len(zoomed) == len(explorer.page.enlarged)
    assert (explorer.curves.layout.styles or {}).get("zoom") in (None, "1")
    assert (explorer.page.pages.styles or {}).get("zoom") in (None, "1")  # the plots are inside the pages
    explorer.presenter = False
    assert not explorer.curves.large and not explorer.status.wrap
    assert all(part.styles.get("zoom") == "1" for part in explorer.page.enlarged)
    explorer.close()



def test_a_lesson_watches_what_each_of_its_steps_points_at():
    """Lesson 6's second step promises the learned range climbing on the Training page: that view is brought to
    the first screen like a key view (it used to sit below every other view)."""
    from invlab.dashboard.explorer.layout import key_view_names

    assert "range.rotation" in key_view_names(BY_KEY["discover"])
    assert {"elbo", "range.rotation"} <= key_view_names(BY_KEY["rotation"])


def test_a_page_and_a_tab_of_controls_are_drawn_when_first_opened():
    """The browser builds the page it shows, not all four: the Compare page's table and the Optimisation tab's
    learning rate are not in the document until opened; the hidden parts every page needs always are; a notice is
    shown on the prior and Compare pages too."""
    from bokeh.document import Document
    from panel.io.state import set_curdoc
    from panel.models.tabulator import DataTabulator

    explorer = Explorer(store=None)
    doc = Document()
    try:
        with set_curdoc(doc):
            doc.add_root(explorer.__panel__().get_root(doc))
            assert explorer.page.pages.active == 1  # a bare link lands on the lessons: the Training page is not drawn
            assert not [m for m in doc.models if str(getattr(m, "title", None)).startswith("Dataset")]
            explorer.page.pages.active = 0
            # the first tab's controls
            assert [m for m in doc.models if str(getattr(m, "title", None)).startswith("Dataset")]

            def titles():
                return {m.title for m in doc.models if isinstance(getattr(m, "title", None), str)}

            assert not [m for m in doc.models if isinstance(m, DataTabulator)]
            assert not any(str(t).startswith("Learning rate") for t in titles())
            for part in (explorer.link.url_field, explorer.theme_switch.field, explorer.view_watch):
                assert any(model.document is doc for model, _ in part._models.values()), part
            sidebar = explorer.page.pages[0][0]
            sidebar.active = [tab.name for tab in sidebar].index("Optimisation")
            assert any(str(t).startswith("Learning rate") for t in titles())
            explorer.page.pages.active = 3  # Compare
            assert [m for m in doc.models if isinstance(m, DataTabulator)]
            explorer.notice = "Some settings in the link were refused: x"
            assert all("refused" in pane.object for pane in explorer.page.page_notices)
            notices, pages = explorer.page.page_notices, explorer.page.pages
            assert notices[2] in pages[3] and notices[1] in pages[2]
    finally:
        explorer.close()
