"""The published list of bad inputs: every case gets a clear error naming what went wrong, or a documented valid
behaviour, never a traceback and never a silent change. docs/bad_inputs.md is the same list as a table.

Command lines run in-process (`invlab.cli.main(argv)`, the console script's code path) against a private data
directory; each asserts the exit status (2: usage, 1: refused or failed with a message, 0: valid) and that a line
of stderr starting with `invlab` names the setting. API calls assert the engine's own error type and its message.

This module: the command lines."""

from dataclasses import dataclass, field

import pytest

from invlab.cli import main
from tests.bad_inputs.worlds import (
    QUICK,
    run_cli,
    setup_checkpoint_empty,
    setup_checkpoint_plain_pickle,
    setup_checkpoint_with_code,
    setup_checkpoint_without_optimiser,
    setup_corrupt_page,
    setup_corrupt_runs_page,
    setup_corrupt_store,
    setup_csv_changed_after_run,
    setup_csv_empty,
    setup_csv_is_npz,
    setup_csv_missing,
    setup_csv_one_class,
    setup_csv_ragged,
    setup_csv_text,
    setup_data_dir_is_file,
    setup_empty_data_dir,
    setup_fifo,
    setup_idx_bomb,
    setup_idx_empty_dir,
    setup_idx_float32_pixels,
    setup_idx_nan,
    setup_idx_one_class,
    setup_idx_zero_images,
    setup_images_all_corrupt,
    setup_images_corrupt,
    setup_images_empty,
    setup_images_one_class,
    setup_images_sizes,
    setup_npz_is_csv,
    setup_small_csv,
    setup_store_is_dir,
)

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
    Line("sweep-dry-run-resume-unknown", ["sweep", "--dry-run", "--resume", "5"], 1, ("no sweep with id 5",),
         setup_empty_data_dir),
    Line("sweep-dry-run-resume-with-values", ["sweep", "--dry-run", "--resume", "5", "--vary", "data.subset=10"], 2,
         ("--resume ID takes no sweep file",)),
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
    Line("sweep-dry-run-lists-the-plan", ["sweep", "--dry-run", "--vary", "data.subset=10,20"], 0,
         ("2 runs planned",), out=("data.subset=10", "data.subset=20")),
]


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


DRY_RUNS = [line for line in LINES if "--dry-run" in line.argv]


@pytest.mark.parametrize("line", DRY_RUNS, ids=[line.id for line in DRY_RUNS])
def test_a_dry_run_refused_or_not_creates_nothing(line: Line, world, capsys):
    """`invlab sweep --dry-run` only plans: no data directory and no run store are made, whatever it answers."""
    if line.setup is not None:
        line.setup(world)
    before = sorted(world.rglob("*"))
    code, _, err = run_cli([a.format(tmp=world) for a in line.argv], capsys)
    assert code == line.code, err
    assert sorted(world.rglob("*")) == before  # was: data/runs.sqlite (and the data directory) created


def test_serve_never_echoes_a_secret(world, capsys, monkeypatch):
    """`invlab serve` prints the `panel serve` line it starts, with every secret it passes on replaced by ***: the
    cookie secret, OAuth's secret and encryption key, in both `--flag VALUE` and `--flag=VALUE` forms."""
    import os

    started = []

    def execve(path, argv, env):  # the server would take this process's place
        started.append(argv)
        raise SystemExit(0)

    monkeypatch.setattr(os, "execve", execve)
    secrets = {"--cookie-secret": "cookie-S3cret", "--oauth-secret": "oauth-S3cret",
               "--oauth-encryption-key": "key-S3cret"}
    (world / "users.json").write_text('{"bob": "pw"}')
    argv = ["serve", "--basic-auth", str(world / "users.json")]  # a file of users is shown; a password would not be
    for i, (flag, value) in enumerate(secrets.items()):
        argv += [flag, value] if i % 2 else [f"{flag}={value}"]
    code, out, err = run_cli(argv, capsys)
    assert code == 0, err
    assert started and all(v in " ".join(started[0]) for v in secrets.values())  # passed on to the server
    assert "serving the dashboard" in err
    assert not any(v in err + out for v in secrets.values()), err  # was: the whole line, secret included
    assert err.count("***") == len(secrets) and str(world / "users.json") in err
