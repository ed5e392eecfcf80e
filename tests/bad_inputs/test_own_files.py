"""Bad input in the user's own data files (`csv:`, `npz:`, `images:`): too few rows for a split, a column empty on
every row, a decompression bomb among the images, a byte-order mark, a file that grows while it is read, infinite
cells and pickled objects. Each gets one plain sentence naming the file (and where in it), never a traceback and
never a silent change; docs/bad_inputs.md lists them in "Your own data"."""

import struct
import sys
import warnings
import zlib

import numpy as np
import pytest

from invlab.data import load
from invlab.errors import DataError
from tests.bad_inputs.worlds import QUICK, run_cli, setup_image_folder, write_csv, write_png


def _refused(code, err, *words):
    """Exit 1 with one `invlab train:` line that holds every word, and no traceback."""
    assert code == 1, err
    assert "Traceback" not in err and err.startswith("invlab train: "), err
    for word in words:
        assert word in err, (word, err)


def _house_lines(rows: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return [f"{a:.4f},{b:.4f},{50 + 3 * a - b:.4f}" for a, b in rng.normal(size=(rows, 2))]


# -- item 3: one or two rows, and the hash of an empty array ------------------------------------------------------


def test_csv_too_few_rows_for_a_split(world, capsys):
    one = write_csv(world / "one.csv", "x1,x2,label\n0.1,0.2,1\n")
    code, _, err = run_cli(["train", "--dataset", f"csv:{one}", *QUICK], capsys)
    _refused(code, err, str(one), "1 row", "at least 3", "2 to train on and 1 to test")
    two = write_csv(world / "two.csv", "x1,x2,label\n0.1,0.2,1\n0.3,0.1,2\n")
    code, _, err = run_cli(["train", "--dataset", f"csv:{two}", *QUICK], capsys)
    _refused(code, err, str(two), "2 rows", "at least 3")
    four = write_csv(world / "four.csv", "x1,x2,y\n" + "\n".join(_house_lines(4)) + "\n")
    code, _, err = run_cli(["train", "--dataset", f"csv:{four}", "--test-fraction", "0.7", *QUICK], capsys)
    _refused(code, err, str(four), "test_fraction=0.7", "1 of the 4 rows of the CSV file", "to train on",
             "lower test_fraction")
    code, out, err = run_cli(["train", "--dataset", f"csv:{four}", *QUICK], capsys)  # 3 train / 1 test: trains
    assert code == 0 and "(3 train / 1 test)" in out + err, err


def test_identity_of_an_empty_test_set():
    from invlab.data import Dataset, identity

    def hand_built(test_rows):
        X = np.arange(12.0).reshape(6, 2)
        return Dataset("tiny", X, np.arange(6.0), X[:test_rows], np.arange(float(test_rows)), task="regression")

    empty, one = identity(hand_built(0)), identity(hand_built(1))
    assert len(empty["hash"]) == 32 and empty["hash"] != one["hash"]
    assert empty["shapes"]["X_test"] == [0, 2]


# -- item 4: a column empty on every row, dropna dropping every row -----------------------------------------------


def test_csv_column_empty_on_every_row(world, capsys):
    rows = "".join(f"{i * 0.1:.1f},,{i % 2}\n" for i in range(20))
    path = write_csv(world / "hollow.csv", "a,b,label\n" + rows)
    for extra in (["--source-option", "dropna=true"], []):
        code, _, err = run_cli(["train", "--dataset", f"csv:{path}", *extra, *QUICK], capsys)
        _refused(code, err, str(path), "column 'b' is empty on every row", "drop the column or fill it in")


def test_csv_dropna_drops_every_row(world, capsys):
    rows = "".join((f"{i},,{i % 2}\n" if i % 2 else f",{i},{i % 2}\n") for i in range(20))
    path = write_csv(world / "holes.csv", "a,b,label\n" + rows)
    code, _, err = run_cli(["train", "--dataset", f"csv:{path}", "--source-option", "dropna=true", *QUICK], capsys)
    _refused(code, err, str(path), "every one of its 20 rows has a missing value", "'a'", "'b'", "dropna")


# -- item 5: a decompression bomb among the images ----------------------------------------------------------------


def _png_claiming(path, width: int, height: int):
    """A tiny 1-bit PNG whose IHDR claims `width`×`height` pixels (CRC fixed): its header is all a reader that
    checks before decoding ever sees; decoding it would need width×height bytes."""
    write_png(path, size=(8, 8), value=0, mode="1")
    data = bytearray(path.read_bytes())
    assert data[12:16] == b"IHDR"
    data[16:24] = struct.pack(">II", width, height)
    data[29:33] = struct.pack(">I", zlib.crc32(bytes(data[12:29])))
    path.write_bytes(bytes(data))


def test_images_decompression_bomb_skipped(world, capsys, monkeypatch):
    from PIL import ImageFile

    from invlab.data.image_folders import MAX_IMAGE_PIXELS

    setup_image_folder(world)
    _png_claiming(world / "pics" / "cat" / "bomb.png", 20000, 20000)
    write_png(world / "pics" / "dog" / "big.png", size=(12000, 12000), value=0, mode="1")  # a real 144 M pixels
    decoded = []
    real_load = ImageFile.ImageFile.load
    monkeypatch.setattr(ImageFile.ImageFile, "load", lambda im: decoded.append(im.size) or real_load(im))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, out, err = run_cli(["train", "--dataset", f"images:{world / 'pics'}", *QUICK], capsys)
    assert code == 0, err
    assert not [w for w in caught if "DecompressionBomb" in type(w.message).__name__], caught
    assert "cat/bomb.png (400,000,000 pixels)" in out + err
    assert "dog/big.png (12000×12000 = 144,000,000 pixels)" in out + err
    assert f"{MAX_IMAGE_PIXELS:,} pixels" in out + err and "Traceback" not in err
    assert all(w * h <= MAX_IMAGE_PIXELS for w, h in decoded)  # never decoded past the limit
    assert "skipped 2 unreadable files" in out + err


def test_images_all_bombs(world, capsys):
    for name in ("cat", "dog"):
        _png_claiming(world / "pics" / name / "0.png", 30000, 30000)
    code, _, err = run_cli(["train", "--dataset", f"images:{world / 'pics'}", *QUICK], capsys)
    _refused(code, err, "none of the 2 image files", "2 are too large to decode", "cat/0.png (900,000,000 pixels)",
             "dog/0.png")


# -- item 6: a byte-order mark -------------------------------------------------------------------------------------


@pytest.mark.parametrize("pandas", ["with pandas", "without pandas"])
def test_csv_bom_headerless_same_as_without(tmp_path, monkeypatch, pandas):
    if pandas == "without pandas":
        monkeypatch.setitem(sys.modules, "pandas", None)
    text = "\n".join(_house_lines(60)) + "\n"
    (tmp_path / "plain.csv").write_text(text)
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbf" + text.encode())
    plain, bom = load(f"csv:{tmp_path / 'plain.csv'}"), load(f"csv:{tmp_path / 'bom.csv'}")
    assert (bom.num_train, bom.num_test) == (plain.num_train, plain.num_test) == (45, 15)
    assert bom.metadata["feature_names"] == plain.metadata["feature_names"] == ["column 1", "column 2"]
    assert bom.metadata["target"] == plain.metadata["target"] == "column 3"
    assert np.array_equal(bom.X_train, plain.X_train) and np.array_equal(bom.y_test, plain.y_test)
    header = "x1,x2,price\n" + text  # and a header after a BOM is still a header, its first name without the mark
    (tmp_path / "named.csv").write_bytes(b"\xef\xbb\xbf" + header.encode())
    assert load(f"csv:{tmp_path / 'named.csv'}").metadata["feature_names"] == ["x1", "x2"]


# -- item 7: a CSV that changes while it is read ------------------------------------------------------------------


@pytest.mark.parametrize("change", ["grows", "shrinks"])
def test_csv_changes_while_read(world, capsys, monkeypatch, change):
    from invlab.data import files

    path = write_csv(world / "live.csv", "x1,x2,y\n" + "\n".join(_house_lines(40)) + "\n")
    real_count = files._count_lines

    def count_then_change(p):
        counted = real_count(p)
        if change == "grows":  # another program appends rows after the lines were counted, before they are parsed
            with open(p, "a") as f:
                f.write("\n".join(_house_lines(30, seed=1)) + "\n")
        else:
            p.write_text("x1,x2,y\n" + "\n".join(_house_lines(20)) + "\n")
        return counted

    monkeypatch.setattr(files, "_count_lines", count_then_change)
    code, _, err = run_cli(["train", "--dataset", f"csv:{path}", *QUICK], capsys)
    _refused(code, err, str(path), "changed while it was read", "read it again once it is written")


# -- item 11: infinite cells ---------------------------------------------------------------------------------------


def test_csv_inf_cells_located(world, capsys, recwarn):
    lines = ["x1,x2,y"] + _house_lines(40)
    lines[3] = "inf," + lines[3].split(",", 1)[1]  # line 4 of the file
    x1, _, y = lines[8].split(",")
    lines[8] = f"{x1},-inf,{y}"  # line 9
    path = write_csv(world / "inf.csv", "\n".join(lines) + "\n")
    code, _, err = run_cli(["train", "--dataset", f"csv:{path}", *QUICK], capsys)
    _refused(code, err, str(path), "2 non-finite values (inf): line 4 column 'x1', line 9 column 'x2'")
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in recwarn]
    assert "note:" not in err, err  # invlab train says a warning as a note: none was raised either
    lines[8] = f"{x1},0.5,{y}"
    lines[20] = lines[20].rsplit(",", 1)[0] + ",inf"  # the target, line 21
    write_csv(path, "\n".join(lines) + "\n")
    code, _, err = run_cli(["train", "--dataset", f"csv:{path}", *QUICK], capsys)
    _refused(code, err, "2 non-finite values (inf): line 4 column 'x1', line 21 column 'y'")
    lines[2] = "," + lines[2].split(",", 1)[1]  # an empty cell on line 3, dropped by dropna: the lines stay the file's
    write_csv(path, "\n".join(lines) + "\n")
    code, _, err = run_cli(["train", "--dataset", f"csv:{path}", "--source-option", "dropna=true", *QUICK], capsys)
    _refused(code, err, "line 4 column 'x1', line 21 column 'y'")
    X = np.ones((40, 2))
    X[3, 0] = np.inf
    np.savez(world / "inf.npz", X=X, y=np.arange(40.0))  # the same in an npz, by index
    code, _, err = run_cli(["train", "--dataset", f"npz:{world / 'inf.npz'}", *QUICK], capsys)
    _refused(code, err, "X has 1 non-finite value (NaN or ±inf), at index (3, 0)")
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    assert "note:" not in err, err


# -- item 12: pickled objects in an npz ----------------------------------------------------------------------------


def test_npz_object_array_refused(world, capsys):
    path = world / "objects.npz"
    np.savez(path, X=np.array([{"a": 1}] * 10, dtype=object), y=np.arange(10))
    code, _, err = run_cli(["train", "--dataset", f"npz:{path}", *QUICK], capsys)
    _refused(code, err, str(path), "array 'X' holds Python objects", "never loaded", "numbers only")
    assert "cut short" not in err
    with pytest.raises(DataError, match="array 'X' holds Python objects"):
        load(f"npz:{path}")
