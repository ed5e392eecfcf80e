"""A table's own column names stay with its Dataset (`feature_names`) and `summary()` says them: "3 features: age,
height, weight", shortened when there are many; data without names (arrays, images) says only how many."""
from __future__ import annotations

import numpy as np
import pandas as pd

from invlab.data import load


def people_csv(path, columns=("age", "height", "weight"), rows=40):
    """A regression CSV whose input columns are `columns` and whose target is the last column, `y`."""
    rng = np.random.default_rng(0)
    values = rng.normal(size=(rows, len(columns) + 1))
    lines = [",".join(list(columns) + ["y"])] + [",".join(f"{v:.4f}" for v in row) for row in values]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_csv_keeps_its_column_names_and_the_summary_names_them(tmp_path):
    ds = load(f"csv:{people_csv(tmp_path / 'people.csv')}")
    assert ds.feature_names == ["age", "height", "weight"]
    assert "3 features: age, height, weight;" in ds.summary()


def test_a_dataframe_keeps_its_column_names(tmp_path):
    frame = pd.read_csv(people_csv(tmp_path / "people.csv"))
    ds = load(frame, target="y")
    assert ds.feature_names == ["age", "height", "weight"]
    assert "3 features: age, height, weight;" in ds.summary()


def test_many_columns_are_shortened_in_the_summary_but_all_kept(tmp_path):
    columns = [f"sensor_{i:02d}" for i in range(30)]
    ds = load(f"csv:{people_csv(tmp_path / 'wide.csv', columns)}")
    assert ds.feature_names == columns
    line = next(line for line in ds.summary().splitlines() if "features" in line)
    assert "30 features: sensor_00, sensor_01, sensor_02, sensor_03, sensor_04, sensor_05, … sensor_29" in line
    assert "sensor_10" not in line


def test_a_very_long_column_name_is_cut_in_the_summary(tmp_path):
    long = "the_" + "very_" * 20 + "long_name"
    ds = load(f"csv:{people_csv(tmp_path / 'long.csv', ('a', long))}")
    assert ds.feature_names == ["a", long]
    line = next(line for line in ds.summary().splitlines() if "features" in line)
    assert "2 features: a, the_very_" in line and "…" in line and long not in line


def test_the_bundled_tables_name_their_columns():
    ds = load("diabetes")
    assert ds.feature_names[:3] == ["age", "sex", "bmi"] and len(ds.feature_names) == 10
    assert "10 features: age, sex, bmi" in ds.summary()


def test_data_without_names_says_only_how_many():
    rng = np.random.default_rng(1)
    ds = load((rng.normal(size=(30, 2)), rng.normal(size=30)))
    assert ds.feature_names is None
    assert "2 features," in ds.summary()
    assert load("digits", subset=50).feature_names is None
