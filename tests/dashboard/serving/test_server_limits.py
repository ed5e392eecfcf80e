"""A served page's limits: sizes estimated before anything is built, refused with a message on the page; IDX folders
read only inside the allowed directories, with a refusal that does not tell whether a path exists; the server's flags
set the limits; a notebook's Explorer and the CLI have none."""
import json
from urllib.parse import quote

import numpy as np
import pytest
from panel.io.location import Location

from invlab.cli import serve_command
from invlab.dashboard import Explorer
from invlab.dashboard.serving.limits import LimitError, ServerLimits, estimate
from invlab.data import DataConfig
from invlab.data.idx import write_idx
from invlab.train import RunConfig

SMALL = {"data.subset": "200", "data.test_subset": "100", "model.num_inducing": "10"}


def link(**values) -> str:
    return "?" + "&".join(f"{k}={quote(str(v))}" for k, v in values.items())


def opened(limits, query: str) -> Explorer:
    explorer = Explorer(store=False, limits=limits)
    explorer.read_location(Location(search=query))
    return explorer


@pytest.mark.parametrize("data", [
    {"dataset": "digits"},
    {"dataset": "rectangles", "source_options": {"num_train": 50, "num_test": 30, "image_size": 16}},
    {"dataset": "two-moons"},
    {"dataset": "digits", "classes": [3, 8], "subset": 100},
    {"dataset": "photo-patches", "source_options": {"num_train": 20, "num_test": 10, "patch_size": 8}},
    {"dataset": "wine", "subset": 40},
    {"dataset": "symmetric-2d"},
])
def test_the_estimate_has_the_sizes_loading_gives(data):
    size = estimate(RunConfig(data=data))
    ds = DataConfig(**data).load()
    whole = DataConfig(**{**data, "subset": 0, "classes": []}).load()  # what the source makes, before selection
    assert size.points == len(whole.X_train) + len(whole.X_test)
    assert size.train_points == len(ds.X_train)
    assert size.dims == int(np.prod(ds.X_train.shape[1:]))
    assert size.classes == (ds.num_classes or 1)


def test_the_issues_oversize_links_are_refused_on_the_page():
    limits = ServerLimits(data_dirs=())
    huge = opened(limits, link(**{"data.dataset": "rectangles",
                                  "data.source_options": json.dumps({"num_train": 2_000_000})}))
    assert "2,002,000 points" in huge.notice and "--max-points" in huge.notice
    assert huge.data.source_options == {}  # the default again: Start builds a run this server allows
    limits.check(huge.run_config())

    many = opened(limits, link(**{"model.num_inducing": 5000}))
    assert "inducing points" in many.notice and "--max-inducing" in many.notice
    assert many.model_config.num_inducing != 5000

    roomy = ServerLimits(max_inducing=5000, data_dirs=())  # M within its limit, but 10 classes need ~10 GB
    with pytest.raises(LimitError, match="MB"):
        roomy.check(RunConfig(data={"dataset": "mnist"}, model_config={"num_inducing": 5000}))
    for e in (huge, many):
        e.close()


def test_a_run_made_too_large_on_the_page_is_refused_when_started(wait_until):
    explorer = Explorer(store=False, limits=ServerLimits(max_points=1000, data_dirs=()))
    explorer.__panel__()
    explorer.start()  # the digits: 1,797 points
    assert explorer.status.state == "failed" and "1,797 points" in explorer.status.message
    assert explorer.session.trainer is None and not explorer.session._thread  # nothing was built or started
    explorer.close()


def test_idx_folders_outside_the_allowed_ones_are_refused_alike(tmp_path):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    limits = ServerLimits(data_dirs=(str(allowed),))
    existing, missing = tmp_path / "elsewhere", tmp_path / "nowhere"
    existing.mkdir()
    notices = []
    for path in (existing, missing, allowed / ".." / "elsewhere"):
        e = opened(limits, link(**{"data.dataset": f"idx:{path}"}))
        notices.append(e.notice.replace(str(path), "PATH"))
        assert e.data.dataset == "digits" and "--allow-data-dir" in e.notice
        e.close()
    assert notices[0] == notices[1] == notices[2]  # the page cannot tell an existing folder from a missing one


def test_an_idx_folder_inside_the_data_directory_trains(tmp_path, wait_until):
    folder = tmp_path / "data" / "mine"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    write_idx(folder / "train-images-idx3-ubyte", rng.integers(0, 255, (60, 8, 8), dtype=np.uint8))
    write_idx(folder / "train-labels-idx1-ubyte", np.arange(60, dtype=np.uint8) % 2)
    write_idx(folder / "t10k-images-idx3-ubyte", rng.integers(0, 255, (20, 8, 8), dtype=np.uint8))
    write_idx(folder / "t10k-labels-idx1-ubyte", np.arange(20, dtype=np.uint8) % 2)
    e = opened(ServerLimits(data_dirs=(str(tmp_path / "data"),)),
               link(**{"data.dataset": f"idx:{folder}", "model.num_inducing": 10, "train.steps": 3}))
    assert e.notice == "" and e.data.dataset == f"idx:{folder}"
    e.step()
    wait_until(lambda: e.session.step == 1, e, timeout=120)
    e.close()


def test_the_servers_flags_set_the_limits(tmp_path, monkeypatch):
    monkeypatch.setenv("INVLAB_DATA", str(tmp_path / "data"))
    _, env = serve_command(["--max-points", "1000", "--max-inducing", "20", "--max-memory-mb", "64",
                            "--allow-data-dir", str(tmp_path / "shared")])
    limits = ServerLimits.from_env(env)
    assert (limits.max_points, limits.max_inducing, limits.max_memory_mb) == (1000, 20, 64)
    assert str(tmp_path / "shared") in limits.data_dirs and str(tmp_path / "data") in limits.data_dirs
    assert ServerLimits.from_env({}).max_points > 1797  # by default the digits are allowed ...
    e = opened(limits, link(**SMALL))
    assert "1,797 points" in e.notice  # ... under --max-points 1000 they are not
    e.close()
    with pytest.raises(Exception, match="at least 1"):
        serve_command(["--max-points", "0"])


def test_notebooks_and_the_cli_have_no_limits():
    e = opened(None, link(**{"model.num_inducing": 5000}))
    assert e.notice == "" and e.model_config.num_inducing == 5000
    e.close()


def test_the_estimate_asks_the_familys_entry_for_its_memory():
    """A family's memory estimate is its registry entry's (`ModelSpec.memory`): a plugin's family that declares 123
    floats is estimated at the data's arrays plus exactly those, whatever its config asks for."""
    from dataclasses import replace

    from invlab.models import register
    from invlab.registry import snapshot
    from tests.models.test_family_entries import WIGGLE

    saved = snapshot()
    register(replace(WIGGLE, memory=lambda model_config, sizes: 10 ** 9 + sizes.inducing))
    try:
        config = RunConfig(model="wiggle-gp", data={"dataset": "two-moons"}, model_config={"num_inducing": 7})
        size = estimate(config)
        data_floats = 3 * size.points * size.dims
        assert size.memory_mb == pytest.approx((data_floats + 10 ** 9 + 7) * 8 / 2 ** 20)
    finally:
        saved.restore()
