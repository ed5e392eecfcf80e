"""A plugin's data sets and readers are reached by the names it registered them under, by every route: `invlab
--dataset`, `invlab.data.load(name)` and a page link's `data.dataset` (headless, through the page's `RunSettings` and
its data loading). A name no route could reach — `two_moons`, which the lab reads as the built-in `two-moons`, and the
one-letter reader prefix `c`, which reads as a Windows drive (`C:\\data`) — is refused at registration with a
sentence naming the plugin, and the plugin's other parts stay registered."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers.plugins import env_with, install, invlab, package

# a plugin with a data set and a reader the lab can reach, and one of each it cannot
NAMES_PLUGIN = '''
import numpy as np

from invlab.data import RawData, register_dataset
from invlab.data.raw import Source, register_reader


def _line(options, seed, test_fraction):
    x = np.linspace(0.0, 1.0, 40)[:, None]
    return RawData(x, 2.0 * x[:, 0] + 1.0)


register_dataset("my-line", "y = 2x + 1 on [0, 1]", "tabular", "regression")(_line)
register_dataset("two_moons", "not the built-in two moons", "tabular", "regression")(_line)


def _reader(prefix):
    def source(path):
        return Source(f"{prefix}:{path}", f"a line read from {path}", "tabular", "regression", _line)

    return source


register_reader("line", "a line file")(_reader("line"))
register_reader("c", "a C file")(_reader("c"))
'''

# every route in one process (one start instead of one a route): `invlab train --dataset NAME` through the CLI's
# own entry, Python's `load`, and the page's settings from a link, then its data loading
ROUTES = '''
import contextlib, io, json, sys
from invlab.cli import main
from invlab.plugins import failure_lines, load_plugins
from invlab.data import list_datasets, load
from invlab.dashboard.state import RunSettings

load_plugins()
out = {"listed": list_datasets(), "notes": failure_lines(), "cli": {}, "python": {}, "page": {}}
for name in sys.argv[1:]:
    printed, warned = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(warned):
        status = main(["train", "--model", "svgp", "--dataset", name, "--num-inducing", "5", "--steps", "2",
                       "--eval-every", "0", "--quiet"])
    out["cli"][name] = [status, (printed.getvalue().strip().splitlines() or [""])[-1], warned.getvalue()]
    try:
        data = load(name)
        out["python"][name] = [data.name, data.task]
    except Exception as err:
        out["python"][name] = ["error", str(err)]
    settings = RunSettings()
    problems = settings.apply_query({"model": "svgp", "data.dataset": name})
    if problems:
        out["page"][name] = ["refused", problems]
    else:
        data = settings.data.load()
        out["page"][name] = [data.name, data.task]
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("names-plugin")
    site = install(package(root / "src", "names-plugin", "names_plugin", NAMES_PLUGIN), root / "site")
    return env_with(site, INVLAB_DATA=str(root / "data"))


def test_invlab_plugins_lists_the_names_it_registered_and_names_the_refused_ones(env):
    listing = invlab("plugins", env=env)
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()
    data_sets = [line.split()[2] for line in lines if line.startswith("data set ")]
    readers = [line.split()[1] for line in lines if line.startswith("reader ")]
    assert "my-line" in data_sets and "two_moons" not in data_sets, listing.stdout
    assert "line" in readers and "c" not in readers, listing.stdout
    warnings = [line for line in listing.stderr.splitlines() if line.startswith("invlab: warning: plugin")]
    assert any("'names_plugin'" in w and "'two_moons'" in w and "'two-moons'" in w for w in warnings), warnings
    assert any("'names_plugin'" in w and "reader 'c'" in w and "Windows drive" in w for w in warnings), warnings
    assert all("its other parts are registered" in w for w in warnings), warnings
    assert "plugin names_plugin: module names_plugin from package names-plugin, loaded" in listing.stdout


def test_the_cli_python_and_the_page_reach_each_name_the_registry_accepted(env):
    names = ["my-line", "line:/anywhere/points.txt", "two_moons", "two-moons"]
    out = subprocess.run([sys.executable, "-c", ROUTES, *names], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert "my-line" in seen["listed"] and "two_moons" not in seen["listed"]
    for run, name in enumerate(names, 1):
        status, last, warned = seen["cli"][name]
        assert status == 0 and "Traceback" not in warned, (name, warned)
        shown = "two-moons" if name == "two_moons" else name
        assert last.startswith(f"run {run} | svgp on {shown} | step 2"), (name, last)
    for route in ("python", "page"):
        assert seen[route]["my-line"] == ["my-line", "regression"], seen[route]
        assert seen[route]["line:/anywhere/points.txt"] == ["line:/anywhere/points.txt", "regression"], seen[route]
        # '_' and '-' are one name to the lab: both spellings are the built-in, as the refusal says
        assert seen[route]["two_moons"] == seen[route]["two-moons"] == ["two-moons", "classification"], seen[route]
    assert len(seen["notes"]) == 2 and all("names-plugin" in note for note in seen["notes"]), seen["notes"]


def test_your_own_code_registering_an_unreachable_name_is_told_at_once():
    import numpy as np

    from invlab.data import RawData, register_dataset
    from invlab.data.raw import DATASETS, READER_REGISTRY, register_reader
    from invlab.errors import ConfigError
    from invlab.registry import snapshot

    def make(options, seed, test_fraction):
        return RawData(np.zeros((4, 1)), np.zeros(4))

    saved = snapshot()
    try:
        with pytest.raises(ConfigError, match=r"data set name 'two_moons' cannot be reached: the lab reads it as the "
                                              r"built-in data set 'two-moons'.*register it under another name"):
            register_dataset("two_moons", "mine", "tabular", "regression")(make)
        register_dataset("my_set", "mine", "tabular", "regression")(make)
        with pytest.raises(ConfigError, match="reads it as the data set 'my_set'"):
            register_dataset("my-set", "mine again", "tabular", "regression")(make)
        with pytest.raises(ConfigError, match=r"reader name 'c' cannot be reached: .*Windows drive \('C:\\data'\)"):
            register_reader("c", "a C file")(make)
        assert "two_moons" not in DATASETS.parts and "my-set" not in DATASETS.parts and "c" not in READER_REGISTRY.parts
    finally:
        saved.restore()
