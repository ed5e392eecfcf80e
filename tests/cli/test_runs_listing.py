"""`invlab runs` as a user reads it: every registered model's name whole, a discover study's runs named by their
candidate invariance, and `invlab discover`'s data seed spelled `--data-seed` as `invlab train` spells it."""
import json
import os
from pathlib import Path

from invlab import models
from invlab.sweeps.discover import create_sweep, plan_candidates
from invlab.train import RunStore
from tests.helpers.cli import run_main


def _store() -> RunStore:
    return RunStore(Path(os.environ["INVLAB_DATA"]) / "runs.sqlite")


def test_runs_shows_every_registered_model_name_whole(capsys):
    names = models.model_names()
    with _store() as store:
        for name in names:
            store.runs.create("{}", name, "digits")
    code, out, err = run_main(capsys, "runs", "--limit", "0")
    assert code == 0, err
    header, *rows = out.splitlines()
    assert header.split()[:3] == ["id", "model", "dataset"]
    shown = [row.split()[1] for row in rows]
    assert sorted(shown) == sorted(names)  # "conv-weighted-rbf", not "conv-weigh"
    start = header.index("dataset")  # the columns stay aligned: every data set name starts under its title
    assert all(row[start:].startswith("digits") for row in rows), out


def test_runs_names_a_discover_run_by_its_candidate(capsys):
    plan = plan_candidates({"dataset": "symmetric-2d", "source_options": {"num_train": 30}}, seeds=[0, 1], steps=5,
                           orbits=["sign_flips", "permutations:0,1"], combine=False)
    with _store() as store:
        sweep_id = create_sweep(plan, store)
        for run in plan.spec.runs():  # stored as a finished study stores them, without training
            store.sweeps.store_run(sweep_id, run.key, config_json=run.config.to_json(), model=run.config.model,
                                  dataset="symmetric-2d", status="finished", step=5, figures={}, history={},
                                  info={"point": run.point, "seed": run.seed})
        store.runs.create("{}", "svgp", "digits", name="my loop")
    code, out, err = run_main(capsys, "runs")
    assert code == 0, err
    lines = out.splitlines()
    for candidate in ("none", "sign_flips", "permutations:0,1"):
        for seed in (0, 1):
            assert sum(line.endswith(f"discover #{sweep_id}: {candidate}, seed {seed}") for line in lines) == 1, out
    assert lines[1].endswith("my loop")  # a run of no study keeps its own name
    _, out, _ = run_main(capsys, "runs", "--json")
    records = [json.loads(line) for line in out.splitlines()]
    assert records[0]["candidate"] is None and records[0]["sweep_id"] is None
    assert sorted(r["candidate"] for r in records[1:]) == sorted(["none", "sign_flips", "permutations:0,1"] * 2)
    assert {r["sweep_id"] for r in records[1:]} == {sweep_id}


def test_discover_help_names_the_data_seed_as_train_does(capsys):
    code, out, _ = run_main(capsys, "discover", "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "--data-seed SEED" in text  # as in `invlab train --help`
    assert "--seed SEED The same as --data-seed" in text  # the older spelling, still taken


def test_discover_data_seed_and_its_older_spelling_set_the_data_seed(capsys):
    common = ["discover", "--dataset", "symmetric-2d", "--source-option", "num_train=30", "--seeds", "1", "--steps",
              "3", "--num-inducing", "4", "--orbit", "sign_flips", "--no-combine", "--serial", "--quiet"]
    assert run_main(capsys, *common, "--data-seed", "7")[0] == 0
    assert run_main(capsys, *common, "--seed", "8")[0] == 0  # the older spelling keeps working for scripts
    with _store() as store:
        seeds = [json.loads(s.spec)["base"]["data"]["seed"] for s in sorted(store.sweeps.list(), key=lambda s: s.id)]
    assert seeds == [7, 8]
    code, _, err = run_main(capsys, *common, "--data-seed", "-1")
    assert code == 1 and "--data-seed must be at least 0" in err  # named as the flag, as `invlab train` names it
    code, _, err = run_main(capsys, *common, "--data-seed", "1", "--seed", "2")
    assert code == 2 and "--seed is the older name of --data-seed" in err
