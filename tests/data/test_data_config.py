"""`DataConfig` parameters and the option checks of `load`, and the `Dataset` container itself."""
from __future__ import annotations

import numpy as np
import pytest

from invlab.data import DataConfig, Dataset, load
from invlab.errors import DataError, ShapeError


def test_defaults_load_digits():
    config = DataConfig()
    assert config.dataset == "digits" and config.rotate == 0 and config.test_fraction == 0.25
    data = config.load()
    assert data.name == "digits" and data.options["seed"] == 0


def test_values_are_passed_to_load():
    config = DataConfig(dataset="digits", classes=[0, 1], subset=50, rotate=10, seed=3)
    data = config.load()
    direct = load("digits", classes=[0, 1], subset=50, rotate=10, seed=3)
    assert data.X_train.tobytes() == direct.X_train.tobytes()
    assert data.num_classes == 2 and data.num_train == 50


def test_source_options_reach_the_source():
    data = DataConfig(dataset="rectangles", source_options={"num_train": 30, "num_test": 20}).load()
    assert (data.num_train, data.num_test) == (30, 20)


def test_invalid_dataset_names_the_parameter_and_lists_valid_names():
    with pytest.raises(DataError, match="parameter 'dataset' got 'imagenet'.*digits.*rectangles.*idx:"):
        DataConfig(dataset="imagenet")
    config = DataConfig()
    with pytest.raises(ValueError, match="dataset"):
        config.dataset = "nope"
    assert config.dataset == "digits"  # the refused value was not kept
    config.dataset = "idx:/some/folder"  # checked when loaded, not when named


@pytest.mark.parametrize(
    "key,value,words",
    [("rotate", 181, "rotate"), ("rotate", -1, "rotate"), ("test_fraction", 0.0, "test_fraction"),
     ("subset", -5, "subset"), ("odd_even", "yes", "odd_even"), ("classes", [0.5], "classes")],
)
def test_parameters_refuse_out_of_range_values(key, value, words):
    with pytest.raises((ValueError, TypeError), match=words):
        DataConfig(**{key: value})


def test_parameters_carry_bounds_and_docs_for_widgets():
    p = DataConfig.param
    assert p.rotate.bounds == (0, 180) and p.test_fraction.inclusive_bounds == (False, False)
    assert all(p[k].doc for k in ("dataset", "rotate", "odd_even", "classes", "subset", "test_subset", "seed"))


def test_config_round_trips_through_json():
    config = DataConfig(dataset="two-moons", seed=4, source_options={"noise": 0.2})
    text = config.param.serialize_parameters()
    back = DataConfig(**DataConfig.param.deserialize_parameters(text))
    assert back.values() == config.values() and back.dataset == "two-moons"
    assert back.source_options == {"noise": 0.2}


# --- option checks in load ------------------------------------------------------------------------


def test_unknown_option_is_named_with_the_accepted_ones():
    with pytest.raises(DataError, match=r"unknown option 'colour' for dataset 'digits'; it takes rotate, .*seed"):
        load("digits", colour=True)
    with pytest.raises(DataError, match="unknown option 'patch_size'"):
        load("rectangles", patch_size=4)  # belongs to photo-patches


@pytest.mark.parametrize(
    "name,options,words",
    [
        ("digits", {"rotate": 200}, r"rotate=200 .* 0 ≤ rotate ≤ 180"),
        ("digits", {"test_fraction": 1.5}, r"test_fraction=1.5 .* 0 < test_fraction < 1"),
        ("digits", {"subset": 2.5}, r"subset=2.5 .* an integer, subset ≥ 0"),
        ("digits", {"classes": "4,9"}, r"classes='4,9' .* a list of integers"),
        ("rectangles", {"num_train": 0}, r"num_train=0 .* num_train ≥ 1"),
        ("rectangles", {"image_size": 100}, r"image_size=100 .* 8 ≤ image_size ≤ 64"),
        ("photo-patches", {"patch_size": 2}, r"patch_size=2 .* 4 ≤ patch_size ≤ 64"),
        ("two-moons", {"noise": -0.1}, r"noise=-0.1 .* noise ≥ 0"),
    ],
)
def test_bad_values_name_the_option_and_the_range(name, options, words):
    with pytest.raises(DataError, match=words):
        load(name, **options)


def test_numpy_classes_are_accepted():
    data = load("digits", classes=np.array([3, 8]))
    assert data.num_classes == 2 and data.options["classes"] == [3, 8]


# --- Dataset --------------------------------------------------------------------------------------


def test_dataset_checks_shapes_and_labels():
    X = np.zeros((4, 3))
    y = np.array([0, 1, 0, 1])
    data = Dataset("toy", X, y, X, y, num_classes=2)
    assert data.class_names == ["0", "1"] and data.input_dim == 3 and data.y_train.dtype == np.int64
    with pytest.raises(ShapeError, match="y_train has shape"):
        Dataset("toy", X, y[:3], X, y, num_classes=2)
    with pytest.raises(ShapeError, match="images must be"):
        Dataset("toy", X, y, X, y, num_classes=2, image_shape=(1, 2, 2))
    with pytest.raises(DataError, match="labels in"):
        Dataset("toy", X, y + 1, X, y, num_classes=2)
    with pytest.raises(DataError, match="task"):
        Dataset("toy", X, y, X, y, task="ranking")
    images = np.zeros((4, 1, 2, 2))
    assert Dataset("img", images, y, images, y, num_classes=2, image_shape=(1, 2, 2)).input_dim == 4
    reg = Dataset("reg", X, y * 1.5, X, y * 1.5, task="regression", num_classes=None)
    assert reg.y_train.dtype == np.float64 and "regression" in reg.summary()
