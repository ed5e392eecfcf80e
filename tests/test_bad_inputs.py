"""The published list of bad inputs: every case gets a clear error naming what went wrong, or a documented valid
behaviour, never a traceback and never a silent change. docs/bad_inputs.md is the same list as a table.

Command lines run in-process (`engine.cli.main(argv)`, the console script's code path) against a private data
directory; each asserts the exit status (2: usage, 1: refused or failed with a message, 0: valid) and that a line
of stderr starting with `invlab` names the setting. API calls assert the engine's own error type and its message.
"""
from __future__ import annotations

import gzip
import json
import os
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import torch

from engine.cli import main
from engine.errors import InvlabError

# -- fixtures that build a bad world -------------------------------------------------------------------------------


def write_idx_pair(directory: Path, images: np.ndarray, labels: np.ndarray, gz: bool = False):
    from engine.data import write_idx

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
    from engine.data import write_idx

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
    from engine.train import RunStore

    (tmp / "data").mkdir()
    path = tmp / "data" / "runs.sqlite"
    with RunStore(path) as store:
        run = store.create_run("{}", "svgp", "digits")
        for step in range(2000):
            store.log_metrics(run, step, {"loss": float(step)})
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
    from engine.train import RunStore

    with RunStore(tmp / "data" / "runs.sqlite") as store:
        _, path = store.latest_checkpoint(1)
    payload = torch.load(path, weights_only=True)
    del payload["optimizer"]
    torch.save(payload, path)


def setup_checkpoint_with_code(tmp):
    setup_one_run(tmp)
    from engine.train import RunStore

    with RunStore(tmp / "data" / "runs.sqlite") as store:
        _, path = store.latest_checkpoint(1)
    torch.save({"format": 1, "fn": os.getcwd, "obj": Path("x")}, path)  # pickled objects, not plain tensors


def _latest_checkpoint(tmp) -> Path:
    from engine.train import RunStore

    with RunStore(tmp / "data" / "runs.sqlite") as store:
        return Path(store.latest_checkpoint(1)[1])


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


# -- the command lines ---------------------------------------------------------------------------------------------


@dataclass
class Line:
    """One bad command line: what it is, what `invlab` must answer (exit code, words in the message)."""

    id: str
    argv: list[str]
    code: int
    says: tuple[str, ...]
    setup: object = None
    out: tuple[str, ...] = field(default_factory=tuple)  # for valid behaviour: words on stdout


QUICK = ["--steps", "1", "--eval-every", "0", "--quiet"]

LINES = [
    # wrong types
    Line("steps-not-int", ["train", "--steps", "abc"], 2, ("--steps", "invalid int")),
    Line("steps-float", ["train", "--steps", "1.5"], 2, ("--steps",)),
    Line("learning-rate-text", ["train", "--learning-rate", "fast"], 2, ("--learning-rate",)),
    Line("learning-rate-nan", ["train", "--learning-rate", "nan", *QUICK], 1, ("--learning-rate must be at most",)),
    Line("subset-bool", ["train", "--subset", "True"], 2, ("--subset",)),
    Line("classes-not-ints", ["train", "--classes", "a,b", *QUICK], 1, ("--classes items must be",)),
    Line("resume-not-int", ["train", "--resume", "one"], 2, ("--resume",)),
    # out-of-range values
    Line("steps-over-bound", ["train", "--steps", "20000000"], 1, ("--steps must be at most 10000000",)),
    Line("learning-rate-tiny", ["train", "--learning-rate", "1e-9", *QUICK], 1, ("--learning-rate must be at least",)),
    Line("jitter-negative", ["train", "--jitter", "-1", *QUICK], 1, ("--jitter must be at least",)),
    Line("checkpoint-every-negative", ["train", "--checkpoint-every", "-1", *QUICK], 1, ("--checkpoint-every must",)),
    Line("test-fraction-nan", ["train", "--test-fraction", "nan", *QUICK], 1, ("--test-fraction must be",)),
    Line("rotate-nan", ["train", "--rotate", "nan", *QUICK], 1, ("--rotate must be at most 180",)),
    Line("classes-repeated", ["train", "--classes", "4,4", *QUICK], 1, ("classes", "twice")),
    Line("steps-negative", ["train", "--steps", "-5"], 1, ("--steps must be at least 0, not -5",)),
    Line("learning-rate-zero", ["train", "--learning-rate", "0", *QUICK], 1, ("--learning-rate must be",)),
    Line("learning-rate-inf", ["train", "--learning-rate", "inf", *QUICK], 1, ("--learning-rate must be",)),
    Line("rotate-over-180", ["train", "--rotate", "200", *QUICK], 1, ("--rotate must be at most 180",)),
    Line("rotate-negative", ["train", "--rotate", "-1", *QUICK], 1, ("--rotate must be at least 0",)),
    Line("subset-negative", ["train", "--subset", "-3", *QUICK], 1, ("--subset must be at least 0",)),
    Line("subset-too-large", ["train", "--subset", "100000", *QUICK], 1, ("subset=100000", "1,348")),
    Line("test-fraction-one", ["train", "--test-fraction", "1", *QUICK], 1, ("--test-fraction must be",)),
    Line("test-fraction-zero", ["train", "--test-fraction", "0", *QUICK], 1, ("--test-fraction must be",)),
    Line("data-seed-negative", ["train", "--data-seed", "-1", *QUICK], 1, ("--data-seed must be at least 0",)),
    Line("batch-size-negative", ["train", "--batch-size", "-1", *QUICK], 1, ("--batch-size must be at least 0",)),
    Line("jitter-too-large", ["train", "--jitter", "1", *QUICK], 1, ("--jitter must be at most",)),
    Line("log-every-zero", ["train", "--log-every", "0", *QUICK], 1, ("--log-every must be at least 1",)),
    Line("eval-size-zero", ["train", "--eval-size", "0", *QUICK], 1, ("--eval-size must be at least 1",)),
    Line("final-lr-ratio-two", ["train", "--final-lr-ratio", "2", *QUICK], 1, ("--final-lr-ratio must be at most",)),
    Line("num-inducing-zero", ["train", "--num-inducing", "0", *QUICK], 1, ("--num-inducing must be at least 1",)),
    Line("num-inducing-huge", ["train", "--num-inducing", "100000", *QUICK], 1, ("--num-inducing", "at most 5000",)),
    Line("one-class", ["train", "--classes", "4", *QUICK], 1, ("classes", "two")),
    Line("class-not-present", ["train", "--classes", "4,99", *QUICK], 1, ("99",)),
    Line("odd-even-one-parity", ["train", "--classes", "2,4", "--odd-even", *QUICK], 1, ("odd_even",)),
    # unknown names
    Line("unknown-command", ["frobnicate"], 2, ("frobnicate",)),
    Line("unknown-model", ["train", "--model", "resnet"], 2, ("model", "resnet")),
    Line("unknown-dataset", ["train", "--dataset", "cifar10", *QUICK], 1, ("dataset", "cifar10")),
    Line("unknown-flag", ["train", "--num-layers", "3"], 2, ("--num-layers",)),
    Line("unknown-kernel", ["train", "--kernel", "gaussian"], 2, ("--kernel", "rbf")),
    Line("empty-dataset-name", ["train", "--dataset", "", *QUICK], 1, ("dataset", "digits")),
    Line("unknown-device", ["train", "--device", "tpu"], 2, ("--device",)),
    Line("cuda-missing", ["train", "--device", "cuda", *QUICK], 1, ("cuda",)),
    Line("unknown-dtype", ["train", "--dtype", "float16"], 2, ("--dtype",)),
    Line("unknown-optimizer", ["train", "--optimizer", "sgd"], 2, ("--optimizer",)),
    # options that do not apply
    Line("rotate-points", ["train", "--dataset", "symmetric-2d", "--rotate", "30", *QUICK], 1,
         ("rotate", "images only")),
    Line("rotate-tabular", ["train", "--dataset", "wine", "--rotate", "30", *QUICK], 1, ("rotate", "wine")),
    Line("odd-even-moons", ["train", "--dataset", "two-moons", "--odd-even", *QUICK], 1, ("odd_even",)),
    Line("image-model-tabular", ["train", "--model", "conv-invariant", "--dataset", "wine", *QUICK], 1,
         ("image",)),
    Line("regression-model-mismatch", ["train", "--likelihood", "bernoulli", *QUICK], 1, ("2 classes",)),
    Line("mnist-not-fetched", ["train", "--dataset", "mnist", *QUICK], 1, ("invlab fetch mnist",)),
    # source options
    Line("source-option-infinity", ["train", "--dataset", "two-moons", "--source-option", "noise=Infinity", *QUICK],
         1, ("noise",)),
    Line("source-option-nan", ["train", "--dataset", "two-moons", "--source-option", "noise=NaN", *QUICK],
         1, ("noise",)),
    Line("source-option-negative", ["train", "--dataset", "two-moons", "--source-option", "noise=-1", *QUICK],
         1, ("noise",)),
    Line("source-option-bool-count", ["train", "--dataset", "two-moons", "--source-option", "num_train=true",
                                      *QUICK], 1, ("num_train",)),
    Line("source-option-text-count", ["train", "--dataset", "rectangles", "--source-option", "num_train=many",
                                      *QUICK], 1, ("num_train",)),
    Line("source-option-float-count", ["train", "--dataset", "rectangles", "--source-option", "num_train=2.5",
                                       *QUICK], 1, ("num_train",)),
    Line("source-option-empty-key", ["train", "--source-option", "=3", *QUICK], 1, ("KEY=VALUE",)),
    Line("source-option-list-count", ["train", "--dataset", "two-moons", "--source-option", "num_train=[1,2]",
                                      *QUICK], 1, ("num_train",)),
    Line("source-option-unknown", ["train", "--source-option", "colour=red", *QUICK], 1, ("colour",)),
    Line("source-option-no-equals", ["train", "--source-option", "noise", *QUICK], 1, ("KEY=VALUE",)),
    Line("source-option-no-room", ["train", "--dataset", "rectangles", "--source-option", "image_size=8",
                                   "--source-option", "min_side_gap=20", *QUICK], 1, ("min_side_gap",)),
    # bad paths
    Line("idx-no-dir", ["train", "--dataset", "idx:", *QUICK], 1, ("idx:",)),
    Line("idx-missing-dir", ["train", "--dataset", "idx:{tmp}/nowhere", *QUICK], 1, ("does not exist",)),
    Line("idx-path-is-file", ["train", "--dataset", "idx:{tmp}/note.txt", *QUICK], 1, ("not a directory",),
         lambda tmp: (tmp / "note.txt").write_text("hello")),
    Line("idx-empty-dir", ["train", "--dataset", "idx:{tmp}/empty", *QUICK], 1, ("train images",),
         setup_idx_empty_dir),
    Line("idx-zero-images", ["train", "--dataset", "idx:{tmp}/zero", *QUICK], 1, ("0 images",),
         setup_idx_zero_images),
    Line("idx-float32-pixels", ["train", "--dataset", "idx:{tmp}/float", *QUICK], 1, ("float32", "[0, 1]"),
         setup_idx_float32_pixels),
    Line("idx-gzip-bomb", ["train", "--dataset", "idx:{tmp}/bomb", *QUICK], 1, ("header",), setup_idx_bomb),
    Line("idx-one-class", ["train", "--dataset", "idx:{tmp}/one", *QUICK], 1, ("class",), setup_idx_one_class),
    Line("idx-nan-pixel", ["train", "--dataset", "idx:{tmp}/nan", *QUICK], 1, ("1 non-finite",), setup_idx_nan),
    # bad --resume ids and checkpoints
    Line("resume-unknown-id", ["train", "--resume", "7"], 1, ("no run with id 7",)),
    Line("resume-negative-id", ["train", "--resume", "-1"], 2, ("--resume", "run id", "-1")),
    Line("resume-zero-id", ["train", "--resume", "0"], 2, ("--resume", "run id", "'0'")),
    Line("resume-huge-id", ["train", "--resume", "99999999999999999999"], 2,
         ("--resume", "9223372036854775807", "99999999999999999999")),
    Line("compare-huge-id", ["compare", "99999999999999999999999"], 2,
         ("sweep id", "9223372036854775807", "99999999999999999999999")),
    Line("compare-zero-id", ["compare", "0"], 2, ("sweep id", "'0'")),
    Line("sweep-resume-huge-id", ["sweep", "--resume", "99999999999999999999999"], 2,
         ("--resume", "sweep id", "99999999999999999999999")),
    Line("checkpoint-empty", ["train", "--resume", "1", "--steps", "3", "--quiet"], 1,
         ("empty", ".pt", "--restart"), setup_checkpoint_empty),
    Line("checkpoint-plain-pickle", ["train", "--resume", "1", "--steps", "3", "--quiet"], 1,
         ("pickle", ".pt"), setup_checkpoint_plain_pickle),
    Line("checkpoint-without-optimiser", ["train", "--resume", "1", "--steps", "3", "--quiet"], 1,
         ("optimizer",), setup_checkpoint_without_optimiser),
    Line("checkpoint-with-code", ["train", "--resume", "1", "--steps", "3", "--quiet"], 1, ("checkpoint",),
         setup_checkpoint_with_code),
    # the data directory and the run store
    Line("data-dir-is-file-train", ["train", *QUICK], 1, ("INVLAB_DATA", "not a directory"),
         setup_data_dir_is_file),
    Line("data-dir-is-file-runs", ["runs"], 1, ("INVLAB_DATA", "not a directory"), setup_data_dir_is_file),
    Line("store-not-sqlite-runs", ["runs"], 1, ("runs.sqlite", "move it aside"), setup_corrupt_store),
    Line("store-not-sqlite-train", ["train", *QUICK], 1, ("runs.sqlite", "move it aside"), setup_corrupt_store),
    Line("store-corrupt-page-runs", ["runs"], 1, ("runs.sqlite", "move it aside"), setup_corrupt_runs_page),
    Line("store-corrupt-page-train", ["train", *QUICK], 1, ("runs.sqlite", "move it aside"), setup_corrupt_page),
    Line("store-is-directory", ["runs"], 1, ("runs.sqlite",), setup_store_is_dir),
    # runs / fetch / serve
    Line("runs-limit-text", ["runs", "--limit", "ten"], 2, ("--limit",)),
    Line("runs-limit-negative", ["runs", "--limit", "-1"], 2, ("--limit",)),
    Line("runs-limit-huge", ["runs", "--limit", "99999999999999999999"], 2, ("--limit",)),
    Line("runs-unknown-flag", ["runs", "--all"], 2, ("--all",)),
    Line("fetch-no-name", ["fetch"], 2, ("name",)),
    Line("fetch-unknown", ["fetch", "cifar10"], 2, ("cifar10",)),
    Line("serve-port-text", ["serve", "--port", "http"], 2, ("--port",)),
    Line("serve-port-out-of-range", ["serve", "--port", "70000"], 2, ("--port", "65535")),
    Line("serve-port-negative", ["serve", "--port", "-1"], 2, ("--port",)),
    Line("serve-num-procs-negative", ["serve", "--num-procs", "-2"], 2, ("--num-procs",)),
    Line("serve-max-training-zero", ["serve", "--max-training", "0"], 2, ("--max-training",)),
    Line("serve-max-memory-nan", ["serve", "--max-memory-mb", "nan"], 2, ("--max-memory-mb", "finite")),
    Line("serve-max-memory-inf", ["serve", "--max-memory-mb", "inf"], 2, ("--max-memory-mb", "finite")),
    Line("serve-max-steps-per-s-negative", ["serve", "--max-steps-per-s", "-1"], 2,
         ("--max-steps-per-s", "at least 0")),
    Line("serve-max-steps-per-s-nan", ["serve", "--max-steps-per-s", "nan"], 2, ("--max-steps-per-s", "finite")),
    # sweeps
    Line("sweep-too-many-seeds", ["sweep", "--dry-run", "--seeds", "100000000", "--vary", "data.subset=10"], 2,
         ("100,000,000 runs", "10,000")),
    Line("sweep-grid-too-large", ["sweep", "--dry-run", "--seeds", "20", "--vary", "train.steps=" + ",".join(
        map(str, range(1, 31))), "--vary", "data.subset=" + ",".join(map(str, range(10, 40)))], 2,
         ("18,000 runs", "30 × 30", "20 seeds")),
    Line("sweep-file-is-directory", ["sweep", "{tmp}"], 2, ("is a directory",)),
    Line("sweep-file-is-fifo", ["sweep", "{tmp}/sweep.toml"], 2, ("not a regular file",), setup_fifo),
    Line("sweeps-limit-negative", ["sweeps", "--limit", "-1"], 2, ("--limit", "0 to")),
    Line("sweep-set-out-of-range", ["sweep", "--dry-run", "--set", "train.steps=-1", "--vary", "data.subset=10"], 2,
         ("base configuration", "train.steps must be at least 0, not -1")),
    # the notebooks
    Line("notebooks-already-there", ["notebooks", "{tmp}/nb"], 1, ("already exist", "nothing was copied"),
         lambda tmp: main(["notebooks", str(tmp / "nb")])),
    Line("notebooks-into-a-file", ["notebooks", "{tmp}/notes"], 1, ("is a file",),
         lambda tmp: (tmp / "notes").write_text("mine")),
    # your own data
    Line("csv-missing-values", ["train", "--dataset", "csv:{tmp}/gaps.csv", *QUICK], 1,
         ("missing values", "line 3", "'b'", "dropna=True"), setup_csv_missing),
    Line("csv-text-in-column", ["train", "--dataset", "csv:{tmp}/text.csv", *QUICK], 1,
         ("column 'b'", "'five'", "line 3"), setup_csv_text),
    Line("csv-one-class", ["train", "--dataset", "csv:{tmp}/one.csv", *QUICK], 1, ("one class", "'1'"),
         setup_csv_one_class),
    Line("csv-unknown-target", ["train", "--dataset", "{tmp}/house.csv", "--source-option", "target=cost", *QUICK], 1,
         ("no column 'cost'", "'price'"), setup_small_csv),
    Line("csv-ragged-rows", ["train", "--dataset", "csv:{tmp}/ragged.csv", *QUICK], 1, ("different lengths",),
         setup_csv_ragged),
    Line("csv-empty-file", ["train", "--dataset", "csv:{tmp}/empty.csv", *QUICK], 1, ("empty",), setup_csv_empty),
    Line("csv-is-not-csv", ["train", "--dataset", "csv:{tmp}/arrays.csv", *QUICK], 1, ("zip archive", "npz:"),
         setup_csv_is_npz),
    Line("npz-is-not-npz", ["train", "--dataset", "npz:{tmp}/table.npz", *QUICK], 1, ("not an npz", "csv:"),
         setup_npz_is_csv),
    Line("path-says-nothing", ["train", "--dataset", "{tmp}/notes", *QUICK], 1, ("does not say", "csv:"),
         lambda tmp: (tmp / "notes").write_text("1,2\n")),
    Line("images-empty-folder", ["train", "--dataset", "images:{tmp}/pics", *QUICK], 1, ("no class folders",),
         setup_images_empty),
    Line("images-all-corrupt", ["train", "--dataset", "images:{tmp}/pics", *QUICK], 1,
         ("none of the 2 image files", "corrupt"), setup_images_all_corrupt),
    Line("images-one-class", ["train", "--dataset", "images:{tmp}/pics", *QUICK], 1, ("one class folder", "'cat'"),
         setup_images_one_class),
    Line("resume-after-csv-changed", ["train", "--resume", "1", "--steps", "4", "--quiet"], 1,
         ("run 1 was trained on", "house.csv", "data now is", "--restart"),
         setup_csv_changed_after_run),
    Line("images-different-sizes-resized", ["train", "--dataset", "images:{tmp}/pics", *QUICK], 0,
         ("2 sizes", "resized to 6×6"), setup_images_sizes, out=("step 1",)),
    Line("images-corrupt-skipped", ["train", "--dataset", "images:{tmp}/pics", *QUICK], 0,
         ("skipped 2 unreadable",), setup_images_corrupt, out=("step 1",)),
    Line("csv-dropna-drops-rows", ["train", "--dataset", "csv:{tmp}/gaps.csv", "--source-option", "dropna=true",
                                   "--test-fraction", "0.3", "--num-inducing", "2", *QUICK], 0,
         ("dropped 1 row",), setup_csv_missing, out=("step 1",)),
    Line("serve-admin-without-logins", ["serve", "--admin", "lecturer"], 2, ("--admin", "--basic-auth")),
    # discover
    Line("discover-no-candidates", ["discover", "--dataset", "diabetes", "--serial", "--quiet"], 1,
         ("no candidate invariance applies to diabetes", "rotation: acts on images", "permutations: all permutations "
          "of D=10", "sign_flips")),
    Line("discover-scheduler-unreachable", ["discover", "--dataset", "symmetric-2d", "--scheduler",
                                            "tcp://127.0.0.1:9", "--quiet"], 1,
         ("no dask scheduler answered at tcp://127.0.0.1:9", "dask scheduler")),
    Line("discover-orbit-takes-no-coordinates", ["discover", "--dataset", "digits", "--orbit", "rotation:0,1",
                                                 "--serial", "--quiet"], 1,
         ("--orbit 'rotation:0,1': rotation takes no coordinates", "permutations, sign_flips")),
    Line("discover-orbit-coordinates-out-of-range", ["discover", "--dataset", "symmetric-2d", "--orbit",
                                                     "permutations:0,5", "--serial", "--quiet"], 1,
         ("--orbit permutations:0,5 does not apply", "name coordinate 5", "D=2")),
    Line("discover-orbit-for-images-on-vectors", ["discover", "--dataset", "symmetric-2d", "--orbit", "flips",
                                                  "--serial", "--quiet"], 1,
         ("--orbit flips does not apply to these vector inputs", "acts on images")),
    Line("discover-unknown-orbit", ["discover", "--dataset", "digits", "--orbit", "spin", "--serial", "--quiet"], 1,
         ("--orbit 'spin' is not a registered augmentation", "rotation")),
    # valid, documented behaviour
    Line("num-inducing-over-n", ["train", "--subset", "40", "--num-inducing", "500", *QUICK], 0,
         ("num_inducing=500", "40 training points"), out=("step 1",)),
    Line("runs-limit-zero-lists-all", ["runs", "--limit", "0"], 0, (), setup_empty_data_dir,
         out=("no runs stored yet in", "runs.sqlite")),
    Line("dataset-name-any-case", ["train", "--dataset", "Two_Moons", *QUICK], 0, ("on two-moons",)),
    Line("classes-empty-keeps-all", ["train", "--classes", "", *QUICK], 0, ("(1348 train",)),
    Line("steps-zero-evaluates-only", ["train", "--steps", "0", "--quiet"], 0, (), out=("step 0", "test error")),
]


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A private data directory; `serve` must never start a server from here."""
    monkeypatch.setenv("INVLAB_DATA", str(tmp_path / "data"))

    def no_server(*args, **kwargs):
        raise AssertionError("a bad `invlab serve` line reached the server start")

    monkeypatch.setattr(os, "execve", no_server)
    monkeypatch.setattr("subprocess.call", no_server)
    return tmp_path


def run_cli(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("line", LINES, ids=[line.id for line in LINES])
def test_command_line(line: Line, world, capsys):
    if line.setup is not None:
        line.setup(world)
        capsys.readouterr()
    argv = [a.format(tmp=world) for a in line.argv]
    code, out, err = run_cli(argv, capsys)
    assert "Traceback" not in err and "Traceback" not in out
    assert code == line.code, err
    if line.code:
        messages = [m for m in err.splitlines() if m.startswith(("invlab", "usage: invlab")) and "error" in m
                    or m.startswith("invlab")]
        said = [m for m in messages if all(w.lower() in m.lower() for w in line.says)]
        assert said, f"no one-line message naming {line.says}: {err}"
    else:
        assert all(w in err for w in line.says), err
        assert all(w in out for w in line.out), out


# -- the API -------------------------------------------------------------------------------------------------------


def _digits_trainer(**model):
    from engine.train import RunConfig, Trainer

    config = RunConfig(data={"dataset": "digits", "subset": 60}, model_config={"num_inducing": 10, **model},
                       train={"steps": 1, "eval_every": 0})
    return Trainer(config)


@pytest.fixture(scope="module")
def trainer():
    return _digits_trainer()


def _nan_images(n=3, where=((0, 0, 1, 1),)):
    X = np.zeros((n, 1, 8, 8))
    for index in where:
        X[index] = np.nan
    return X


def api_load_subset_bool():
    from engine.data import load

    load("digits", subset=True)


def api_load_test_subset_bool():
    from engine.data import load

    load("digits", test_subset=False)


def api_load_seed_bool():
    from engine.data import load

    load("digits", seed=True)


def api_load_num_train_bool():
    from engine.data import load

    load("two-moons", num_train=True)


def api_load_noise_inf():
    from engine.data import load

    load("two-moons", noise=float("inf"))


def api_load_name_not_str():
    from engine.data import load

    load(7)


def api_load_classes_str():
    from engine.data import load

    load("digits", classes="4,9")


def api_dataset_nan_train():
    from engine.data import Dataset

    X = np.zeros((10, 2))
    X[3, 1] = np.nan
    Dataset("toy", X, np.arange(10) % 2, np.zeros((4, 2)), np.arange(4) % 2, num_classes=2)


def api_dataset_inf_test():
    from engine.data import Dataset

    X = np.zeros((4, 2))
    X[0, 0] = X[2, 1] = np.inf
    Dataset("toy", np.zeros((10, 2)), np.arange(10) % 2, X, np.arange(4) % 2, num_classes=2)


def api_dataset_nan_target():
    from engine.data import Dataset

    y = np.zeros(10)
    y[5] = np.nan
    Dataset("toy", np.zeros((10, 2)), y, np.zeros((4, 2)), np.zeros(4), task="regression")


def api_dataset_text_inputs():
    from engine.data import Dataset

    Dataset("toy", np.array([["a", "b"]] * 4), np.arange(4) % 2, np.zeros((2, 2)), np.arange(2) % 2, num_classes=2)


def api_runconfig_data_str():
    from engine.train import RunConfig

    RunConfig(data="digits").validate()


def api_runconfig_train_list():
    from engine.train import RunConfig

    RunConfig(train=[("steps", 3)]).validate()


def api_runconfig_steps_bool():
    from engine.train import RunConfig

    RunConfig(train={"steps": True}).validate()


def api_runconfig_num_inducing_bool():
    from engine.train import RunConfig

    RunConfig(model_config={"num_inducing": True}).validate()


def api_runconfig_subset_bool():
    from engine.train import RunConfig

    RunConfig(data={"dataset": "digits", "subset": True}).validate()


def api_runconfig_unknown_model():
    from engine.train import RunConfig

    RunConfig(model="resnet").validate()


def api_runconfig_from_bad_json():
    from engine.train import RunConfig

    RunConfig.from_json("{not json")


def api_trainer_on_dataset_with_nan():
    from engine.data import load
    from engine.train import RunConfig, Trainer

    ds = load("digits", subset=60)
    ds.X_train[5, 0, 3, 3] = np.nan  # changed after loading
    Trainer(RunConfig(model_config={"num_inducing": 10}, train={"steps": 1}), dataset=ds)


def api_limits_memory_nan():
    from dashboard.limits import ServerLimits

    ServerLimits.from_env({"INVLAB_MAX_MEMORY_MB": "nan"})


def api_limits_memory_inf():
    from dashboard.limits import ServerLimits

    ServerLimits.from_env({"INVLAB_MAX_MEMORY_MB": "inf"})


def api_sweep_spec_too_many_seeds():
    from engine.sweeps import SweepSpec

    SweepSpec.from_dict({"seeds": 10**9})


def api_dataframe_unknown_target():
    import pandas as pd

    from engine.data import load

    load(pd.DataFrame({"area": [1.0, 2.0, 3.0, 4.0], "price": [1.0, 2.0, 3.0, 5.0]}), target="cost")


def api_arrays_test_without_labels():
    from engine.data import load

    load((np.zeros((8, 2)), np.arange(8) % 2), X_test=np.zeros((2, 2)))


def api_parquet_without_pyarrow():
    import tempfile

    from engine.data import load

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "table.parquet"
        path.write_bytes(b"PAR1" + bytes(64) + b"PAR1")
        saved = sys.modules.get("pyarrow")
        sys.modules["pyarrow"] = None  # as if it were not installed
        try:
            load(f"parquet:{path}")
        finally:
            if saved is None:
                del sys.modules["pyarrow"]
            else:
                sys.modules["pyarrow"] = saved


def _circles_checkpoint(tmp: Path):
    from sklearn.datasets import make_circles

    from engine.data import Dataset
    from engine.train import RunConfig, Trainer

    X, y = make_circles(80, noise=0.05, factor=0.5, random_state=0)
    ds = Dataset("circles", X[:60], y[:60], X[60:], y[60:], num_classes=2)
    trainer = Trainer(RunConfig(model_config={"num_inducing": 8}, train={"steps": 1, "eval_every": 0}), dataset=ds)
    trainer.step()
    return trainer.save_checkpoint(tmp / "circles.pt")


def api_checkpoint_hand_built_data():
    import tempfile

    from engine.train import Trainer

    with tempfile.TemporaryDirectory() as tmp:
        Trainer.from_checkpoint(_circles_checkpoint(Path(tmp)))


def api_checkpoint_other_input_shape():
    import tempfile

    from engine.data import load
    from engine.train import Trainer

    with tempfile.TemporaryDirectory() as tmp:
        Trainer.from_checkpoint(_circles_checkpoint(Path(tmp)), dataset=load("wine"))


def api_page_file_outside_data_dirs():
    from dashboard.limits import ServerLimits
    from engine.train import RunConfig

    ServerLimits(data_dirs=("/srv/lab-data",)).check(RunConfig(data={"dataset": "csv:/etc/hosts.csv"}))


def api_page_bare_path_outside_data_dirs():
    from dashboard.limits import ServerLimits
    from engine.train import RunConfig

    ServerLimits(data_dirs=("/srv/lab-data",)).check(RunConfig(data={"dataset": "/home/someone/private.csv"}))


def api_page_file_over_limit():
    import tempfile

    from dashboard.limits import ServerLimits
    from engine.train import RunConfig

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.csv"
        path.write_text("a,b,y\n" + "1.0,2.0,3.0\n" * 200_000)  # 2.3 MB
        ServerLimits(max_memory_mb=1, data_dirs=(tmp,)).check(RunConfig(data={"dataset": f"csv:{path}"}))


def api_store_run_of_another_user():
    import tempfile

    from engine.train import RunStore

    with tempfile.TemporaryDirectory() as tmp:
        with RunStore(Path(tmp) / "runs.sqlite", owner="alice") as alice:
            run = alice.create_run("{}", "svgp", "digits")
        with RunStore(Path(tmp) / "runs.sqlite", owner="bob") as bob:
            bob.get_run(run)


def api_server_admins_not_a_list():
    from dashboard.limits import ServerLimits

    ServerLimits.from_env({"INVLAB_ADMINS": "lecturer"})


def api_register_kernel_name_clash():
    import engine.kernels

    @engine.kernels.register("rbf")
    class MyRBF(engine.kernels.Stationary):
        pass


def api_register_augmentation_name_clash():
    import engine.transforms

    @engine.transforms.register("rotation")
    class MyRotation(engine.transforms.FiniteOrbit):
        orbit_size = 2


def api_register_model_name_clash():
    from engine.models import ModelSpec, SVGPConfig, register

    def build_my_svgp(config, X, y, info, *, generator=None):
        raise AssertionError("never built")

    register(ModelSpec("svgp", SVGPConfig, build_my_svgp))


def api_check_kernel_not_psd():
    from engine.kernels import Stationary
    from engine.testing import check_kernel

    class NotPSD(Stationary):
        def K_r2(self, r2):
            return 1.0 - r2

    check_kernel(NotPSD(5))


def api_watch_read_only_data_dir():
    import tempfile

    from engine.train import watch

    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o555)
        try:
            watch(name="my-loop", data_dir=tmp)
        finally:
            os.chmod(tmp, 0o755)


def api_watch_without_a_name():
    from engine.train import watch

    watch(name=" ")


API = {
    "watch-read-only-data-dir": (api_watch_read_only_data_dir, ("is read-only", "'my-loop'", "chmod u+w",
                                                                "data_dir=")),
    "watch-without-a-name": (api_watch_without_a_name, ("watch needs a name", "name='my-loop'")),
    "store-run-of-another-user": (api_store_run_of_another_user, ("run 1 belongs to another user",)),
    "server-admins-not-a-list": (api_server_admins_not_a_list, ("INVLAB_ADMINS", "--admin")),
    "load-subset-bool": (api_load_subset_bool, ("subset", "True")),
    "load-test-subset-bool": (api_load_test_subset_bool, ("test_subset",)),
    "load-seed-bool": (api_load_seed_bool, ("seed",)),
    "load-num-train-bool": (api_load_num_train_bool, ("num_train",)),
    "load-noise-inf": (api_load_noise_inf, ("noise",)),
    "load-name-not-str": (api_load_name_not_str, ("string",)),
    "load-classes-str": (api_load_classes_str, ("classes",)),
    "dataset-nan-train": (api_dataset_nan_train, ("X_train", "1 non-finite", "(3, 1)")),
    "dataset-inf-test": (api_dataset_inf_test, ("X_test", "2 non-finite")),
    "dataset-nan-target": (api_dataset_nan_target, ("y_train", "1 non-finite")),
    "dataset-text-inputs": (api_dataset_text_inputs, ("X_train", "numbers")),
    "runconfig-data-str": (api_runconfig_data_str, ("data", "dict", "{'dataset': 'digits'}")),
    "runconfig-train-list": (api_runconfig_train_list, ("train", "dict")),
    "runconfig-steps-bool": (api_runconfig_steps_bool, ("steps", "True")),
    "runconfig-num-inducing-bool": (api_runconfig_num_inducing_bool, ("num_inducing", "True")),
    "runconfig-subset-bool": (api_runconfig_subset_bool, ("subset", "True")),
    "runconfig-unknown-model": (api_runconfig_unknown_model, ("resnet",)),
    "runconfig-bad-json": (api_runconfig_from_bad_json, ("configuration",)),
    "trainer-dataset-nan": (api_trainer_on_dataset_with_nan, ("X_train", "1 non-finite")),
    "limits-memory-nan": (api_limits_memory_nan, ("INVLAB_MAX_MEMORY_MB", "finite")),
    "limits-memory-inf": (api_limits_memory_inf, ("INVLAB_MAX_MEMORY_MB", "finite")),
    "sweep-spec-too-many-seeds": (api_sweep_spec_too_many_seeds, ("1,000,000,000 runs",)),
    "dataframe-unknown-target": (api_dataframe_unknown_target, ("no column 'cost'", "'price'")),
    "arrays-test-without-labels": (api_arrays_test_without_labels, ("X_test and y_test",)),
    "parquet-without-pyarrow": (api_parquet_without_pyarrow, ("pip install pyarrow",)),
    "checkpoint-hand-built-data": (api_checkpoint_hand_built_data, ("hand-built dataset 'circles'", "dataset=")),
    "checkpoint-other-input-shape": (api_checkpoint_other_input_shape, ("other inputs", "'circles'", "wine")),
    "page-file-outside-data-dirs": (api_page_file_outside_data_dirs, ("--allow-data-dir",)),
    "page-bare-path-outside-data-dirs": (api_page_bare_path_outside_data_dirs, ("--allow-data-dir",)),
    "page-file-over-limit": (api_page_file_over_limit, ("2 MB", "--max-memory-mb")),
    "register-kernel-name-clash": (api_register_kernel_name_clash, (
        "kernel name 'rbf' is taken by the built-in kernel engine.kernels.stationary.RBF", "MyRBF",
        "under another name")),
    "register-augmentation-name-clash": (api_register_augmentation_name_clash, (
        "augmentation name 'rotation' is taken by the built-in augmentation engine.transforms.rotation",
        "MyRotation")),
    "register-model-name-clash": (api_register_model_name_clash, (
        "model name 'svgp' is taken by the built-in model family engine.models.svgp.build_svgp", "build_my_svgp")),
    "check-kernel-not-psd": (api_check_kernel_not_psd, ("kernel NotPSD fails the kernel contract: PSD:", "eigenvalue")),
}


@pytest.mark.parametrize("case", list(API))
def test_api_call(case):
    call, says = API[case]
    with pytest.raises(InvlabError) as info:
        call()
    message = str(info.value)
    assert all(w in message for w in says), message
    assert "\n" not in message.strip()


PREDICT = {
    "predict-wrong-shape": (lambda: np.zeros((3, 64)), ("(64,)", "(1, 8, 8)")),
    "predict-one-point-no-batch": (lambda: np.zeros((1, 8, 8)), ("(8, 8)",)),
    "predict-nan": (lambda: _nan_images(3, [(0, 0, 1, 1), (2, 0, 4, 4)]), ("2 non-finite", "X")),
    "predict-inf": (lambda: np.full((2, 1, 8, 8), np.inf), ("128 non-finite",)),
    "predict-text": (lambda: np.full((2, 1, 8, 8), "a"), ("numbers",)),
}


@pytest.mark.parametrize("case", list(PREDICT))
def test_predict_refuses(case, trainer):
    make, says = PREDICT[case]
    with pytest.raises(InvlabError) as info:
        trainer.predict(make())
    assert all(w in str(info.value) for w in says), str(info.value)


def test_predict_accepts_float32_and_lists(trainer):
    """Valid: any real dtype, a list of lists, or a tensor is converted to the trainer's dtype."""
    X = np.random.default_rng(0).random((4, 1, 8, 8))
    ref = trainer.predict(X).probs
    assert torch.allclose(trainer.predict(X.astype(np.float32)).probs, ref, atol=1e-5)
    assert torch.allclose(trainer.predict(X.tolist()).probs, ref)
    assert torch.allclose(trainer.predict(torch.as_tensor(X)).probs, ref)


def test_inducing_points_over_n_are_announced_not_silent():
    """M > N is a documented valid behaviour: the model uses M = N, and the trainer says so in its warning."""
    trainer = _digits_trainer(num_inducing=500)
    assert trainer.model.Z.shape[0] == 60 if hasattr(trainer.model, "Z") else True
    assert "num_inducing=500" in (trainer.last_warning or "") and "60 training points" in trainer.last_warning


def test_checkpoint_errors_never_suggest_unsafe_loading(tmp_path):
    from engine.train.checkpoint import CheckpointError, load_checkpoint

    path = tmp_path / "evil.pt"
    torch.save({"format": 1, "fn": os.getcwd}, path)
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    assert "weights_only" not in str(info.value) and "evil.pt" in str(info.value)


def test_checkpoint_missing_keys_are_named(tmp_path):
    from engine.train.checkpoint import CheckpointError, load_checkpoint

    path = tmp_path / "partial.pt"
    torch.save({"format": 1, "model": {}, "step": 3, "config": "{}"}, path)
    with pytest.raises(CheckpointError, match="optimizer") as info:
        load_checkpoint(path)
    assert "rng" in str(info.value)


def test_no_case_prints_a_traceback_in_a_real_process(tmp_path):
    """The console entry itself (not only `main`) turns a store fault into a message: one subprocess."""
    import subprocess

    setup_corrupt_store(tmp_path)
    env = dict(os.environ, INVLAB_DATA=str(tmp_path / "data"))
    out = subprocess.run([sys.executable, "-m", "engine", "runs"], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 1 and "Traceback" not in out.stderr and "move it aside" in out.stderr
    assert (tmp_path / "data" / "runs.sqlite").read_bytes().startswith(b"this is not a database")  # untouched


# -- the store under faults: locked by another program, read-only, no data directory --------------------------------


@pytest.fixture
def quick_store(monkeypatch):
    """Short waits for the lock, so a test sees queueing and giving up in a fraction of a second."""
    from engine.train import RunStore

    monkeypatch.setattr(RunStore, "busy_timeout", 0.05)
    monkeypatch.setattr(RunStore, "max_wait", 0.3)
    return RunStore


def _hold_write_lock(path):
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # what a long write by another program looks like from here
    return other


def test_a_store_locked_by_another_program_queues_writes_and_training_goes_on(tmp_path, quick_store):
    from engine.train import RunConfig, Trainer

    heard = []
    store = quick_store(tmp_path / "runs.sqlite", on_busy=heard.append)
    config = RunConfig(data={"dataset": "digits", "subset": 60}, model_config={"num_inducing": 10},
                       train={"steps": 40, "log_every": 5, "flush_every": 10, "eval_every": 20,
                              "checkpoint_every": 20})
    trainer = Trainer(config, store=store)
    other = _hold_write_lock(store.path)
    for _ in trainer.run():
        pass
    assert trainer.step_count == 40 and trainer.status == "finished"  # the run was never stopped
    assert store.pending > 0 and "locked by another program" in heard[0] and "training goes on" in heard[0]
    assert store.get_run(trainer.run_id).status == "created"  # nothing reached the file yet
    other.rollback()  # the other program lets go
    assert store.flush() and "writable again" in heard[-1]
    record = store.get_run(trainer.run_id)
    assert (record.status, record.step) == ("finished", 40)
    stored = store.metrics(trainer.run_id)
    assert set(stored) == set(trainer.history)
    for name, (steps, values) in trainer.history.items():
        assert stored[name] == (list(steps), list(values)), name  # every value, none twice
    assert store.latest_checkpoint(trainer.run_id)[0] == 40
    store.close()


def test_a_store_locked_at_close_sets_its_queue_aside_and_the_next_store_takes_it(tmp_path, quick_store):
    from engine.errors import InvlabError

    path = tmp_path / "runs.sqlite"
    store = quick_store(path)
    run = store.create_run("{}", "svgp", "digits")
    other = _hold_write_lock(path)
    for step in range(30):
        store.log_metrics(run, step, {"loss": float(step)})
    store.update_run(run, status="finished", step=29)
    with pytest.raises(InvlabError, match="stayed locked by another program .* saved in .*queued-.*json"):
        store.close()
    other.rollback()
    other.close()
    with quick_store(path) as again:
        assert again.get_run(run).status == "finished"
        assert again.metrics(run)["loss"] == (list(range(30)), [float(s) for s in range(30)])
    assert not list(tmp_path.glob("*.json*"))  # taken back once, then removed


def test_train_refuses_to_start_on_a_store_that_stays_locked(tmp_path, monkeypatch, capsys, quick_store):
    monkeypatch.setenv("INVLAB_DATA", str(tmp_path / "data"))
    quick_store(tmp_path / "data" / "runs.sqlite").close()
    other = _hold_write_lock(tmp_path / "data" / "runs.sqlite")
    code, _, err = run_cli(["train", *QUICK], capsys)
    other.rollback()
    assert code == 1 and "Traceback" not in err
    assert "locked by another program" in err and "fuser" in err
    with quick_store(tmp_path / "data" / "runs.sqlite") as store:
        assert store.list_runs() == []  # nothing half-started


def _read_only(path: Path, monkeypatch):
    """The store file opened read-only, as for a file without write permission (root ignores chmod)."""
    import engine.train.store as store_module

    real = sqlite3.connect

    def connect(target, *args, **kwargs):
        if str(target) == str(path):
            kwargs.pop("uri", None)
            return real(f"file:{path}?mode=ro", *args, uri=True, **kwargs)
        return real(target, *args, **kwargs)

    monkeypatch.setattr(store_module.sqlite3, "connect", connect)


def test_a_read_only_store_lists_its_runs_and_refuses_new_ones_with_the_fix(world, capsys, monkeypatch):
    setup_one_run(world)
    path = world / "data" / "runs.sqlite"
    capsys.readouterr()
    _read_only(path, monkeypatch)
    code, out, _ = run_cli(["runs"], capsys)
    assert code == 0 and "finished" in out
    code, _, err = run_cli(["train", *QUICK], capsys)
    assert code == 1 and "Traceback" not in err and "read-only" in err and "INVLAB_DATA" in err


def test_a_data_directory_that_cannot_be_created_is_named(world, capsys, monkeypatch):
    real = Path.mkdir

    def mkdir(self, *args, **kwargs):
        if str(self).startswith(str(world / "data")):
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    code, _, err = run_cli(["train", *QUICK], capsys)  # `invlab runs` creates nothing (the next test)
    assert code == 1 and "Traceback" not in err
    assert "INVLAB_DATA" in err and "cannot be created (Permission denied)" in err


def test_a_data_directory_that_does_not_exist_is_named_and_not_created_by_listing(world, capsys, monkeypatch):
    mistyped = world / "nonexistent" / "deep" / "x"
    monkeypatch.setenv("INVLAB_DATA", str(mistyped))
    for command in ("runs", "sweeps"):
        code, out, err = run_cli([command], capsys)
        assert code == 1 and "Traceback" not in err and out == ""
        assert f"invlab {command}: no run store at {mistyped / 'runs.sqlite'}: INVLAB_DATA={mistyped} does not " \
               "exist; check the path" in err
        assert not (world / "nonexistent").exists()  # nothing was created
    monkeypatch.delenv("INVLAB_DATA")
    monkeypatch.setenv("HOME", str(world / "home"))  # the default data directory, not made yet: nothing stored
    code, out, _ = run_cli(["runs"], capsys)
    assert code == 0 and f"no runs stored yet in {world / 'home' / '.cache' / 'invlab' / 'runs.sqlite'}" in out
    assert not (world / "home").exists()
    code, _, _ = run_cli(["train", *QUICK], capsys)  # a command that writes makes it
    assert code == 0 and (world / "home" / ".cache" / "invlab" / "runs.sqlite").exists()


def test_a_read_only_data_directory_is_listed_and_opened_read_only(world, capsys):
    """runs.sqlite mode 444 in a folder mode 555. Root may write through any mode, so what shows the store was
    opened read-only is that nothing in the folder changed: no WAL or lock files appeared, no byte of the store."""
    from engine.train import RunStore

    setup_one_run(world)
    data = world / "data"
    with RunStore(data / "runs.sqlite") as store:
        store.create_sweep("rotation-choice", "{}", 4)
    files = {path.name: path.read_bytes() for path in data.iterdir() if path.is_file()}
    (data / "runs.sqlite").chmod(0o444)
    data.chmod(0o555)
    capsys.readouterr()
    try:
        code, out, err = run_cli(["runs"], capsys)
        assert code == 0 and "finished" in out, err
        code, out, err = run_cli(["sweeps"], capsys)
        assert code == 0 and "rotation-choice" in out and "0/4" in out, err
        code, _, err = run_cli(["train", "--resume", "1", "--steps", "4", "--quiet"], capsys)
        assert code == 1 and "Traceback" not in err
        assert f"the run store {data / 'runs.sqlite'} is read-only" in err and "chmod u+w" in err
        assert {path.name: path.read_bytes() for path in data.iterdir() if path.is_file()} == files
    finally:
        data.chmod(0o755)
        (data / "runs.sqlite").chmod(0o644)
    (data / "runs.sqlite").chmod(0o444)  # the file alone read-only, its folder writable: listed as well
    try:
        code, out, err = run_cli(["runs"], capsys)
        assert code == 0 and "finished" in out, err
        with RunStore(data / "runs.sqlite") as store:
            assert store.read_only and store.get_run(1).status == "finished"
    finally:
        (data / "runs.sqlite").chmod(0o644)


def test_a_run_link_that_is_not_a_number_is_refused_on_the_page(tmp_path):
    from dashboard import Explorer
    from engine.train import RunStore

    with RunStore(tmp_path / "runs.sqlite") as store:
        explorer = Explorer(store=store)
        try:
            explorer.open_run_link("1; DROP TABLE runs")
            assert explorer.notice == ("run='1; DROP TABLE runs' refused: a stored run is named by its number (Runs → "
                                       "Stored runs lists them)")
            assert explorer.session.state != "building"  # nothing was opened
        finally:
            explorer.close()


def test_a_subset_beyond_the_data_is_refused_in_its_field():
    from dashboard import Explorer

    explorer = Explorer(store=None)
    try:
        explorer.settings.data.subset = 200
        explorer.controls()
        subset = explorer.data_group.controls["subset"]
        assert not subset.apply(99999999)
        assert explorer.settings.data.subset == 200 and "99999999" not in explorer.to_query()
        assert subset.error.startswith("Subset can't be 99999999: subset=99999999 but 'digits' has only ")
        assert subset.error.endswith("(0 keeps all). Kept 200.")
    finally:
        explorer.close()


def test_a_garbage_checkpoint_is_unreadable_without_torchs_advice(tmp_path):
    from engine.train.checkpoint import CheckpointError, load_checkpoint

    path = tmp_path / "garbage.pt"
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="cannot be read") as info:
        load_checkpoint(path)
    assert "weights_only" not in str(info.value) and "\n" not in str(info.value)


def test_a_plain_pickle_checkpoint_is_refused_without_a_torch_warning(world, capsys):
    """torch warns about the pickle protocol of a file it did not write; the refusal is the only thing said."""
    import warnings

    setup_checkpoint_plain_pickle(world)
    capsys.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, _, err = run_cli(["train", "--resume", "1", "--steps", "3", "--quiet"], capsys)
    assert code == 1 and "pickle" in err and "Traceback" not in err
    assert not [w for w in caught if "pickle" in str(w.message)], [str(w.message) for w in caught]


def test_a_link_to_a_sweep_id_beyond_sqlite_is_refused_in_words(tmp_path):
    """`?page=compare&sweep=99999999999999999999999` (Panel parses it to an int) is refused like any bad id."""
    from dashboard.compare import ComparePage
    from engine.train import RunStore

    with RunStore(tmp_path / "runs.sqlite") as store:
        page = ComparePage(store=store)
        for raw in (99999999999999999999999, "99999999999999999999999", 0, -4):
            refused = page.read_query({"page": "compare", "sweep": raw})
            assert len(refused) == 1 and refused[0].startswith(f"sweep={str(raw)!r} refused"), refused
            assert "1 to 9223372036854775807" in refused[0] and "Overflow" not in refused[0]
        long = "7" * 400
        refused = page.read_query({"sweep": long})
        assert len(refused[0]) < 300 and "…" in refused[0]


def test_a_discover_study_that_cannot_start_says_why_beside_its_form(tmp_path):
    """The Compare page's Discover study: nothing ticked, data that cannot be read, a scheduler nobody answers at; each
    is said under its form, nothing is stored, and ticking again on readable data lists the candidates."""
    from dashboard.compare import ComparePage
    from engine.train import RunStore

    with RunStore(tmp_path / "runs.sqlite") as store:
        page = ComparePage(store=store, data_choices=lambda: ["digits"])
        study = page.discover
        study.refresh()
        assert "rotation" in study.candidates.options and not study.error.visible
        study.candidates.value = []
        study.start()
        assert study.error.visible and "tick at least one candidate" in study.error_text
        missing = tmp_path / "absent.csv"
        study.data_box.options = ["digits", f"csv:{missing}"]
        study.data_box.value = f"csv:{missing}"
        assert study.error.visible and "absent.csv" in study.error_text and not study.candidates.options
        study.start()
        assert study.error.visible and not study.running()
        study.data_box.value = "digits"  # readable again: the candidates are listed, ticked
        assert not study.error.visible and study.candidates.value == list(study.candidates.options)
        page.scheduler = "tcp://127.0.0.1:9"
        study.start()
        assert "no Dask scheduler answered at tcp://127.0.0.1:9" in study.error_text and not study.running()
        assert store.list_sweeps() == []  # nothing stored by any of them


def test_a_link_to_a_discover_study_that_is_not_one_is_refused_in_words(tmp_path):
    """`?page=compare&discover=abc`, an id nothing has, and a sweep that is not a Discover study."""
    from dashboard.compare import ComparePage
    from engine.sweeps import SweepSpec
    from engine.train import RunConfig, RunStore

    with RunStore(tmp_path / "runs.sqlite") as store:
        page = ComparePage(store=store)
        assert page.read_query({"discover": "abc"})[0].startswith("discover='abc' refused")
        assert "no sweep with id 9999" in page.read_query({"discover": "9999"})[0]
        spec = SweepSpec(name="steps", base=RunConfig(), vary={"train.steps": [1, 2]}, seeds=[0])
        sweep_id = store.create_sweep(spec.name, spec.to_json(), 2)
        refused = page.read_query({"discover": str(sweep_id)})
        assert refused and f"sweep {sweep_id} (steps) is not a discover run" in refused[0], refused
        assert page.discover.sweep_id is None and "discover" not in page.query()


def test_a_huge_number_in_a_link_is_refused_as_written():
    """`?train.steps=1e308` is refused naming the value as the link gave it, never as a 309-digit integer."""
    from panel.util import parse_query

    from dashboard.settings import RunSettings

    settings = RunSettings()
    problems = settings.apply_query(parse_query("?train.steps=1e308&train.log_every=" + "9" * 400))
    assert len(problems) == 2, problems
    steps, subset = sorted(problems, key=lambda p: not p.startswith("train.steps"))
    assert steps.startswith("train.steps=1e+308 refused") and "000000000" not in steps, steps
    assert subset.startswith("train.log_every=999") and "…" in subset and len(subset) < 300, subset
    assert settings.train.steps == RunSettings().train.steps  # left as it was


def test_bad_prior_values_in_a_link_are_refused_as_written():
    """`?prior.delta=abc`, `prior.num_layers=99`, an unknown `prior.<name>` and markup are refused one by one, the
    good values kept; nothing is drawn from the refused ones."""
    from panel.util import parse_query

    from dashboard.prior import apply_prior_query
    from engine.models.dkp import PriorExplorer

    explorer = PriorExplorer()
    query = parse_query("?prior.delta=abc&prior.num_layers=99&prior.alpha=2&prior.%3Cb%3Ex=1&prior.seed=" + "9" * 400)
    problems = apply_prior_query(explorer, {k.partition(".")[2]: v for k, v in query.items()})
    assert len(problems) == 4, problems
    text = " | ".join(problems)
    assert "prior.delta='abc' refused" in text and "prior.num_layers=99 refused" in text, text
    assert "'prior.<b>x': not a prior setting" in text and all(len(p) < 300 for p in problems), text
    assert explorer.delta == PriorExplorer().delta and explorer.num_layers == 2 and explorer.alpha == 2.0


def _bad_plugin(tmp_path, source):
    """`invlab plugins` as a real process with a plugin package `broken-plugin` (module `broken`) installed into a
    temporary folder on PYTHONPATH."""
    from tests.helpers.plugins import env_with, install, invlab, package

    site = install(package(tmp_path / "src", "broken-plugin", "broken", source), tmp_path / "site")
    out = invlab("plugins", env=env_with(site, INVLAB_DATA=str(tmp_path / "data")))
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert any(line.split()[:2] == ["kernel", "rbf"] for line in out.stdout.splitlines())  # the rest still works
    warnings = [line for line in out.stderr.splitlines() if line.startswith("invlab: warning: plugin 'broken'")]
    assert len(warnings) == 1, out.stderr
    return warnings[0], out.stdout


def test_a_plugin_that_raises_on_import_is_named_and_skipped(tmp_path):
    line, listing = _bad_plugin(tmp_path, "raise RuntimeError('the lab is not ready for me')\n")
    assert ("plugin 'broken' (module broken, package broken-plugin) failed to load and was skipped: RuntimeError: "
            "the lab is not ready for me; fix or uninstall broken-plugin") in line
    assert "plugin broken: module broken from package broken-plugin, skipped: RuntimeError" in listing


def test_a_plugin_that_clashes_with_a_built_in_is_named_and_skipped(tmp_path):
    source = ("import engine.kernels\nfrom engine.kernels import Stationary\n\n\n@engine.kernels.register('rbf')\n"
              "class MyRBF(Stationary):\n    pass\n")
    line, listing = _bad_plugin(tmp_path, source)
    assert ("kernel name 'rbf' is taken by the built-in kernel engine.kernels.stationary.RBF; register broken.MyRBF "
            "under another name") in line
    rbf = next(row for row in listing.splitlines() if row.split()[:2] == ["kernel", "rbf"])
    assert "built-in" in rbf and "engine.kernels.stationary.RBF" in rbf  # the built-in is left as it was


def test_watch_log_non_finite_or_non_scalar_is_a_gap_with_one_warning(tmp_path):
    from engine.train import RunStore, WatchWarning, watch

    with pytest.warns(WatchWarning) as caught, watch(name="gaps", data_dir=tmp_path) as run:
        for step in range(1, 5):
            run.log(step, loss=float("nan") if step % 2 else 1.0 / step, grad=torch.ones(3), note="text")
        run.log(5, loss=torch.tensor(float("inf")))
    said = sorted(str(w.message) for w in caught)
    assert len(said) == 3, said  # one per name, however often it happens
    assert "grad at step 1 is a tensor of shape (3,), not a single number; it is recorded as a gap" in said[0]
    assert "loss at step 1 is nan, not a finite number; it is recorded as a gap" in said[1]
    assert "note at step 1 is a str, not a single number" in said[2]
    with RunStore(tmp_path / "runs.sqlite") as store:
        record, stored = store.get_run(run.run_id), store.metrics(run.run_id)
    assert record.status == "finished" and record.step == 5  # the loop went on
    assert stored["loss"] == ([1, 2, 3, 4, 5], [None, 0.5, None, 0.25, None])
    assert stored["grad"] == ([1, 2, 3, 4], [None] * 4)


def test_watch_a_run_another_process_writes_is_refused(tmp_path):
    import subprocess
    import textwrap

    from engine.train import RunStore, RunStoreError, watch

    loop = textwrap.dedent(f"""
        import sys
        from engine.train import watch
        with watch(name="shared", data_dir={str(tmp_path)!r}) as run:
            run.log(1, loss=1.0)
            print(run.run_id, flush=True)
            sys.stdin.readline()
    """)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1]))
    other = subprocess.Popen([sys.executable, "-c", loop], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env=env)
    try:
        run_id = int(other.stdout.readline())
        with pytest.raises(RunStoreError) as info:
            watch(name="shared", data_dir=tmp_path)
        assert str(info.value).startswith(f"run {run_id} ('shared') is being written by another process "
                                          f"(pid {other.pid} on ")
        assert "a run has one writer" in str(info.value)
        with RunStore(tmp_path / "runs.sqlite") as store:  # nor can a trainer or the page take it over
            with pytest.raises(RunStoreError, match=f"pid {other.pid}"):
                store.claim_run(run_id)
    finally:
        other.communicate("\n", timeout=60)
    assert other.returncode == 0
    with RunStore(tmp_path / "runs.sqlite") as store:
        assert [(r.name, r.status) for r in store.list_runs()] == [("shared", "finished")]
    with watch(name="shared", data_dir=tmp_path) as again:  # once it has finished, the name can be watched again
        again.log(1, loss=0.5)
    assert again.run_id != run_id


def hide_module(monkeypatch, *names):
    """Make `importlib.util.find_spec` report modules `names` as not installed."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None if name in names else real(name, *args))


def test_sweep_without_dask(world, capsys, monkeypatch):
    hide_module(monkeypatch, "dask", "distributed")
    code, _, err = run_cli(["sweep", "--study", "rotation-choice", "--quick", "--quiet"], capsys)
    assert code == 2 and "invlab sweep: sweeps run on Dask distributed" in err and "Traceback" not in err
    assert "pip install 'invariance-lab[sweeps]'" in err
    assert run_cli(["sweeps", "--json"], capsys)[1] == ""  # nothing stored


DISCOVER_SMALL = ["discover", "--dataset", "symmetric-2d", "--source-option", "num_train=30", "--seeds", "1",
                  "--steps", "20", "--num-inducing", "5", "--serial", "--quiet", "--json"]


@pytest.fixture
def exploding_orbit():
    """A registered vector orbit that diverges at its first step, for the time of one test."""
    from tests.helpers.orbits import exploding_orbit as registered

    with registered() as name:
        yield name


def test_discover_diverging_candidate(world, capsys, exploding_orbit):
    code, out, err = run_cli([*DISCOVER_SMALL, "--orbit", "exploding", "--orbit", "permutations"], capsys)
    assert code == 1 and "Traceback" not in err + out
    report = json.loads(out.strip().splitlines()[-1])
    rows = {r["candidate"]: r for r in report["ranking"]}
    assert rows["exploding"]["elbo_mean"] is None and "non-finite loss" in rows["exploding"]["failed"][0]
    assert rows["none"]["seeds"] == rows["permutations"]["seeds"] == 1  # the others went on
    assert report["ranking"][-1]["candidate"] == "exploding" and "exploding failed" in report["verdict"]
    assert any(note.startswith("exploding failed (seed 0: step 1 produced a non-finite loss") for note in
               report["notes"])


def test_discover_interrupted(world, capsys, monkeypatch):
    import engine.sweeps.task as task

    real, calls = task.train_run, []

    def ctrl_c_on_the_third(*args, **kwargs):
        calls.append(args[1])
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(task, "train_run", ctrl_c_on_the_third)
    code, out, err = run_cli([*DISCOVER_SMALL, "--seeds", "2", "--report", str(world / "r.html")], capsys)
    assert code == 130 and "Traceback" not in err + out
    assert "interrupted: the finished candidates are kept; the report is partial" in err
    report = json.loads(out.strip().splitlines()[-1])
    assert report["partial"] and report["status"] == "interrupted" and report["runs_stored"] == 2
    assert "partial: 2/6 runs stored" in out
    assert "Partial report: 2 of 6 runs stored" in (world / "r.html").read_text()
    code, out, _ = run_cli(["sweeps", "--json"], capsys)
    assert '"status": "interrupted"' in out


def test_lab_without_jupyterlab(world, capsys, monkeypatch):
    hide_module(monkeypatch, "jupyterlab")
    code, _, err = run_cli(["lab", str(world / "nb")], capsys)
    assert code == 2 and "invlab lab: JupyterLab is not installed" in err
    assert "pip install 'invariance-lab[lab]'" in err and not (world / "nb").exists()


def test_a_stored_view_that_is_not_an_engine_view_is_skipped_and_never_run(tmp_path):
    import json
    import zlib

    import numpy as np

    from engine import diagnostics as dg
    from engine.train import RunConfig, RunStore

    with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = store.create_run(RunConfig().to_json(), "svgp", "digits")
        store.save_views(run_id, 1, {"spectrum": dg.Spectrum(values=np.ones(3))})
        store.flush()
    db = sqlite3.connect(tmp_path / "runs.sqlite")
    with db:
        for name, payload in (("evil", {"type": "os.system", "fields": {"command": "touch pwned"}}),
                              ("broken", {"type": "Spectrum", "fields": {"values": {"array": {"dtype": "|O",
                                                                                            "shape": [1],
                                                                                            "data": ""}}}})):
            db.execute("INSERT INTO views (run_id, name, step, kind, payload, updated) VALUES (?, ?, 1, ?, ?, 0)",
                       (run_id, name, payload["type"], zlib.compress(json.dumps(payload).encode())))
    db.close()
    with RunStore(tmp_path / "runs.sqlite") as store:
        stored = store.views(run_id)
    assert list(stored.views) == ["spectrum"]
    assert sorted(name for name, _ in stored.skipped) == ["broken", "evil"]
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("bad", [np.array(["a", "b"]), np.array([object()])])
def test_a_view_holding_what_is_not_numbers_is_not_stored_with_a_warning(tmp_path, bad):
    from engine import diagnostics as dg
    from engine.train import RunConfig, RunStore

    with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = store.create_run(RunConfig().to_json(), "svgp", "digits")
        with pytest.warns(UserWarning, match="odd.*cannot be stored"):
            store.save_views(run_id, 1, {"odd": dg.Spectrum(values=bad), "fine": dg.Spectrum(values=np.ones(2))})
            store.flush()
        assert list(store.views(run_id).views) == ["fine"]


def test_a_theme_change_link_whose_page_has_gone_says_so():
    from dashboard.theme_switch import GONE, page_for

    class Fresh:
        notice = ""

    page = page_for("no-such-token", None, Fresh)
    assert isinstance(page, Fresh) and page.notice == GONE
    assert page_for("", None, Fresh).notice == ""  # no token: an ordinary new page, nothing to explain


def test_a_link_with_an_unknown_theme_says_so():
    """`?theme=purple` opened the default theme without a word; the notice now names it and the themes there are."""
    from panel.io.location import Location

    from dashboard import Explorer

    explorer = Explorer(store=False)
    try:
        explorer.read_location(Location(search="?theme=purple&train.learning_rate=0.02"))
        assert "theme: 'purple' is not one of default, dark" in explorer.notice
        assert explorer.train.learning_rate == 0.02  # the rest of the link still applies
        explorer.notice = ""
        explorer.read_location(Location(search="?theme=dark"))
        assert explorer.notice == ""
    finally:
        explorer.close()


def test_the_published_table_lists_every_case():
    """docs/bad_inputs.md is this file as a table: each test id above appears there, and each row here."""
    text = (Path(__file__).parents[1] / "docs" / "bad_inputs.md").read_text()
    ids = [line.id for line in LINES] + list(API) + list(PREDICT)
    missing = [i for i in ids if f"`{i}`" not in text]
    assert not missing, f"add these cases to docs/bad_inputs.md: {missing}"
    import re

    listed = set(re.findall(r"^\| `([a-z0-9_-]+)` \|", text, flags=re.M))
    tests_here = {name[len("test_"):] for name in globals() if name.startswith("test_")}
    unknown = sorted(listed - set(ids) - tests_here)
    assert not unknown, f"rows without a test: {unknown}"
