"""View types get their renderer from one registry (`invlab.dashboard.views.register_renderer`): a new view type
registered there is drawn on the page and in a notebook with no edit to the pane that draws it, and a view type no
renderer is registered for shows a sentence saying so on the page instead of breaking it."""
from __future__ import annotations

from dataclasses import dataclass

import holoviews as hv
import numpy as np
import pytest

from invlab import diagnostics as dg
from invlab.dashboard.views import ViewPane, renderer_for
from invlab.registry import snapshot

hv.extension("bokeh")


@dataclass
class Histogram1D(dg.View):
    """A view type the engine does not ship: counts over bins (what a plugin's model might return)."""

    counts: np.ndarray = None


@dataclass
class Unrendered(dg.View):
    """A view type nobody registered a renderer for."""

    payload: int = 0


@pytest.fixture
def rolled_back():
    saved = snapshot()
    yield
    saved.restore()


def _draw_bars(view, look):
    return hv.Bars(list(enumerate(view.counts)), "bin", "count")


def test_a_view_type_registered_in_one_place_is_drawn_by_the_pane_and_the_notebook(rolled_back):
    from invlab.dashboard.notebook.display import show
    from invlab.dashboard.views import register_renderer

    register_renderer(Histogram1D)(_draw_bars)
    view = Histogram1D(title="counts", counts=np.array([3.0, 1.0, 2.0]))
    pane = ViewPane("counts", view)
    element = pane.dmap[()]  # what the page's plot draws
    assert isinstance(element, hv.Bars) and list(element.dimension_values("count")) == [3.0, 1.0, 2.0]
    pane.update(Histogram1D(title="counts", counts=np.array([5.0, 1.0, 2.0])))
    assert list(pane.dmap[()].dimension_values("count")) == [5.0, 1.0, 2.0]
    assert isinstance(show(view), hv.Bars)
    assert renderer_for(view) is not None


def test_a_renderer_is_rolled_back_with_a_failed_plugin():
    from invlab.dashboard.views import register_renderer

    saved = snapshot()
    register_renderer(Histogram1D)(_draw_bars)
    saved.restore()
    assert renderer_for(Histogram1D(title="x", counts=np.zeros(2))) is None


def test_a_view_type_without_a_renderer_says_so_on_the_page():
    view = Unrendered(title="mystery <b>view</b>")
    pane = ViewPane("mystery", view)  # before: TypeError when the page drew it
    text = pane.body.object
    assert "Unrendered" in text and "no renderer" in text and "register_renderer" in text
    assert "<b>view</b>" not in pane.title.object  # the title is escaped like any other
    pane.update(Unrendered(title="mystery <b>view</b>", payload=2))  # a later snapshot: still the sentence
    assert "no renderer" in pane.body.object
    pane.panel.get_root()  # the page can build it


def test_the_built_in_view_types_all_have_renderers():
    for cls in (dg.ImageGrid, dg.Spectrum, dg.Heatmap, dg.Field2D, dg.Scalars, dg.Curves, dg.Scatter):
        assert renderer_for(cls.__new__(cls)) is not None, cls.__name__
