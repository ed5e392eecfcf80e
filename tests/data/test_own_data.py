"""The user's own data through `load`: CSV, npz, Parquet, image folders, bare paths, (X, y) arrays, DataFrames and
image arrays, each through the same steps (split, classes, subsets, standardisation), with the scalers and the
identity kept on the Dataset."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from invlab.data import Dataset, identity, load, loadable
from invlab.errors import DataError


def house_csv(path, rows=60, header=True, seed=0):
    """A regression CSV: price ≈ 50 + 3·x1 − x2 (in its own units)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, 2))
    y = 50 + 3 * X[:, 0] - X[:, 1] + 0.1 * rng.normal(size=rows)
    lines = (["x1,x2,price"] if header else []) + [f"{a:.6f},{b:.6f},{c:.6f}" for (a, b), c in zip(X, y)]
    path.write_text("\n".join(lines) + "\n")
    return X, y


def pictures(root, classes=("cat", "dog"), per_class=6, size=(6, 6), mode="L"):
    from PIL import Image

    for c, name in enumerate(classes):
        (root / name).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            colour = 40 + 150 * c + i if mode == "L" else (40 + 150 * c, i * 10, 200)
            Image.new(mode, size, colour).save(root / name / f"{i}.png")
    return root


def test_csv_header_is_detected_and_the_target_is_the_last_column(tmp_path):
    X, y = house_csv(tmp_path / "house.csv")
    ds = load(f"csv:{tmp_path / 'house.csv'}", seed=3)
    assert ds.task == "regression" and ds.num_train + ds.num_test == 60 and ds.input_dim == 2
    assert ds.name == "house.csv" and ds.source == f"csv:{tmp_path / 'house.csv'}"
    assert any("regression" in note and "'price'" in note for note in ds.notes)  # the inferred task is said
    # the Dataset keeps the scalers: undoing them gives the file's numbers back
    both = np.concatenate([ds.unscale_targets(ds.y_train), ds.unscale_targets(ds.y_test)])
    assert np.allclose(np.sort(both), np.sort(y), atol=1e-5)
    raw_train = ds.X_train * ds.x_std + ds.x_mean
    assert all(np.isclose(raw_train[:, 0], x).any() for x in raw_train[:3, 0])
    assert np.allclose(ds.scale_inputs(raw_train), ds.X_train)


def test_csv_without_header_and_a_named_target(tmp_path):
    house_csv(tmp_path / "plain.csv", header=False)
    ds = load(f"csv:{tmp_path / 'plain.csv'}")
    assert ds.num_train + ds.num_test == 60  # the first row is data, not a header
    ds = load(f"csv:{tmp_path / 'plain.csv'}", target="column 1")
    assert ds.metadata["target"] == "column 1" and ds.metadata["feature_names"] == ["column 2", "column 3"]


def test_string_labels_become_classes_with_their_names_and_the_shared_steps_apply(tmp_path):
    rows = ["size,colour,kind"] + [f"{i % 7},{i % 3},{['cat', 'dog', 'emu'][i % 3]}" for i in range(90)]
    (tmp_path / "animals.csv").write_text("\n".join(rows) + "\n")
    ds = load(str(tmp_path / "animals.csv"), classes=[0, 2], subset=30, test_fraction=0.5, seed=1)
    assert ds.class_names == ["cat", "emu"] and ds.num_classes == 2 and ds.num_train == 30
    assert ds.num_test == 30  # 60 points of the two classes, half held out
    with pytest.raises(DataError, match="rotate"):
        load(f"csv:{tmp_path / 'animals.csv'}", rotate=30)


def test_task_can_be_forced(tmp_path):
    rows = ["a,b"] + [f"{i},{i % 4}" for i in range(40)]
    (tmp_path / "t.csv").write_text("\n".join(rows) + "\n")
    assert load(f"csv:{tmp_path / 't.csv'}").task == "classification"  # 4 whole numbers: classes
    reg = load(f"csv:{tmp_path / 't.csv'}", task="regression")
    assert reg.task == "regression" and reg.y_std > 0


def test_csv_without_pandas_reads_the_same_arrays(tmp_path, monkeypatch):
    house_csv(tmp_path / "house.csv")
    with_pandas = load(f"csv:{tmp_path / 'house.csv'}")
    monkeypatch.setitem(sys.modules, "pandas", None)
    without = load(f"csv:{tmp_path / 'house.csv'}")
    assert np.allclose(with_pandas.X_train, without.X_train) and np.allclose(with_pandas.y_test, without.y_test)
    assert identity(with_pandas)["shapes"] == identity(without)["shapes"]


def test_arrays_dataframes_and_image_arrays(tmp_path):
    import pandas as pd

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.normal(size=40) * 10 + 100
    ds = load((X, y), X_test=X[:10], y_test=y[:10])
    assert ds.task == "regression" and ds.num_train == 40 and ds.num_test == 10 and ds.source == ""
    assert np.isclose(ds.y_mean, y.mean()) and np.allclose(ds.unscale_targets(ds.y_test), y[:10])
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "label": np.where(y > 100, "high", "low"), "c": X[:, 2]})
    df = load(frame, target="label")
    assert df.class_names == ["high", "low"] and df.input_dim == 3
    images = rng.integers(0, 256, size=(30, 5, 5), dtype=np.uint8)
    im = load((images, np.arange(30) % 2))
    assert im.is_image and im.image_shape == (1, 5, 5) and im.X_train.max() <= 1.0
    colour = load((rng.random((30, 3, 4, 4)), np.arange(30) % 3), rotate=20)
    assert colour.image_shape == (3, 4, 4) and colour.num_classes == 3


def test_npz_with_its_own_test_set(tmp_path):
    rng = np.random.default_rng(1)
    np.savez(tmp_path / "split.npz", X=rng.normal(size=(30, 4)), y=np.arange(30) % 2, X_test=rng.normal(size=(8, 4)),
             y_test=np.arange(8) % 2)
    ds = load(f"npz:{tmp_path / 'split.npz'}")
    assert (ds.num_train, ds.num_test, ds.num_classes) == (30, 8, 2)
    assert identity(ds)["path"] == str((tmp_path / "split.npz").resolve())


def test_image_folders_grey_colour_and_sizes(tmp_path):
    grey = pictures(tmp_path / "grey")
    ds = load(f"images:{grey}", test_fraction=0.5)
    assert ds.image_shape == (1, 6, 6) and ds.class_names == ["cat", "dog"] and ds.num_train == 6
    colour = pictures(tmp_path / "colour", mode="RGB", size=(5, 7))
    ds = load(f"images:{colour}", image_size=4)
    assert ds.image_shape == (3, 4, 4)
    assert load(f"images:{colour}", grayscale=True).image_shape == (1, 7, 5)  # PIL sizes are (W, H)


def test_bare_paths_say_which_reader_and_loadable_lists_them(tmp_path):
    house_csv(tmp_path / "house.csv")
    np.savez(tmp_path / "a.npz", X=np.zeros((10, 2)), y=np.arange(10) % 2)
    pictures(tmp_path / "pics")
    (tmp_path / "notes.txt").write_text("not data")
    assert load(str(tmp_path / "house.csv")).source == f"csv:{tmp_path / 'house.csv'}"
    assert load(str(tmp_path / "pics")).is_image
    assert loadable(tmp_path) == [f"npz:{tmp_path / 'a.npz'}", f"csv:{tmp_path / 'house.csv'}",
                                  f"images:{tmp_path / 'pics'}"]


def test_parquet_when_pyarrow_is_installed(tmp_path):
    pytest.importorskip("pyarrow")
    import pandas as pd

    frame = pd.DataFrame({"a": np.arange(20.0), "b": np.arange(20.0) ** 2, "y": np.arange(20) % 2})
    frame.to_parquet(tmp_path / "t.parquet")
    ds = load(f"parquet:{tmp_path / 't.parquet'}")
    assert ds.num_classes == 2 and ds.num_train + ds.num_test == 20


def test_a_hand_built_dataset_keeps_scalers_and_is_standardised():
    """The reported case: a hand-built regression set with y ≈ 50 was trained on unscaled targets."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 2)) * 10 + 3
    y = 50 + X[:, 0]
    ds = Dataset("mine", X[:40], y[:40], X[40:], y[40:], task="regression")
    assert abs(ds.y_train.mean()) < 1e-12 and np.isclose(ds.y_train.std(), 1)
    assert np.isclose(ds.y_mean, y[:40].mean()) and np.allclose(ds.X_train.mean(0), 0, atol=1e-12)
    assert np.allclose(ds.unscale_targets(ds.y_test), y[40:])
    kept = Dataset("given", X, y, X, y, task="regression", standardise=False)
    assert kept.y_mean is None and np.array_equal(kept.y_train, y)


def test_identity_follows_the_content(tmp_path):
    house_csv(tmp_path / "house.csv")
    a = identity(load(f"csv:{tmp_path / 'house.csv'}"))
    b = identity(load(f"csv:{tmp_path / 'house.csv'}"))
    assert a["hash"] == b["hash"] and a["source"].startswith("csv:") and a["mtime"] > 0
    house_csv(tmp_path / "house.csv", seed=1)
    assert identity(load(f"csv:{tmp_path / 'house.csv'}"))["hash"] != a["hash"]
    assert identity(load(f"csv:{tmp_path / 'house.csv'}", seed=5))["options"]["seed"] == 5


def test_a_csv_read_in_chunks_is_the_same_and_names_the_line_of_late_text(tmp_path, monkeypatch):
    from invlab.data import files

    house_csv(tmp_path / "house.csv", rows=50)
    whole = load(f"csv:{tmp_path / 'house.csv'}")
    monkeypatch.setattr(files, "CSV_CHUNK_ROWS", 7)
    chunked = load(f"csv:{tmp_path / 'house.csv'}")
    assert np.array_equal(whole.X_train, chunked.X_train) and np.array_equal(whole.y_test, chunked.y_test)
    lines = (tmp_path / "house.csv").read_text().splitlines()
    lines[40] = "1.0,lots,3.0"  # line 41 of the file, in the sixth chunk
    (tmp_path / "late.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match="'lots' at line 41"):
        load(f"csv:{tmp_path / 'late.csv'}")
