"""Every bundled or generated source: shapes, dtypes, label ranges, scaling, determinism."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn import datasets as skdata

from invlab.data import fetch, list_datasets, load
from invlab.data.sources import patch_positions
from invlab.data.synthetic import symmetric_function
from invlab.errors import DataError

# name -> (task, num_classes, image_shape or input dim, small options keeping the test fast)
EXPECTED = {
    "digits": ("classification", 10, (1, 8, 8), {}),
    "rectangles": ("classification", 2, (1, 28, 28), {"num_train": 60, "num_test": 40}),
    "symmetric-2d": ("regression", None, 2, {}),
    "two-moons": ("classification", 2, 2, {}),
    "photo-patches": ("classification", 2, (3, 16, 16), {"num_train": 60, "num_test": 30}),
    "diabetes": ("regression", None, 10, {}),
    "wine": ("classification", 3, 13, {}),
    "breast_cancer": ("classification", 2, 30, {}),
}


def test_list_datasets():
    assert set(list_datasets()) == set(EXPECTED) | {"mnist"}


@pytest.mark.parametrize("name", EXPECTED)
def test_shapes_dtypes_and_labels(name):
    task, classes, shape, options = EXPECTED[name]
    data = load(name, **options)
    assert data.name == name and data.task == task and data.num_classes == classes
    for X, y in ((data.X_train, data.y_train), (data.X_test, data.y_test)):
        assert X.dtype == np.float64 and np.isfinite(X).all()
        assert y.shape == (len(X),)
        if task == "classification":
            assert y.dtype == np.int64 and y.min() >= 0 and y.max() < classes
        else:
            assert y.dtype == np.float64
    if isinstance(shape, tuple):
        assert data.is_image and data.image_shape == shape and data.X_train.shape[1:] == shape
        assert data.input_dim == int(np.prod(shape))
        assert data.X_train.min() >= 0 and data.X_train.max() <= 1
    else:
        assert not data.is_image and data.image_shape is None and data.X_train.shape[1] == shape == data.input_dim
    if task == "classification":
        assert len(data.class_names) == classes
        assert set(np.unique(data.y_train)) == set(range(classes))  # every class is present
    assert data.num_train == len(data.X_train) and data.num_test == len(data.X_test)
    assert name in data.summary() and data.description


@pytest.mark.parametrize("name", EXPECTED)
def test_same_seed_same_bytes_other_seed_differs(name):
    options = EXPECTED[name][3]
    a, b = load(name, seed=3, **options), load(name, seed=3, **options)
    for part in ("X_train", "y_train", "X_test", "y_test"):
        assert getattr(a, part).tobytes() == getattr(b, part).tobytes()
    c = load(name, seed=4, **options)
    assert a.X_train.tobytes() != c.X_train.tobytes()


def test_digits_values_and_default_split():
    data = load("digits")
    assert (data.num_train, data.num_test) == (1348, 449)  # 25 % of 1,797
    everything = skdata.load_digits().images.reshape(-1, 8, 8) / 16.0
    rows = {x.tobytes() for x in everything}
    assert all(x[0].tobytes() in rows for x in data.X_test[:20])


def test_digits_are_scikit_learns_digits_read_without_importing_it():
    """The source reads the file scikit-learn's `load_digits` reads: the same images and labels in the same order;
    and a process that trains on digits never imports scikit-learn (about a second of CPU at every start)."""
    import subprocess
    import sys

    from invlab.data.sources import SOURCES

    raw = SOURCES["digits"].make(None, 0, 0.25)
    bunch = skdata.load_digits()
    np.testing.assert_array_equal(raw.X_train, bunch.images[:, None] / 16.0)
    np.testing.assert_array_equal(raw.y_train, bunch.target)
    assert raw.y_train.dtype == bunch.target.dtype and raw.X_test is None
    code = ("import sys; import invlab.train; from invlab.data import load; load('digits'); "
            "print(sorted(m for m in ('sklearn', 'scipy.stats') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout


@pytest.mark.parametrize("name", ["wine", "breast_cancer", "diabetes"])
def test_tabular_is_standardised_with_training_statistics(name):
    data = load(name)
    np.testing.assert_allclose(data.X_train.mean(0), 0, atol=1e-10)
    np.testing.assert_allclose(data.X_train.std(0), 1, atol=1e-10)
    assert np.abs(data.X_test.mean(0)).max() > 1e-6  # test uses the training statistics, not its own


def test_regression_targets_are_standardised_and_recoverable():
    data = load("diabetes")
    assert abs(data.y_train.mean()) < 1e-10 and abs(data.y_train.std() - 1) < 1e-10
    original = data.y_train * data.y_std + data.y_mean
    targets = skdata.load_diabetes().target
    assert np.isin(np.round(original, 6), np.round(targets, 6)).all()
    assert 140 < data.y_mean < 165 and 70 < data.y_std < 85


def test_rectangles_are_one_pixel_outlines_labelled_by_orientation():
    data = load("rectangles", num_train=200, num_test=10)
    assert set(np.unique(data.X_train)) <= {0.0, 1.0}
    for image, label in zip(data.X_train[:, 0], data.y_train):
        rows, cols = np.flatnonzero(image.any(1)), np.flatnonzero(image.any(0))
        height, width = rows[-1] - rows[0] + 1, cols[-1] - cols[0] + 1
        assert abs(height - width) >= 3 and label == int(height > width)  # Larochelle et al.'s gap rule
        assert image.sum() == 2 * height + 2 * width - 4  # only the border is drawn
        assert image[rows[0] + 1 : rows[-1], cols[0] + 1 : cols[-1]].sum() == 0
    assert 60 < data.y_train.sum() < 140  # both labels common
    assert load("rectangles", num_train=5, num_test=5, image_size=12).image_shape == (1, 12, 12)


def test_rectangles_gap_option_admits_near_squares_and_refuses_impossible_gaps():
    data = load("rectangles", num_train=400, num_test=5, min_side_gap=1)
    rows, cols = data.X_train[:, 0].any(2), data.X_train[:, 0].any(1)  # [n, H] and [n, W] occupied lines
    gaps = np.abs(rows.sum(1) - cols.sum(1))
    assert gaps.min() == 1 and (gaps < 3).mean() > 0.05  # near-squares are common without the rule
    with pytest.raises(DataError, match=r"min_side_gap=6 leaves no rectangle in a 8×8 image.*min_side_gap ≤ 5"):
        load("rectangles", num_train=5, num_test=5, image_size=8, min_side_gap=6)


def test_rectangles_default_sizes_follow_the_paper():
    data = load("rectangles", test_subset=10)
    assert data.num_train == 1200


def test_symmetric_2d_is_invariant_to_swapping_and_kept_on_raw_scale():
    data = load("symmetric-2d", noise=0.0, num_train=50, num_test=300)
    assert data.X_train.min() >= -3 and data.X_train.max() <= 3 and data.X_test.std() > 1  # not standardised
    X = data.X_test
    np.testing.assert_allclose(symmetric_function(X), symmetric_function(X[:, ::-1]), atol=1e-12)
    np.testing.assert_allclose(data.y_test * data.y_std + data.y_mean, symmetric_function(X), atol=1e-12)
    assert symmetric_function(np.array([[0.3, -1.2]])) != symmetric_function(np.array([[0.3, 1.2]]))
    noisy = load("symmetric-2d", noise=0.5, num_train=50, num_test=300)
    assert noisy.X_test.tobytes() == data.X_test.tobytes()  # the noise level only changes the targets
    one_sided = load("symmetric-2d", one_sided=True)
    assert (one_sided.X_train[:, 0] >= one_sided.X_train[:, 1]).all()
    assert (one_sided.X_test[:, 0] < one_sided.X_test[:, 1]).any()


def test_two_moons_raw_scale_and_noise_option():
    clean = load("two-moons", noise=0.0)
    assert clean.X_train[:, 0].min() >= -1 - 1e-12 and clean.X_train[:, 0].max() <= 2 + 1e-12
    radius = np.hypot(*(clean.X_train[clean.y_train == 0].T))  # upper moon: points on the unit circle
    np.testing.assert_allclose(radius, 1.0)
    noisy = load("two-moons", noise=0.3)
    assert not np.allclose(np.hypot(*(noisy.X_train[noisy.y_train == 0].T)), 1.0)
    assert load("two_moons").name == "two-moons"  # '_' and '-' both accepted


def test_photo_patches_size_labels_and_pixels():
    data = load("photo-patches", num_train=21, num_test=10, patch_size=8)
    assert data.X_train.shape == (21, 3, 8, 8) and data.class_names == ["china", "flower"]
    assert np.bincount(data.y_train).tolist() == [11, 10] and np.bincount(data.y_test).tolist() == [5, 5]
    np.testing.assert_allclose(np.rint(data.X_train * 255), data.X_train * 255, atol=1e-9)  # photo bytes / 255
    default = load("photo-patches", test_subset=2)
    assert default.num_train == 1000 and default.image_shape == (3, 16, 16)


@pytest.mark.parametrize("size", [4, 16, 64])
def test_photo_patch_positions_never_overlap_between_train_and_test(size):
    generator = np.random.default_rng(0)
    positions = patch_positions((427, 640, 3), size, {"train": 400, "test": 200}, 0.25, generator)
    (top, left), (t_top, t_left) = positions["train"], positions["test"]
    for t, l in ((top, left), (t_top, t_left)):
        assert t.min() >= 0 and l.min() >= 0 and (t + size).max() <= 427 and (l + size).max() <= 640
    rows_overlap = (top[:, None] < t_top[None] + size) & (t_top[None] < top[:, None] + size)
    cols_overlap = (left[:, None] < t_left[None] + size) & (t_left[None] < left[:, None] + size)
    assert not (rows_overlap & cols_overlap).any()


def test_unknown_dataset_lists_the_valid_names():
    with pytest.raises(DataError, match="unknown dataset 'cifar'.*digits.*two-moons.*idx:"):
        load("cifar")


def test_fetch_only_mnist():
    with pytest.raises(DataError, match="needs no fetch"):
        fetch("digits")
    with pytest.raises(DataError, match="unknown dataset 'cifar'"):
        fetch("cifar")
