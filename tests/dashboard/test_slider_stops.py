"""The Deep kernel prior page's δ slider (lesson 5) stops at evenly spaced values of log δ, lands exactly on the
values the lesson names, and has a box beside it that takes an exact δ, like the Training page's log sliders; the
Training page's Subset box says "all" when no subset is set, as the Classes box does."""
from __future__ import annotations

import math

import numpy as np
import param
import pytest

from invlab.dashboard.controls.groups import data_controls
from invlab.dashboard.prior.page import PriorPanel
from invlab.data.loader import DataConfig
from invlab.models.dkp import PriorExplorer


def release(slider, position: float) -> None:
    """What the browser sends when the slider's handle is let go at `position`."""
    with param.edit_constant(slider):
        slider.value_throttled = position


@pytest.fixture()
def delta():
    panel = PriorPanel(PriorExplorer(size=60, num_points=30, num_panels=2))
    return panel.delta_control


def test_the_delta_slider_has_even_stops_on_the_log_scale(delta):
    slider = delta.slider
    assert delta.label == "δ (log scale)" and delta.kind == "log-slider"
    stops = np.arange(slider.start, slider.end + slider.step / 2, slider.step)
    assert slider.step == pytest.approx(0.1)  # ten stops a decade: each ×1.26 the one before
    assert 20 <= len(stops) <= 60, len(stops)
    values = []
    for position in stops:  # every stop, as released
        release(slider, float(position))
        values.append(delta.obj.delta)
    ratios = np.diff(np.log10(values))
    assert ratios.min() > 0.07 and ratios.max() < 0.13, ratios  # even, to the rounding of what is shown
    assert values[-1] == 1000.0 and 10.0 in values and 1.0 in values  # the lesson's 1000 and 10 are stops


def test_the_delta_box_beside_the_slider_takes_an_exact_value_and_explains_a_refusal(delta):
    assert delta.box.value == 20.0 and delta.slider.value == pytest.approx(math.log10(20.0))
    delta.box.value = 12.5  # typed and Enter
    assert delta.obj.delta == 12.5 and delta.slider.value == pytest.approx(math.log10(12.5))
    delta.box.value = -3.0
    assert delta.obj.delta == 12.5 and delta.box.value == 12.5
    assert "δ (log scale) can't be -3" in delta.error and "Kept 12.5" in delta.error
    delta.obj.delta = 1000.0  # a lesson's link sets it: both follow
    assert delta.box.value == 1000.0 and delta.slider.value == pytest.approx(3.0)


def test_subset_shows_all_when_no_subset_is_set_as_classes_does():
    config = DataConfig()
    controls = data_controls(config).controls
    classes, subset = controls["classes"], controls["subset"]
    assert classes.box.value == "" and classes.box.placeholder == "all"
    assert config.subset == 0
    assert subset.box.value is None and subset.box.placeholder == "all"  # not 0
    config.subset = 200
    assert subset.box.value == 200
    subset.box.value = None  # the user empties the box
    assert config.subset == 0 and subset.box.value is None and not subset.error
    subset.box.value = 300
    subset.box.value = 0  # typing 0 means all too, and the box then says so
    assert config.subset == 0 and subset.box.value is None and not subset.error
