"""A family a plugin registers shows its own words, page defaults, loss-term labels and learned-range labels on the
Training page without any dashboard code of its own: the page reads them from the family's registry entry
(`ModelSpec`). Headless: the Explorer's text and its curve board's labels."""
from __future__ import annotations

import pytest

from invlab.dashboard.state.defaults import FAMILY_DATASETS, FAMILY_DEFAULTS, page_run_config
from invlab.dashboard.views.curve_names import axis_label, curve_title
from invlab.dashboard.views.style import RANGE_UNITS, metric_spec, shows_curve
from invlab.dashboard.words import family_label, family_sentence
from invlab.models import register
from invlab.registry import snapshot
from tests.models.test_family_entries import WIGGLE


@pytest.fixture
def wiggle():
    """The test family registered, everything it registered undone after."""
    saved = snapshot()
    register(WIGGLE)
    try:
        yield WIGGLE
    finally:
        saved.restore()


def test_the_page_reads_a_plugin_familys_words_defaults_and_labels_from_its_entry(wiggle):
    assert family_label("wiggle-gp") == "wiggle-gp — wiggly GP"
    assert family_sentence("wiggle-gp") == ("wiggle-gp — wiggly GP: a GP that logs how much it wiggles "
                                            "(Nobody (2099), “Wiggles”).")
    assert FAMILY_DATASETS["wiggle-gp"] == "two-moons"
    assert FAMILY_DEFAULTS["wiggle-gp"]["model"] == {"num_inducing": 12}
    config = page_run_config("wiggle-gp")
    assert config.data == {"dataset": "two-moons"} and config.train["batch_size"] == 32
    assert curve_title("wiggle") == "Wiggle room" and axis_label("wiggle") == "wiggle room (nats)"
    assert shows_curve("wiggle")
    assert metric_spec("range.twist").label == "twist angle range (°)" and not shows_curve("range.twist")
    assert RANGE_UNITS.get("twist") == "°"


def test_the_explorer_shows_the_plugin_familys_sentence_and_starts_on_its_data(wiggle):
    from invlab.dashboard import Explorer
    from invlab.dashboard.state.settings import RunSettings

    if "wiggle-gp" not in RunSettings.param.model.objects:  # a plugin loaded before the page: its family a choice
        RunSettings.param.model.objects.append("wiggle-gp")
    e = Explorer(store=False)
    try:
        e.__panel__()
        e.settings.model = "wiggle-gp"
        e.page.mark_not_applicable()
        assert "a GP that logs how much it wiggles" in e.page.family_words.object
        assert e.settings.data.dataset == "two-moons"
        assert e.settings.model_config.num_inducing == 12
    finally:
        e.close()
        RunSettings.param.model.objects.remove("wiggle-gp")


def test_the_built_in_families_words_and_defaults_still_show():
    assert family_label("invariant") == "invariant — invariant GP"
    assert "van der Wilk, Bauer, John & Hensman (2018)" in family_sentence("invariant")
    assert FAMILY_DATASETS["conv-colour"] == "photo-patches"
    assert metric_spec("w2").label == "Ŵ² (squared Wasserstein distance)" and not shows_curve("w2")
    assert metric_spec("range.rotation").label == "rotation range (°)"
    assert RANGE_UNITS.get("strength") == "px"
