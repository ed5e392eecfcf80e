"""Sweep definitions: files and flags become the planned runs they describe, and bad ones are refused before anything
runs, with a message naming the parameter and what is allowed."""
import argparse
import itertools
import json

import pytest

from invlab.cli import sweep_spec_from_args
from invlab.errors import ConfigError
from invlab.sweeps import STUDIES, SweepSpec, study
from invlab.train import RunConfig

TOML = """
name = "rotation"
seeds = 2
[base]
model = "invariant"
data = {dataset = "digits", rotate = 90, subset = 50}
model_config = {num_inducing = 5}
train = {steps = 3}
[vary]
"model.init_rotation" = [0, 45, 90]
data.subset = [40, 50]
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_toml_grid_plans_every_combination_times_seeds(tmp_path):
    spec = SweepSpec.from_file(write(tmp_path, "s.toml", TOML))
    runs = spec.runs()
    expected = [(a, n, s) for a, n in itertools.product([0, 45, 90], [40, 50]) for s in (0, 1)]
    got = [(r.config.model_config["init_rotation"], r.config.data["subset"], r.config.train["seed"]) for r in runs]
    assert got == expected
    assert len({r.key for r in runs}) == len(runs) == 12
    # an unquoted dotted key (data.subset) is the same name as a quoted one; the base is kept where not varied
    assert set(spec.vary) == {"model.init_rotation", "data.subset"}
    assert all(r.config.data["rotate"] == 90 and r.config.model == "invariant" for r in runs)
    assert runs[0].point == {"model.init_rotation": 0, "data.subset": 40} and runs[1].seed == 1


def test_list_mode_zips_and_json_round_trips(tmp_path):
    d = {"name": "zip", "mode": "list", "seeds": [3, 7],
         "base": {"model": "svgp", "data": {"dataset": "symmetric-2d"}, "train": {"steps": 2}},
         "vary": {"model": ["svgp", "invariant"], "model.augmentation": [None, "permutations"]}}
    spec = SweepSpec.from_file(write(tmp_path, "s.json", json.dumps(d)))
    runs = spec.runs()
    assert [(r.config.model, r.config.model_config.get("augmentation"), r.seed) for r in runs] == [
        ("svgp", None, 3), ("svgp", None, 7), ("invariant", "permutations", 3), ("invariant", "permutations", 7)]
    again = SweepSpec.from_json(spec.to_json())
    assert [r.key for r in again.runs()] == [r.key for r in runs]
    assert [r.config.to_json() for r in again.runs()] == [r.config.to_json() for r in runs]


@pytest.mark.parametrize("text, suffix, words", [
    ('[vary]\n"model.init_rotaton" = [1, 2]\n[base]\nmodel = "invariant"', "toml",
     ["'model.init_rotaton'", "init_rotation"]),
    ('[vary]\n"train.learning_rate" = [0.1, -1]', "toml", ["train.learning_rate=-1", "[1e-06, 10.0]"]),
    ('[vary]\n"model.kernel" = ["rbf", "cosine"]', "toml", ["model.kernel='cosine'", "one of", "rbf"]),
    ('[vary]\n"data.rotate" = []', "toml", ["'data.rotate'", "no values"]),
    ('[vary]\n"train.seed" = [1, 2]', "toml", ["train.seed", "seeds"]),
    ('[vary]\n"optimizer.lr" = [1, 2]', "toml", ["'optimizer.lr'", "'model.<param>'"]),
    ('mode = "zip"\n[vary]\n"train.steps" = [1, 2]', "toml", ["mode='zip'", "grid, list"]),
    ('mode = "list"\n[vary]\n"train.steps" = [1, 2]\n"train.batch_size" = [1]', "toml", ["equally long"]),
    ('seeds = 0\n[vary]\n"train.steps" = [1]', "toml", ["seeds=0", "at least one seed"]),
    ('[vary]\nmodel = ["svgp", "gpr"]', "toml", ["model='gpr'", "invariant"]),
    ('[base]\nmodel = "conv-weighted"\ndata = {dataset = "diabetes"}\n[vary]\n"train.steps" = [1]', "toml",
     ["needs image data"]),
    ('[base]\nmodel = "invariant"\n[vary]\n"data.rotate" = [0, 45]\n"data.dataset" = ["symmetric-2d"]', "toml",
     ["rotate=45", "images only"]),
    ('[vary\n"train.steps" = [1]', "toml", ["not valid TOML", "line 1"]),
    ('{"vary": {"train.steps": [1, 2]', "json", ["not valid JSON", "line 1"]),
    ('vary = [1]', "toml", ["vary must be a table"]),
    ('colour = "red"', "toml", ["unknown sweep field", "colour"]),
])
def test_bad_sweep_files_are_refused_before_anything_runs_naming_what_is_wrong(tmp_path, text, suffix, words):
    path = write(tmp_path, f"bad.{suffix}", text)
    with pytest.raises(ConfigError) as err:
        SweepSpec.from_file(path).runs()
    message = str(err.value)
    for word in words:
        assert word in message, message


def test_a_file_of_another_kind_or_missing_is_named(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        SweepSpec.from_file(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match=r"\.toml or \.json"):
        SweepSpec.from_file(write(tmp_path, "s.yaml", "a: 1"))


def test_every_planned_run_is_a_valid_run_config():
    # a value the swept parameter accepts but the combination refuses (rotate on vectors) is caught per run
    spec = SweepSpec(base=RunConfig("svgp", {"dataset": "symmetric-2d"}), vary={"data.rotate": [0, 10]})
    with pytest.raises(ConfigError, match=r"run data.rotate=10: .*applies to images only"):
        spec.validate()


def args(**kw):
    defaults = dict(file=None, study=None, quick=False, name=None, base_model=None, set=[], vary=[], mode=None,
                    seeds=None)
    return argparse.Namespace(**{**defaults, **kw})


def test_flags_describe_the_same_sweep_as_a_file(tmp_path):
    from_flags = sweep_spec_from_args(args(base_model="invariant", set=["data.rotate=90", "data.subset=50",
                                                                          "model.num_inducing=5", "train.steps=3"],
                                           vary=["model.init_rotation=0,45,90", "data.subset=40,50"], seeds="2",
                                           name="rotation"))
    from_file = SweepSpec.from_file(write(tmp_path, "s.toml", TOML))
    assert [r.config.to_json() for r in from_flags.runs()] == [r.config.to_json() for r in from_file.runs()]
    assert from_flags.seeds == [0, 1]
    assert sweep_spec_from_args(args(vary=["model.learn_ranges=true,false"], base_model="invariant",
                                     seeds="4,9")).seeds == [4, 9]
    with pytest.raises(ConfigError, match="nothing to sweep"):
        sweep_spec_from_args(args())
    with pytest.raises(ConfigError, match="--vary expects NAME=VALUE"):
        sweep_spec_from_args(args(vary=["model.init_rotation"]))


def test_built_in_studies_plan_what_they_promise():
    spec = study("rotation-choice")
    runs = spec.runs()
    fixed = sorted({r.point["model.init_rotation"] for r in runs if not r.point["model.learn_ranges"]})
    assert fixed == [*range(0, 180, 15), 179]  # 0..165 by 15, then 179: the range's limit is 180, open
    assert sum(r.point["model.learn_ranges"] for r in runs) == 3  # one learned-range point, 3 seeds
    assert {r.seed for r in runs} == {0, 1, 2} and len(runs) == 14 * 3
    assert {r.config.data["rotate"] for r in runs} == {90.0}
    swap = study("symmetric-2d-swap").runs()
    assert {(r.config.model, r.config.model_config.get("augmentation")) for r in swap} == {
        ("svgp", None), ("invariant", "permutations")}
    for name in STUDIES:
        assert len(study(name, quick=True).runs()) < len(study(name).runs())
    with pytest.raises(ConfigError, match="rotation-choice"):
        study("nope")


def test_a_sweep_over_a_csv_file_whose_task_is_read_from_the_data_validates(tmp_path):
    path = tmp_path / "table.csv"
    path.write_text("a,b,y\n" + "".join(f"{i},{i % 3},{i * 0.5}\n" for i in range(20)))
    spec = SweepSpec(base=RunConfig("invariant", {"dataset": f"csv:{path}"}, {"num_inducing": 4}, {"steps": 1}),
                     vary={"model.augmentation": ["permutations", "identity"]}, mode="list")
    assert len(spec.runs()) == 2  # the task ('auto' until read) is checked by the trainer, after loading
