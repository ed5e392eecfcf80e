"""Everything the lab knows about a data set or a reader lives in its registry entry: a reader's file extensions
(which bare paths and listed files it reads), whether and how a data set is fetched (`invlab fetch`), and its size
(what a served page's limits estimate). A plugin declares these when it registers, and no other file is edited."""
from __future__ import annotations

import io
from contextlib import redirect_stdout

import numpy as np
import pytest

from invlab.data import DataConfig, RawData, fetch, load, loadable, register_dataset, register_reader
from invlab.data.raw import Source, with_notes
from invlab.data.sources import looks_like_path, spec_of
from invlab.errors import DataError
from invlab.registry import snapshot


@pytest.fixture
def rolled_back():
    """Whatever a test registers is gone after it."""
    saved = snapshot()
    yield
    saved.restore()


def _read_lines(path, options, notes):
    """A 'lines' file: one 'x y' pair per line."""
    table = np.loadtxt(path)
    return RawData(table[:, :1], table[:, 1], kind="tabular", task="regression")


def _lines_reader(path):
    return Source(path, f"the lines file {path}", "tabular", "auto", with_notes(lambda o, n: _read_lines(path, o, n)))


def test_a_plugin_reader_reads_bare_paths_with_the_extensions_its_entry_declares(tmp_path, rolled_back):
    path = tmp_path / "mine.xyl"
    np.savetxt(path, np.column_stack([np.arange(40.0), 2 * np.arange(40.0)]))
    register_reader("xyl", "a file of 'x y' lines", extensions=(".xyl",))(_lines_reader)
    assert looks_like_path("mine.xyl") and spec_of(str(path)) == f"xyl:{path}"
    assert DataConfig(dataset=str(path)).dataset == str(path)  # the page's and --data's check accepts it
    data = load(str(path), seed=1)
    assert data.num_train + data.num_test == 40 and data.task == "regression"
    assert f"xyl:{path.resolve()}" in loadable(tmp_path)  # and the page's list of the user's files shows it


def test_an_extension_no_reader_declares_is_still_refused(tmp_path):
    with pytest.raises(DataError, match="does not say what it holds"):
        spec_of(str(tmp_path / "mine.xyl"))


def test_a_fetchable_data_set_is_fetched_through_its_entry_and_listed_by_invlab_fetch(tmp_path, rolled_back):
    from invlab.cli.fetch import cmd_fetch

    calls = []

    def fetch_remote(data_dir=None, progress=True, force=False):
        calls.append((data_dir, force))
        return tmp_path / "remote.npz"

    register_dataset("my-remote", "a set fetched once", "tabular", "regression", fetch=fetch_remote)(
        lambda options, seed, test_fraction: RawData(np.zeros((10, 1)), np.zeros(10)))
    assert fetch("my-remote", tmp_path) == tmp_path / "remote.npz" and calls == [(tmp_path, False)]
    help_text = io.StringIO()
    with redirect_stdout(help_text), pytest.raises(SystemExit):
        cmd_fetch(["--help"])
    assert "my-remote" in help_text.getvalue() and "mnist" in help_text.getvalue()
    with redirect_stdout(io.StringIO()):
        assert cmd_fetch(["my-remote"]) == 0
    with pytest.raises(DataError, match="'digits' needs no fetch.*'mnist', 'my-remote'"):
        fetch("digits")


def test_a_data_set_declares_its_size_and_a_served_page_estimates_from_it(rolled_back):
    from invlab.dashboard.serving.limits import estimate
    from invlab.data.raw import DataSize
    from invlab.train import RunConfig

    register_dataset("my-big", "big rows", "tabular", "classification",
                     size=lambda own, test_fraction: DataSize(points=500_000, train=400_000, dims=20, classes=3))(
        lambda options, seed, test_fraction: RawData(np.zeros((10, 1)), np.zeros(10, int)))
    size = estimate(RunConfig(model="svgp", data={"dataset": "my-big"}))
    assert (size.points, size.train_points, size.dims, size.classes) == (500_000, 400_000, 20, 3)


def test_a_data_set_with_its_own_options_and_no_size_is_estimated_without_failing(rolled_back):
    import param

    from invlab.dashboard.serving.limits import estimate
    from invlab.train import RunConfig

    class Options(param.Parameterized):
        scale = param.Number(1.0, doc="How far the points spread.")

    register_dataset("my-spread", "points spread", "points", "regression", options=Options)(
        lambda options, seed, test_fraction: RawData(np.zeros((10, 2)), np.zeros(10)))
    size = estimate(RunConfig(model="svgp", data={"dataset": "my-spread"}))  # before: KeyError 'num_train'
    assert size.points > 0 and size.memory_mb > 0


@pytest.mark.parametrize("dataset, options, expected", [
    ("digits", {}, (1797, 1348, 64, 10)),
    ("mnist", {}, (70_000, 70_000, 784, 10)),
    ("wine", {}, (178, 134, 13, 3)),
    ("rectangles", {"num_train": 100, "num_test": 50, "image_size": 20}, (150, 100, 400, 2)),
    ("photo-patches", {"patch_size": 6}, None),
    ("two-moons", {}, None),
    ("symmetric-2d", {}, None),
])
def test_the_built_in_sizes_come_from_their_entries(dataset, options, expected):
    from invlab.dashboard.serving.limits import estimate
    from invlab.data.raw import SOURCES
    from invlab.train import RunConfig

    assert SOURCES[dataset].size is not None
    size = estimate(RunConfig(model="svgp", data={"dataset": dataset, "source_options": options}))
    if expected is not None:
        assert (size.points, size.train_points, size.dims, size.classes) == expected
    if dataset == "photo-patches":
        assert size.dims == 3 * 36 and size.classes == 2
    if dataset in ("two-moons", "symmetric-2d"):
        assert size.dims == 2 and size.classes == (2 if dataset == "two-moons" else 1)
