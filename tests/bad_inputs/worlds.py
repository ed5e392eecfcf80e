"""Builders of a bad world for the bad-input tests: broken data files, stores and checkpoints, and the helpers
that run a command line in-process."""

import gzip
import os
import sqlite3
from pathlib import Path

import numpy as np
import torch

from invlab.cli import main

# -- fixtures that build a bad world -------------------------------------------------------------------------------


def write_idx_pair(directory: Path, images: np.ndarray, labels: np.ndarray, gz: bool = False):
    from invlab.data import write_idx

    directory.mkdir(parents=True, exist_ok=True)
    ext = ".gz" if gz else ""
    write_idx(directory / f"train-images-idx3-ubyte{ext}", images)
    write_idx(directory / f"train-labels-idx1-ubyte{ext}", labels)
    return directory


def gzip_bomb(path: Path, declared=(10, 28, 28), body_bytes=64 << 20) -> Path:
    """A gzip IDX file whose header declares a few images but whose body inflates to `body_bytes` of zeros."""
    header = bytes([0, 0, 0x08, len(declared)]) + np.asarray(declared, dtype=">u4").tobytes()
    chunk = bytes(1 << 20)
    with gzip.open(path, "wb", compresslevel=9) as f:
        f.write(header)
        for _ in range(body_bytes // len(chunk)):
            f.write(chunk)
    return path


def setup_idx_empty_dir(tmp):
    (tmp / "empty").mkdir()


def setup_idx_zero_images(tmp):
    write_idx_pair(tmp / "zero", np.zeros((0, 28, 28), np.uint8), np.zeros(0, np.uint8))


def setup_idx_float32_pixels(tmp):
    write_idx_pair(tmp / "float", np.full((20, 8, 8), 200.0, np.float32), np.arange(20, dtype=np.uint8) % 2)


def setup_idx_bomb(tmp):
    d = tmp / "bomb"
    d.mkdir()
    gzip_bomb(d / "train-images-idx3-ubyte.gz", body_bytes=8 << 20)
    from invlab.data import write_idx

    write_idx(d / "train-labels-idx1-ubyte", np.arange(10, dtype=np.uint8))


def setup_idx_one_class(tmp):
    write_idx_pair(tmp / "one", np.zeros((20, 8, 8), np.uint8), np.zeros(20, np.uint8))


def setup_idx_nan(tmp):
    images = np.full((20, 8, 8), 0.5, np.float32)
    images[3, 2, 2] = np.nan
    write_idx_pair(tmp / "nan", images, np.arange(20, dtype=np.uint8) % 2)


def setup_empty_data_dir(tmp):
    (tmp / "data").mkdir()


def setup_data_dir_is_file(tmp):
    (tmp / "data").write_text("not a directory")


def setup_corrupt_store(tmp):
    (tmp / "data").mkdir()
    (tmp / "data" / "runs.sqlite").write_bytes(b"this is not a database, it is a note " * 200)


def setup_corrupt_runs_page(tmp):
    setup_corrupt_page(tmp, table="runs")


def setup_corrupt_page(tmp, table="metrics"):
    """A real store with one run, then a page of `table` overwritten with garbage (a disk or copy fault)."""
    from invlab.train import RunStore

    (tmp / "data").mkdir()
    path = tmp / "data" / "runs.sqlite"
    with RunStore(path) as store:
        run = store.runs.create("{}", "svgp", "digits")
        for step in range(2000):
            store.metrics.log(run, step, {"loss": float(step)})
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = con.execute("PRAGMA page_size").fetchone()[0]
    page = con.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    con.close()
    with open(path, "r+b") as f:
        f.seek((page - 1) * page_size)
        f.write(b"\xa5" * page_size)


def setup_store_is_dir(tmp):
    (tmp / "data" / "runs.sqlite").mkdir(parents=True)


def setup_one_run(tmp):
    """A finished run 1 with a checkpoint."""
    assert main(["train", "--steps", "2", "--subset", "60", "--num-inducing", "10", "--eval-every", "0",
                 "--quiet"]) == 0


def setup_checkpoint_without_optimiser(tmp):
    setup_one_run(tmp)
    from invlab.train import RunStore

    with RunStore(tmp / "data" / "runs.sqlite") as store:
        _, path = store.checkpoints.latest(1)
    payload = torch.load(path, weights_only=True)
    del payload["optimizer"]
    torch.save(payload, path)


def setup_checkpoint_with_code(tmp):
    setup_one_run(tmp)
    from invlab.train import RunStore

    with RunStore(tmp / "data" / "runs.sqlite") as store:
        _, path = store.checkpoints.latest(1)
    torch.save({"format": 1, "fn": os.getcwd, "obj": Path("x")}, path)  # pickled objects, not plain tensors


def _latest_checkpoint(tmp) -> Path:
    from invlab.train import RunStore

    with RunStore(tmp / "data" / "runs.sqlite") as store:
        return Path(store.checkpoints.latest(1)[1])


def setup_checkpoint_empty(tmp):
    setup_one_run(tmp)
    _latest_checkpoint(tmp).write_bytes(b"")  # a disk that filled up while it was written


def setup_checkpoint_plain_pickle(tmp):
    import pickle

    setup_one_run(tmp)
    with open(_latest_checkpoint(tmp), "wb") as f:
        pickle.dump({"format": 2, "step": 2, "model": {}}, f)  # pickle.dump, not torch.save


def setup_fifo(tmp):
    os.mkfifo(tmp / "sweep.toml")


# -- your own data: files that are not what they should be ----------------------------------------------------------


def write_csv(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def setup_csv_missing(tmp):
    write_csv(tmp / "gaps.csv", "a,b,y\n1,2,3.5\n4,,6.5\n7,8,9.5\n1,3,2.5\n")


def setup_csv_text(tmp):
    write_csv(tmp / "text.csv", "a,b,y\n1,2,3.5\n4,five,6.5\n7,8,9.5\n1,3,2.5\n")


def setup_csv_one_class(tmp):
    write_csv(tmp / "one.csv", "a,b,label\n" + "".join(f"{i},{i % 3},1\n" for i in range(20)))


def setup_csv_ragged(tmp):
    write_csv(tmp / "ragged.csv", "a,b,y\n1,2,3.5\n4,5,6.5,7\n7,8,9.5\n")


def setup_csv_empty(tmp):
    write_csv(tmp / "empty.csv", "")


def setup_csv_is_npz(tmp):
    np.savez(tmp / "arrays.npz", X=np.zeros((4, 2)), y=np.zeros(4))
    os.replace(tmp / "arrays.npz", tmp / "arrays.csv")


def setup_npz_is_csv(tmp):
    write_csv(tmp / "table.npz", "a,b,y\n1,2,3\n")


def setup_small_csv(tmp, rows=40):
    rng = np.random.default_rng(0)
    lines = ["x1,x2,price"] + [f"{a:.4f},{b:.4f},{50 + 3 * a - b:.4f}" for a, b in rng.normal(size=(rows, 2))]
    write_csv(tmp / "house.csv", "\n".join(lines) + "\n")


def setup_csv_changed_after_run(tmp):
    setup_small_csv(tmp)
    assert main(["train", "--dataset", f"csv:{tmp}/house.csv", "--steps", "2", "--num-inducing", "5", "--eval-every",
                 "0", "--quiet"]) == 0
    setup_small_csv(tmp, rows=41)  # one row more: other data


def write_png(path: Path, size=(6, 6), value=128, mode="L"):
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new(mode, size, value).save(path)


def setup_image_folder(tmp, sizes=((6, 6),), corrupt=0, classes=("cat", "dog")):
    for c, name in enumerate(classes):
        for i in range(6):
            write_png(tmp / "pics" / name / f"{i}.png", sizes[i % len(sizes)], 40 + 150 * c + i)
    for i in range(corrupt):
        (tmp / "pics" / classes[0] / f"broken{i}.png").write_bytes(b"not a png at all")


def setup_images_sizes(tmp):
    setup_image_folder(tmp, sizes=((6, 6), (6, 6), (8, 5)))


def setup_images_corrupt(tmp):
    setup_image_folder(tmp, corrupt=2)


def setup_images_all_corrupt(tmp):
    for name in ("cat", "dog"):
        (tmp / "pics" / name).mkdir(parents=True)
        (tmp / "pics" / name / "0.png").write_bytes(b"not a png at all")


def setup_images_empty(tmp):
    (tmp / "pics").mkdir()


def setup_images_one_class(tmp):
    setup_image_folder(tmp, classes=("cat",))


# the options that make a training command line quick
QUICK = ["--steps", "1", "--eval-every", "0", "--quiet"]


def run_cli(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    out = capsys.readouterr()
    return code, out.out, out.err


def hide_module(monkeypatch, *names):
    """Make `importlib.util.find_spec` report modules `names` as not installed."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None if name in names else real(name, *args))
