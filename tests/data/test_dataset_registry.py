"""Named data sets and file readers come from one registry door each (`invlab.data.register_dataset`,
`register_reader`), which the built-ins use too: a data set registered from your own code loads by its name with
the shared options (subset, split, standardisation), is listed, and is rolled back with a failed plugin; bad
registrations are refused with a message that says what to change."""
from __future__ import annotations

import numpy as np
import pytest

from invlab.data import RawData, list_datasets, load, register_dataset
from invlab.data.raw import DATASETS, READER_REGISTRY, SOURCES
from invlab.errors import ConfigError
from invlab.registry import snapshot


def _lines(options, seed, test_fraction):
    """y = 3x + 1 on 50 points in [0, 1] (a data set a user might register)."""
    x = np.linspace(0.0, 1.0, 50)[:, None]
    return RawData(x, 3.0 * x[:, 0] + 1.0)


def test_the_built_ins_are_registered_through_the_same_door():
    assert list(SOURCES)[:2] == ["digits", "mnist"] and DATASETS.parts["digits"].builtin
    assert SOURCES["two-moons"].kind == "points" and SOURCES["digits"].digit_labels
    assert {"csv", "npz", "parquet", "images", "idx", "python"} <= set(READER_REGISTRY.parts)
    assert all(READER_REGISTRY.parts[p].builtin for p in ("csv", "npz", "parquet", "images", "idx", "python"))


def test_a_registered_data_set_loads_by_name_and_rolls_back():
    saved = snapshot()
    try:
        register_dataset("my-lines", "y = 3x + 1 on [0, 1]", "tabular", "regression")(_lines)
        assert "my-lines" in list_datasets() and not DATASETS.parts["my-lines"].builtin
        data = load("my-lines", test_fraction=0.2, seed=3)
        assert (data.num_train, data.num_test) == (40, 10) and data.task == "regression"
        assert abs(float(data.X_train.mean())) < 1e-12  # standardised as every tabular set is
        y = data.y_train * data.y_std + data.y_mean  # back in the data's own units: on the line
        x = data.X_train[:, 0] * data.x_std[0] + data.x_mean[0]
        assert np.allclose(y, 3.0 * x + 1.0)
        with pytest.raises(ConfigError, match="data set name 'my-lines' is taken"):
            register_dataset("my-lines", "another", "tabular", "regression")(lambda options, seed, test_fraction: None)
    finally:
        saved.restore()
    assert "my-lines" not in SOURCES and "my-lines" not in list_datasets()


def test_bad_registrations_say_what_to_change():
    with pytest.raises(ConfigError, match="kind must be image, tabular or points"):
        register_dataset("odd", "?", "video", "regression")
    with pytest.raises(ConfigError, match="lower-case letters, digits, hyphens and underscores, got 'My Data'"):
        register_dataset("My Data", "?", "tabular", "regression")(_lines)
    assert "My Data" not in SOURCES
