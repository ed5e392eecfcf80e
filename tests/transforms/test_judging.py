"""Judging learned ranges against hand computations: a range that leaves out the identity is a fixed warp, one whose
ends move no pixel by half a pixel or more is no invariance, the rest are invariances; a combination's renamed keys
are judged by the part they belong to, and an unknown key is never called negligible."""
import math

import pytest

from invlab.transforms.judging import NEGLIGIBLE_PIXELS, RangeJudgement, RangeKind, judge_ranges

MNIST = (1, 28, 28)


def one(values, shape=MNIST, augmentation="affine") -> RangeJudgement:
    (judgement,) = judge_ranges(values, shape, augmentation)
    return judgement


def test_rotation_of_two_degrees_is_under_half_a_pixel_and_three_is_an_invariance():
    j = one({"rotation": 2.0}, augmentation="rotation")
    assert j.reach == pytest.approx(14 * 2 * math.pi / 180) and j.reach == pytest.approx(0.4887, abs=1e-4)
    assert j.kind is RangeKind.NEGLIGIBLE and (j.lo, j.hi) == (-2.0, 2.0)
    assert j.words() == "no invariance in rotation (under half a pixel)"
    j = one({"rotation": 3.0}, augmentation="rotation")
    assert j.kind is RangeKind.INVARIANCE and j.reach == pytest.approx(0.733, abs=1e-3)
    assert j.words() == "rotation [−3°, 3°]"
    # the sign of a symmetric half-width does not matter
    assert one({"rotation": -44.2}, augmentation="rotation").words() == "rotation [−44.2°, 44.2°]"


def test_a_range_that_leaves_out_the_identity_is_a_warp():
    j = one({"shear.lo": 0.074, "shear.hi": 0.088})
    assert j.kind is RangeKind.WARP and j.reach == pytest.approx(14 * 0.088)
    assert j.words() == "shear [0.074, 0.088] leaves out 0 (no change): a fixed warp, not an invariance"
    j = one({"scale_x.lo": 0.125, "scale_x.hi": 0.161})
    assert j.kind is RangeKind.WARP and j.reach == pytest.approx(14 * (math.exp(0.161) - 1))
    assert j.words() == "scale_x [0.125, 0.161] leaves out 0 (no change): a fixed warp, not an invariance"
    # below the identity too, in degrees; crossed ends are ordered
    j = one({"rotation.lo": -1.2, "rotation.hi": -3.6})
    assert j.kind is RangeKind.WARP and (j.lo, j.hi) == (-3.6, -1.2)
    assert j.words() == "rotation [−3.6°, −1.2°] leaves out 0 (no change): a fixed warp, not an invariance"


def test_translation_reach_is_the_shift_in_pixels():
    j = one({"translate_x.lo": -0.01, "translate_x.hi": 0.01})
    assert j.reach == pytest.approx(0.28) and j.kind is RangeKind.NEGLIGIBLE
    # on a wide image the horizontal shift counts the width, the vertical one the height
    wide = judge_ranges({"translate_x.lo": -0.01, "translate_x.hi": 0.02, "translate_y.lo": -0.01,
                         "translate_y.hi": 0.02}, (3, 10, 50), "affine")
    assert [j.reach for j in wide] == [pytest.approx(1.0), pytest.approx(0.2)]
    assert [j.kind for j in wide] == [RangeKind.INVARIANCE, RangeKind.NEGLIGIBLE]


def test_a_warp_under_half_a_pixel_is_no_invariance_and_no_warp_either():
    j = one({"shear.lo": 0.001, "shear.hi": 0.002})
    assert j.reach == pytest.approx(0.028) and j.kind is RangeKind.NEGLIGIBLE


def test_scale_reach_takes_the_farther_end():
    j = one({"scale_y.lo": -0.5, "scale_y.hi": 0.02})
    assert j.reach == pytest.approx(14 * (1 - math.exp(-0.5)))
    assert j.kind is RangeKind.INVARIANCE and j.words() == "scale_y [−0.5, 0.02]"


def test_the_deformation_strengths():
    values = {"strength": 0.4, "rotation": 20.0, "scale": 0.01}
    strength, rotation, scale = judge_ranges(values, MNIST, "deformation")
    assert strength.reach == pytest.approx(0.4) and strength.kind is RangeKind.NEGLIGIBLE
    assert strength.unit == "pixels"
    # the local jitter turns a window of radius 0.3·28 = 8.4 px; it moves a pixel most at that radius, by e^−½ of it
    radius = 0.3 * 28 * math.exp(-0.5)
    assert rotation.reach == pytest.approx(radius * 20 * math.pi / 180) and rotation.kind is RangeKind.INVARIANCE
    assert scale.reach == pytest.approx(radius * (math.exp(0.01) - 1)) and scale.kind is RangeKind.NEGLIGIBLE
    assert strength.words() == "no invariance in strength (under half a pixel)"
    assert rotation.words() == "rotation [−20°, 20°]"


def test_a_combination_maps_renamed_keys_back_to_their_part():
    values = {"rotation": 30.0, "affine_rotation.lo": -0.1, "affine_rotation.hi": 0.1, "scale_x.lo": 0.2,
              "scale_x.hi": 0.3}
    judged = {j.name: j for j in judge_ranges(values, MNIST, "rotation+affine")}
    assert list(judged) == ["rotation", "affine_rotation", "scale_x"]
    assert judged["rotation"].kind is RangeKind.INVARIANCE
    assert judged["affine_rotation"].reach == pytest.approx(14 * 0.1 * math.pi / 180)
    assert judged["affine_rotation"].kind is RangeKind.NEGLIGIBLE and judged["affine_rotation"].unit == "degrees"
    assert judged["scale_x"].kind is RangeKind.WARP
    # affine then deformation: the deformation's rotation is renamed and turns only its window
    later = {j.name: j for j in judge_ranges({"rotation": 3.0, "deformation_rotation": 3.0}, MNIST,
                                              "affine+deformation")}
    assert later["rotation"].kind is RangeKind.INVARIANCE
    assert later["deformation_rotation"].kind is RangeKind.NEGLIGIBLE
    # a finite orbit after a density adds no ranges; a candidate's coordinates are no part of its name
    assert one({"rotation": 3.0}, augmentation="rotation+flips").kind is RangeKind.INVARIANCE


def test_an_unknown_key_is_never_negligible_but_still_a_warp():
    j = one({"twist": 1e-6}, augmentation="my_plugin")
    assert j.reach is None and j.kind is RangeKind.INVARIANCE and j.unit == ""
    assert j.words() == "twist [−1e-06, 1e-06]"
    j = one({"twist.lo": 0.3, "twist.hi": 0.5}, augmentation="my_plugin")
    assert j.kind is RangeKind.WARP
    # a plugin's key named like a built-in's is the plugin's own (its unit unknown)
    assert one({"rotation": 0.1}, augmentation="my_plugin").reach is None
    # vector inputs, or no shape known: nothing is measured in pixels
    assert one({"rotation": 0.1}, shape=(5,), augmentation="rotation").reach is None
    assert one({"rotation": 0.1}, shape=None, augmentation="rotation").kind is RangeKind.INVARIANCE


def test_no_augmentation_named_reads_the_built_in_names():
    assert one({"shear.lo": -0.01, "shear.hi": 0.01}, augmentation="").kind is RangeKind.NEGLIGIBLE
    assert one({"strength": 2.0}, augmentation="").reach == pytest.approx(2.0)


def test_threshold_and_kinds():
    assert NEGLIGIBLE_PIXELS == 0.5
    assert [k.value for k in RangeKind] == ["invariance", "negligible", "warp"]
    assert RangeKind.WARP == "warp"  # stored and compared as its word
