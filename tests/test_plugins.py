"""Your own parts everywhere: the README's plugin package (a rational-quadratic kernel `rq` with its own `alpha`,
the orbit `negate` and a Student-t likelihood with its own `dof`), installed with pip into a temporary folder on
PYTHONPATH, trains from `invlab train`, in a two-value sweep on Dask workers, is listed by `invlab plugins`, and
passes the kernel contract (a broken or clashing plugin: tests/bad_inputs/)."""
from __future__ import annotations

import json
import sqlite3

import pytest

from tests.helpers.plugins import env_with, install, invlab, readme_blocks, readme_package


@pytest.fixture(scope="module")
def my_parts(tmp_path_factory):
    """The folder the README's package was installed into."""
    root = tmp_path_factory.mktemp("plugin")
    return install(readme_package(root / "src"), root / "site")


@pytest.fixture
def env(my_parts, tmp_path):
    return env_with(my_parts, INVLAB_DATA=str(tmp_path / "data"))


def stored_configs(env) -> list[dict]:
    with sqlite3.connect(f"{env['INVLAB_DATA']}/runs.sqlite") as db:
        return [json.loads(c) for (c,) in db.execute("SELECT config FROM runs ORDER BY id")]


def test_invlab_plugins_lists_each_part_and_where_it_came_from(env):
    out = invlab("plugins", env=env)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    rq = next(line for line in lines if line.split()[:2] == ["kernel", "rq"])
    assert "plugin my_parts (my-parts)" in rq and "my_parts.RationalQuadratic" in rq and "alpha (--alpha)" in rq
    negate = next(line for line in lines if line.split()[:2] == ["augmentation", "negate"])
    assert "plugin my_parts (my-parts)" in negate
    student = next(line for line in lines if line.split()[:2] == ["likelihood", "student_t"])
    assert "plugin my_parts (my-parts)" in student and "my_parts.StudentT" in student and "dof (--dof)" in student
    assert "built-in" in next(line for line in lines if line.split()[:2] == ["likelihood", "gaussian"])
    rbf = next(line for line in lines if line.split()[:2] == ["kernel", "rbf"])
    assert "built-in" in rbf
    assert "plugin my_parts: module my_parts from package my-parts, loaded" in out.stdout
    assert "warning" not in out.stderr


def test_the_plugins_kernel_and_orbit_are_choices_of_invlab_train(env):
    out = invlab("train", "--model", "invariant", "--help", env=env)
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "rq}" in text.split("--kernel {")[1].split()[0]
    assert "negate" in text.split("--augmentation {")[1].split()[0]
    assert "--alpha ALPHA rq: constructor argument 'alpha'." in text


def test_the_plugins_kernel_and_orbit_train_from_the_command_line(env):
    out = invlab("train", "--model", "invariant", "--dataset", "two-moons", "--kernel", "rq", "--alpha", "2",
                 "--augmentation", "negate", "--num-samples", "2", "--num-inducing", "10", "--steps", "15",
                 "--eval-every", "0", "--quiet", env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1].startswith("run 1 | invariant on two-moons | step 15 | ELBO")
    model = stored_configs(env)[0]["model_config"]
    assert model["kernel"] == "rq" and model["alpha"] == 2.0 and model["augmentation"] == "negate"


def test_the_plugins_likelihood_trains_from_the_command_line(env):
    out = invlab("train", "--model", "svgp", "--dataset", "diabetes", "--likelihood", "student_t", "--dof", "3",
                 "--num-inducing", "10", "--steps", "15", "--eval-every", "0", "--quiet", env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1].startswith("run 1 | svgp on diabetes | step 15 | ELBO")
    model = stored_configs(env)[0]["model_config"]
    assert model["likelihood"] == "student_t" and model["dof"] == 3.0


def test_a_two_value_sweep_over_the_plugins_own_option(env):
    out = invlab("sweep", "--base-model", "svgp", "--set", "data.dataset=two-moons", "--set", "model.kernel=rq",
                 "--set", "model.num_inducing=10", "--set", "train.steps=10", "--vary", "model.alpha=0.5,2",
                 "--seeds", "1", "--workers", "1", "--quiet", env=env, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    configs = stored_configs(env)
    assert sorted(c["model_config"]["alpha"] for c in configs) == [0.5, 2.0]
    assert {c["model_config"]["kernel"] for c in configs} == {"rq"}
    with sqlite3.connect(f"{env['INVLAB_DATA']}/runs.sqlite") as db:
        assert [s for (s,) in db.execute("SELECT status FROM runs")] == ["finished", "finished"]


def test_the_readme_check_snippet_passes_on_rq_in_a_real_process(env):
    import subprocess
    import sys

    snippet = next(block for block in readme_blocks("python") if "check_kernel" in block)
    out = subprocess.run([sys.executable, "-c", snippet + "\nprint('checked', check_kernel('rq', alpha=2.0))"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "checked ('symmetry', 'PSD', 'diagonal', 'shapes', 'dtypes', 'gradients')" in out.stdout


def test_the_readme_watch_snippet_records_a_run_invlab_runs_lists(env):
    import subprocess
    import sys

    snippet = next(block for block in readme_blocks("python") if "watch(" in block)
    out = subprocess.run([sys.executable, "-c", snippet + "\nprint('run', run.run_id, run.status, run.step)"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "run 1 finished 200" in out.stdout
    listed = invlab("runs", env=env)
    assert listed.returncode == 0, listed.stderr
    row = listed.stdout.splitlines()[1].split()
    assert row[1:5] == ["svgp", "digits", "finished", "200"] and row[-1] == "my-adam-loop"
    with sqlite3.connect(f"{env['INVLAB_DATA']}/runs.sqlite") as db:
        names = {name for (name,) in db.execute("SELECT DISTINCT name FROM metrics WHERE run_id = 1")}
    assert {"loss", "elbo"} <= names and any(n.startswith("hyperparameters/") for n in names)


@pytest.mark.parametrize("model, dataset, extra", [("rkhs", "two-moons", ()),
                                                   ("gwi", "diabetes", ("--reference-steps", "5"))])
def test_the_plugins_kernel_trains_in_the_rkhs_and_gwi_families(env, model, dataset, extra):
    out = invlab("train", "--model", model, "--dataset", dataset, "--kernel", "rq", "--alpha", "2", "--subset", "80",
                 "--steps", "3", "--eval-every", "0", "--quiet", *extra, env=env)
    assert out.returncode == 0, out.stderr
    (config,) = stored_configs(env)
    assert config["model_config"]["kernel"] == "rq" and config["model_config"]["alpha"] == 2.0
