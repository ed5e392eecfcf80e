"""The IDX reader/writer and the `idx:/path/to/dir` source."""
from __future__ import annotations

import gzip

import numpy as np
import pytest

from invlab.data import load, read_idx, write_idx
from invlab.errors import DataError

DTYPES = [np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("suffix", ["", ".gz"])
@pytest.mark.parametrize("shape", [(7,), (5, 4, 3), (2, 3, 4, 5)])
def test_round_trip(tmp_path, dtype, suffix, shape):
    generator = np.random.default_rng(0)
    array = (generator.normal(size=shape) * 50).astype(dtype)
    path = write_idx(tmp_path / f"a-idx{suffix}", array)
    back = read_idx(path)
    assert back.dtype == np.dtype(dtype) and back.dtype.isnative
    assert back.shape == shape
    np.testing.assert_array_equal(back, array)
    back[...] = 0  # the result is a writable copy


def test_bytes_are_big_endian_with_the_standard_header(tmp_path):
    path = write_idx(tmp_path / "x", np.array([1, 2], dtype=np.int16))
    assert path.read_bytes() == bytes([0, 0, 0x0B, 1, 0, 0, 0, 2, 0, 1, 0, 2])


def test_gzip_is_written_for_gz_suffix_and_recognised_by_content(tmp_path):
    array = np.arange(12, dtype=np.uint8).reshape(3, 4)
    path = write_idx(tmp_path / "x.gz", array)
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    renamed = tmp_path / "x-no-suffix"
    renamed.write_bytes(path.read_bytes())
    np.testing.assert_array_equal(read_idx(renamed), array)
    assert write_idx(tmp_path / "y.gz", array).read_bytes() == path.read_bytes()  # deterministic gzip


def test_wrong_magic(tmp_path):
    path = tmp_path / "bad"
    path.write_bytes(b"\x12\x34\x08\x01" + b"\0" * 10)
    with pytest.raises(DataError, match="not an IDX file: magic number 0x12340801.*expected"):
        read_idx(path)


@pytest.mark.parametrize("code", [0x07, 0x0A, 0x10])
def test_unknown_type_code(tmp_path, code):
    path = tmp_path / "bad"
    path.write_bytes(bytes([0, 0, code, 1, 0, 0, 0, 1, 0]))
    with pytest.raises(DataError, match="not an IDX file"):
        read_idx(path)


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_truncated_body(tmp_path, suffix):
    full = write_idx(tmp_path / "full", np.zeros((4, 5, 5), dtype=np.uint8)).read_bytes()
    path = tmp_path / f"cut{suffix}"
    cut = full[:-7]
    path.write_bytes(gzip.compress(cut) if suffix else cut)
    message = r"size mismatch: header says 4 × 5 × 5 values × 1 bytes = 100 bytes, file has 93"
    with pytest.raises(DataError, match=message):
        read_idx(path)


def test_oversized_body(tmp_path):
    path = write_idx(tmp_path / "x", np.zeros(3, dtype=np.float32))
    path.write_bytes(path.read_bytes() + b"\0")
    with pytest.raises(DataError, match="size mismatch.*12 bytes, file has 13"):
        read_idx(path)


def test_truncated_header(tmp_path):
    path = tmp_path / "x"
    path.write_bytes(bytes([0, 0, 8, 3, 0, 0, 0, 2]))
    with pytest.raises(DataError, match="size mismatch: header says 3 dimensions"):
        read_idx(path)


def test_unreadable_gzip(tmp_path):
    good = write_idx(tmp_path / "x.gz", np.zeros((50, 50), dtype=np.uint8)).read_bytes()
    path = tmp_path / "broken.gz"
    path.write_bytes(good[: len(good) // 2])
    with pytest.raises(DataError, match="unreadable gzip"):
        read_idx(path)


def test_missing_file_and_unsupported_dtype(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        read_idx(tmp_path / "nope")
    with pytest.raises(DataError, match="cannot write a int64"):
        write_idx(tmp_path / "x", np.zeros(3, dtype=np.int64))


# --- the idx: source ------------------------------------------------------------------------------


@pytest.mark.parametrize("gz,dotted", [(True, False), (False, True), (True, True)])
def test_idx_dir_with_test_files(tmp_path, gz, dotted, fake_mnist, write_mnist_dir):
    arrays = fake_mnist(40, 20)
    directory = write_mnist_dir(tmp_path / "mine", arrays, gz=gz, dotted=dotted)
    data = load(f"idx:{directory}")
    x_train, y_train, x_test, y_test = arrays
    assert data.X_train.shape == (40, 1, 28, 28) and data.X_test.shape == (20, 1, 28, 28)
    np.testing.assert_array_equal(data.X_train[:, 0], x_train / 255.0)  # the fixed split keeps file order
    np.testing.assert_array_equal(data.y_test, y_test)
    assert data.num_classes == 10 and data.class_names == [str(d) for d in range(10)]
    assert data.X_train.min() >= 0 and data.X_train.max() <= 1


def test_idx_dir_without_test_files_is_split(tmp_path, fake_mnist, write_mnist_dir):
    arrays = fake_mnist(100, 0)
    directory = write_mnist_dir(tmp_path / "mine", arrays, with_test=False)
    data = load(f"idx:{directory}", test_fraction=0.3)
    assert (data.num_train, data.num_test) == (70, 30)
    assert np.bincount(data.y_test).tolist() == [3] * 10  # stratified
    # every test image is one of the file's images, and none is also in the training part
    rows = {x.tobytes() for x in arrays[0]}
    assert all((np.rint(x[0] * 255).astype(np.uint8)).tobytes() in rows for x in data.X_test)
    train_rows = {x.tobytes() for x in data.X_train}
    assert not any(x.tobytes() in train_rows for x in data.X_test)


def test_idx_labels_are_classes_by_value(tmp_path, fake_mnist, write_mnist_dir):
    x, _, _, _ = fake_mnist(30, 0)
    y = np.array([3, 5, 8] * 10, dtype=np.uint8)
    directory = write_mnist_dir(tmp_path / "mine", (x, y, None, None), with_test=False)
    data = load(f"idx:{directory}")
    assert data.class_names == ["3", "5", "8"] and data.num_classes == 3
    pair = load(f"idx:{directory}", classes=[8, 3])
    assert pair.class_names == ["8", "3"] and set(pair.y_train) <= {0, 1}
    parity = load(f"idx:{directory}", odd_even=True)
    assert parity.class_names == ["even", "odd"]
    digits = np.array([3, 5, 8])[data.y_train]
    np.testing.assert_array_equal(parity.y_train, digits % 2)  # same seed, same split


def test_idx_dir_errors(tmp_path, fake_mnist, write_mnist_dir):
    with pytest.raises(DataError, match="does not exist"):
        load(f"idx:{tmp_path / 'nowhere'}")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no train images file.*train-images-idx3-ubyte"):
        load(f"idx:{tmp_path / 'empty'}")
    x_train, y_train, x_test, y_test = fake_mnist(10, 5)
    bad = write_mnist_dir(tmp_path / "count", (x_train, y_train[:9], x_test, y_test))
    with pytest.raises(DataError, match="count mismatch: .* 10 images .* 9 labels"):
        load(f"idx:{bad}")
    half = write_mnist_dir(tmp_path / "half", (x_train, y_train, x_test, y_test))
    (half / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(DataError, match="no test labels file"):
        load(f"idx:{half}")
    with pytest.raises(DataError, match="needs a directory"):
        load("idx:")


def test_a_gzip_bomb_is_refused_without_inflating_it(tmp_path):
    """A 64 MB body behind a header declaring 10 small images: refused after reading a bounded amount."""
    import tracemalloc

    header = bytes([0, 0, 0x08, 3]) + np.asarray([10, 28, 28], dtype=">u4").tobytes()
    path = tmp_path / "bomb.gz"
    with gzip.open(path, "wb", compresslevel=9) as f:
        f.write(header)
        for _ in range(64):
            f.write(bytes(1 << 20))
    assert path.stat().st_size < (1 << 20)  # well under a megabyte on disk
    tracemalloc.start()
    try:
        with pytest.raises(DataError, match="longer than its header says") as info:
            read_idx(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "10 × 28 × 28" in str(info.value)
    assert peak < 24 << 20  # a few chunks, never the 64 MB body (before: the whole body, 0.95 GB for 300 MB)


def test_a_header_claiming_too_much_is_refused_before_reading(tmp_path, monkeypatch):
    from invlab.data import idx

    monkeypatch.setattr(idx, "MAX_IDX_BYTES", 1000)
    path = write_idx(tmp_path / "x", np.zeros((2, 28, 28), dtype=np.uint8))
    with pytest.raises(DataError, match="1,568 bytes, more than the 1,000 bytes"):
        read_idx(path)


def test_float_images_are_named_by_their_stored_type(tmp_path, write_mnist_dir):
    images = np.full((4, 8, 8), 3.0, dtype=np.float32)
    labels = np.array([0, 1, 0, 1], dtype=np.uint8)
    d = tmp_path / "f"
    d.mkdir()
    write_idx(d / "train-images-idx3-ubyte", images)
    write_idx(d / "train-labels-idx1-ubyte", labels)
    with pytest.raises(DataError, match=r"images of type float32 have values in \[3, 3\]"):
        load(f"idx:{d}")
    images[1, 2, 3] = np.nan
    write_idx(d / "train-images-idx3-ubyte", images)
    with pytest.raises(DataError, match=r"float32 images\) has 1 non-finite value .* at index \(1, 2, 3\)"):
        load(f"idx:{d}")


def test_an_idx_set_of_zero_images_is_refused(tmp_path):
    d = tmp_path / "z"
    d.mkdir()
    write_idx(d / "train-images-idx3-ubyte", np.zeros((0, 28, 28), dtype=np.uint8))
    write_idx(d / "train-labels-idx1-ubyte", np.zeros(0, dtype=np.uint8))
    with pytest.raises(DataError, match="holds 0 images"):
        load(f"idx:{d}")
