"""The prior page: its sliders in the URL (written when moved, read back from a link), plots updated in place, and a
busy indicator while a redraw is under way."""
import math

import param
import pytest
from bokeh.document import Document
from panel.io.location import Location

from invlab.dashboard import Explorer
from invlab.dashboard.prior.page import PriorPanel, apply_prior_query, prior_query
from invlab.models.dkp import PriorExplorer


def release(widget, value):
    """What a browser does when a throttled slider is dragged to `value` and let go."""
    widget.value = value
    with param.edit_constant(widget):
        widget.value_throttled = value


def test_prior_sliders_reach_the_url_and_a_link_brings_them_back():
    a = Explorer(store=False)
    try:
        a.read_location(Location())
        assert "prior." not in a.link.url_field.value  # defaults are not written
        a.prior.explorer.param.update(delta=3.0, alpha=1.5, num_layers=4)
        query = a.link.url_field.value
        assert "prior.delta=3" in query and "prior.alpha=1.5" in query and "prior.num_layers=4" in query
        b = Explorer(store=False)
        try:
            b.read_location(Location(search=query))
            assert (b.prior.explorer.delta, b.prior.explorer.alpha, b.prior.explorer.num_layers) == (3.0, 1.5, 4)
            assert b.notice == ""
            assert b.link.url_field.value == query
        finally:
            b.close()
    finally:
        a.close()


def test_prior_query_holds_only_what_differs_and_reads_numbers_as_text():
    explorer = PriorExplorer()
    assert prior_query(explorer) == {}
    assert apply_prior_query(explorer, {"delta": "1000", "num_layers": "3"}) == []
    assert prior_query(explorer) == {"prior.delta": "1000", "prior.num_layers": "3"}


def test_a_slider_move_updates_the_plots_in_place_and_is_busy_meanwhile(monkeypatch):
    panel = PriorPanel(PriorExplorer(size=60, num_points=30, num_panels=2))
    panel.__panel__().get_root(Document())
    panel.activate()
    spectrum = panel.panes["inverse_wishart_eigenvalues"]
    source, figure = spectrum.source, spectrum.figure
    before = dict(source.data)
    seen = []
    real = panel.explorer.views

    def views():
        seen.append((panel.busy, panel.spinner.visible))
        return real()

    monkeypatch.setattr(panel.explorer, "views", views)
    release(panel.controls._widgets["delta"].slider, 3.0)  # log10 δ: δ = 1000
    assert seen == [(True, True)]  # the spinner shows while the views are computed
    assert not panel.busy and not panel.spinner.visible
    assert spectrum.source is source and spectrum.figure is figure  # the same plot, new data
    assert list(source.data["top"]) != list(before["top"])
    assert spectrum.view.title.endswith("δ = 1000")
    gram = panel.panes["top_gram"]
    image = gram.source.data["image"][0]
    assert gram.mapper.low <= image.min() and gram.mapper.high >= image.max()  # the colour bar spans the new matrix


def test_a_link_delta_between_the_sliders_steps_is_shown_on_the_slider():
    panel = PriorPanel(PriorExplorer(size=60, num_points=30, num_panels=1))
    assert apply_prior_query(panel.explorer, {"delta": "4"}) == []
    delta = panel.controls._widgets["delta"]  # the exact value in the box, the slider at its log10
    assert panel.explorer.delta == 4.0 and delta.box.value == 4.0 and delta.slider.value == pytest.approx(math.log10(4))
