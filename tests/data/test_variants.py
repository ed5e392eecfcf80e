"""Variants chosen by options: rotation, odd/even, class selection, subsets and splits."""
from __future__ import annotations

import numpy as np
import pytest

from invlab.data import load, variants
from invlab.errors import DataError


def test_rotate_zero_is_the_identity():
    plain, zero = load("digits", seed=2), load("digits", rotate=0, seed=2)
    assert plain.X_train.tobytes() == zero.X_train.tobytes() and plain.X_test.tobytes() == zero.X_test.tobytes()
    assert "angles_train" not in zero.metadata


def test_rotate_180_changes_images_and_keeps_shapes():
    plain, rotated = load("digits"), load("digits", rotate=180)
    assert rotated.X_train.shape == plain.X_train.shape and rotated.X_test.shape == plain.X_test.shape
    assert not np.allclose(rotated.X_train, plain.X_train)
    assert rotated.X_train.min() >= 0 and rotated.X_train.max() <= 1
    np.testing.assert_array_equal(rotated.y_train, plain.y_train)  # rotation never moves points around


def test_rotation_angles_are_drawn_within_the_range_and_applied():
    alpha = 15.0
    plain, rotated = load("digits", seed=5), load("digits", rotate=alpha, seed=5)
    angles = rotated.metadata["angles_train"]
    assert angles.shape == (plain.num_train,) and rotated.metadata["angles_test"].shape == (plain.num_test,)
    assert np.abs(angles).max() <= alpha and angles.min() < -alpha / 2 and angles.max() > alpha / 2
    assert rotated.options["rotate"] == alpha
    np.testing.assert_array_equal(rotated.X_train[:10], variants.rotate_images(plain.X_train[:10], angles[:10]))


def test_rotation_convention_is_counter_clockwise_as_displayed():
    image = np.zeros((1, 1, 9, 9))
    image[0, 0, 4, 7] = 1.0  # right of the centre
    turned = variants.rotate_images(image, np.array([90.0]))[0, 0]
    assert np.unravel_index(turned.argmax(), turned.shape) == (1, 4)  # now above the centre (row 0 on top)


def test_rotation_applies_to_images_only():
    with pytest.raises(DataError, match="rotate=10.*images only.*'wine'"):
        load("wine", rotate=10)
    with pytest.raises(DataError, match="images only"):
        load("two-moons", rotate=1)
    load("wine", rotate=0)  # a no-op is fine


def test_odd_even_relabels_digits():
    plain, parity = load("digits", seed=1), load("digits", odd_even=True, seed=1)
    np.testing.assert_array_equal(parity.y_train, plain.y_train % 2)
    np.testing.assert_array_equal(parity.X_train, plain.X_train)
    assert parity.num_classes == 2 and parity.class_names == ["even", "odd"]
    with pytest.raises(DataError, match="odd_even applies to digit datasets.*'rectangles'"):
        load("rectangles", odd_even=True)


def test_classes_select_and_relabel_in_the_given_order():
    plain, pair = load("digits"), load("digits", classes=[9, 4])
    keep = np.isin(plain.y_train, [9, 4])
    np.testing.assert_array_equal(pair.X_train, plain.X_train[keep])
    np.testing.assert_array_equal(pair.y_train, np.where(plain.y_train[keep] == 9, 0, 1))
    assert pair.class_names == ["9", "4"] and pair.num_classes == 2
    assert set(np.unique(pair.y_test)) == {0, 1}
    wine = load("wine", classes=[2, 0])
    assert wine.class_names == ["class_2", "class_0"]


def test_classes_with_odd_even_uses_the_digits_kept():
    data = load("digits", classes=[0, 1, 2, 3], odd_even=True)
    plain = load("digits", classes=[0, 1, 2, 3])
    np.testing.assert_array_equal(data.y_train, plain.y_train % 2)
    with pytest.raises(DataError, match="leaves only odd digits"):
        load("digits", classes=[1, 3], odd_even=True)


@pytest.mark.parametrize(
    "classes,message",
    [([4, 4], "twice"), ([4], "fewer than two"), ([4, 12], r"\[12\] not in digits")],
)
def test_bad_classes(classes, message):
    with pytest.raises(DataError, match=message):
        load("digits", classes=classes)


def test_classes_do_not_apply_to_regression():
    with pytest.raises(DataError, match="classes applies to classification"):
        load("diabetes", classes=[0, 1])


def test_subset_is_stratified_and_seeded():
    full = load("digits")
    small = load("digits", subset=200)
    assert small.num_train == 200 and small.num_test == full.num_test
    expected = 200 * np.bincount(full.y_train) / full.num_train
    assert np.abs(np.bincount(small.y_train, minlength=10) - expected).max() < 1
    rows = {x.tobytes() for x in full.X_train}
    assert all(x.tobytes() in rows for x in small.X_train)  # a subset of the training set
    other = load("digits", subset=200, seed=1)
    assert small.X_train.tobytes() != other.X_train.tobytes()
    assert load("digits", subset=200).X_train.tobytes() == small.X_train.tobytes()


def test_test_subset_and_regression_subset():
    data = load("digits", test_subset=50)
    assert data.num_test == 50 and np.bincount(data.y_test).min() >= 4
    assert load("diabetes", subset=40).num_train == 40


def test_subset_larger_than_available_is_refused():
    with pytest.raises(DataError, match=r"subset=5000 but 'digits' has only 1,348 points.*subset ≤ 1348"):
        load("digits", subset=5000)
    with pytest.raises(DataError, match="test_subset=1000"):
        load("digits", test_subset=1000)


def test_test_fraction_sets_the_split_and_is_stratified():
    data = load("digits", test_fraction=0.5)
    assert data.num_test in (898, 899) and data.num_train + data.num_test == 1797
    all_labels = np.concatenate([data.y_train, data.y_test])
    assert np.abs(np.bincount(data.y_test) - np.bincount(all_labels) / 2).max() <= 1
    a, b = load("digits", seed=0), load("digits", seed=1)
    assert a.X_test.tobytes() != b.X_test.tobytes()


def test_test_fraction_does_not_apply_to_fixed_test_sets():
    with pytest.raises(DataError, match="fixed test set, so test_fraction does not apply"):
        load("two-moons", test_fraction=0.5)
    load("photo-patches", test_fraction=0.5, num_train=10, num_test=10)  # it sets the test area there


def test_stratified_choice_keeps_proportions():
    y = np.repeat([0, 1, 2], [600, 300, 100])
    chosen = variants.stratified_choice(y, 100, np.random.default_rng(0))
    assert np.bincount(y[chosen]).tolist() == [60, 30, 10]
    assert len(np.unique(chosen)) == 100


def test_split_is_disjoint_and_complete():
    y = np.repeat(np.arange(4), 25)
    train, test = variants.split(y, 0.2, np.random.default_rng(0), stratify=True)
    assert len(test) == 20 and np.bincount(y[test]).tolist() == [5] * 4
    assert sorted(np.concatenate([train, test]).tolist()) == list(range(100))


def test_standardise_keeps_constant_columns_finite():
    train = np.array([[1.0, 5.0], [3.0, 5.0]])
    scaled, test, mean, std = variants.standardise(train, np.array([[2.0, 6.0]]))
    np.testing.assert_allclose(scaled, [[-1, 0], [1, 0]])
    np.testing.assert_allclose(test, [[0, 1]])
