"""Which controls do nothing with the current settings (`invlab.dashboard.words.not_applicable`), checked without a
browser; tests/browser/test_words_browser.py checks how the page shows it."""
from invlab.dashboard.state.settings import RunSettings
from invlab.dashboard.words import not_applicable
from invlab.train import RunConfig


def settings_for(**model) -> RunSettings:
    config = RunConfig(model="invariant", data={"dataset": "two_moons"}, model_config=model)
    return RunSettings(config)


def test_orbit_coordinates_apply_only_to_the_orbits_that_act_on_coordinates():
    reason = not_applicable(settings_for(augmentation="rotation"))["model.orbit_coordinates"]
    assert "permutations and sign_flips" in reason and "rotation" in reason
    assert "model.orbit_coordinates" not in not_applicable(settings_for(augmentation="permutations"))
    assert "model.orbit_coordinates" not in not_applicable(settings_for(augmentation="rotation",
                                                                        then_augmentation="sign_flips"))


def test_odd_even_applies_to_digits_and_classes_to_classification_only():
    def reasons(dataset):
        return not_applicable(RunSettings(RunConfig(model="svgp", data={"dataset": dataset})))

    assert "data.odd_even" not in reasons("digits") and "data.classes" not in reasons("digits")
    regression = reasons("diabetes")
    assert "diabetes" in regression["data.odd_even"] and "digit" in regression["data.odd_even"]
    assert "regression" in regression["data.classes"]
    moons = reasons("two-moons")  # classes, but not digits
    assert "data.odd_even" in moons and "data.classes" not in moons


def test_ranges_around_the_identity_apply_only_where_an_affine_range_is_learned():
    reason = not_applicable(settings_for(augmentation="rotation"))["model.ranges_around_identity"]
    assert "affine" in reason and "rotation" in reason
    assert "model.ranges_around_identity" not in not_applicable(settings_for(augmentation="affine"))
    assert "model.ranges_around_identity" not in not_applicable(settings_for(augmentation="flips",
                                                                            then_augmentation="affine"))
