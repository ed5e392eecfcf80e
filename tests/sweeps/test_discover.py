"""`invlab discover` on data with a known symmetry: the swap-symmetric regression ranks permutations first, the same
inputs with a target that is not symmetric rank no invariance first, rotated digits rank rotation above none with a
learned range near the true one; every run is stored as one sweep, and the command's `--json` line parses."""
import json

import numpy as np
import pytest

from invlab.sweeps.discover import plan_candidates, run_candidates
from invlab.sweeps.discover_report import discover_report
from invlab.train import RunStore
from tests.helpers.cli import run_main
from tests.helpers.even_table import write_even_csv

SWAP_DATA = {"dataset": "symmetric-2d", "seed": 0, "source_options": {"num_train": 60, "num_test": 100}}
SMALL = {"model_config": {"num_inducing": 15}, "train": {"batch_size": 0, "learning_rate": 0.03}}


def test_a_swap_symmetric_regression_ranks_permutations_first_on_a_local_cluster(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    plan = plan_candidates(SWAP_DATA, seeds=2, steps=150, **SMALL)
    assert plan.names[0] == "none" and {"permutations", "sign_flips"} <= set(plan.names)
    assert "rotation" in plan.skipped and "images" in plan.skipped["rotation"]
    told = []
    sweep_id = run_candidates(plan, store, n_workers=1, on_result=lambda *a: told.append(a))

    runs = store.sweeps.runs(sweep_id)
    assert len(runs) == len(told) == 2 * len(plan.names) and all(r.status == "finished" for r in runs)
    assert sorted((c, s) for c, s, *_ in told) == sorted((c, s) for c in plan.names for s in (0, 1))
    report = discover_report(store, sweep_id)
    assert report.ranking[0].candidate == "permutations" and not report.partial
    assert report.ranking[0].log_bf > report.ranking[0].log_bf_sd > 0
    assert report.verdict.startswith("invariant under permutations (log BF")
    assert report.budget["steps"] == 150 and report.budget["seeds"] == [0, 1]


def test_the_same_inputs_with_a_target_that_is_not_symmetric_rank_none_first(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(60, 2))
    y = np.sin(1.5 * X[:, 0]) + 0.5 * X[:, 1] + 0.05 * rng.normal(size=60)  # neither swap- nor sign-symmetric
    path = tmp_path / "lopsided.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header="x1,x2,y", comments="")
    store = RunStore(tmp_path / "runs.sqlite")
    plan = plan_candidates({"dataset": f"csv:{path}"}, seeds=2, steps=150, **SMALL)
    report = discover_report(store, run_candidates(plan, store, serial=True))
    assert report.ranking[0].candidate == "none", [(c.candidate, c.elbo_mean) for c in report.ranking]
    assert report.verdict.startswith(("no invariance beats none", "none is best: every invariance tried lowers"))
    assert all(c.log_bf < 0 for c in report.ranking if c.candidate != "none")


def test_rotated_digits_rank_rotation_above_none_with_the_learned_range_near_the_true_one(tmp_path):
    data = {"dataset": "digits", "rotate": 90, "seed": 0, "subset": 300, "test_subset": 200}
    store = RunStore(tmp_path / "runs.sqlite")
    plan = plan_candidates(data, seeds=1, steps=250, orbits=["rotation"],
                           model_config={"num_samples": 4, "num_predict_samples": 8})
    assert plan.names == ["none", "rotation"] and plan.candidates[1].ranges == ["rotation"]
    report = discover_report(store, run_candidates(plan, store, serial=True))
    rotation, none = report.row("rotation"), report.row("none")
    assert report.ranking[0] is rotation and rotation.log_bf > 0
    learned = rotation.learned["rotation"]
    assert abs(learned["mean"] - 90.0) < 20.0  # the data's angles are U[−90°, 90°]
    assert learned["steps"][-1] == 250 and learned["values"][0] < learned["values"][-1] - 20  # its path, up from 30°
    assert report.verdict.startswith(f"rotation-invariant up to ±{learned['mean']:.0f}°")
    assert "one seed per candidate" in " ".join(report.notes)
    assert none.test_error[0] is not None and rotation.seconds > 0


def test_the_command_prints_the_ranking_writes_the_report_and_ends_with_a_json_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("INVLAB_DATA", str(tmp_path))
    code, out, err = run_main(capsys, "discover", "--dataset", "symmetric-2d", "--source-option", "num_train=40",
                              "--seeds", "1", "--steps", "60", "--num-inducing", "8", "--batch-size", "0",
                              "--serial", "--json", "--report", str(tmp_path / "r.html"))
    assert code == 0, err
    lines = out.strip().splitlines()
    ranking = json.loads(lines[-1])["ranking"]
    assert sorted(r["candidate"] for r in ranking) == ["none", "permutations", "sign_flips"]
    assert {"candidate", "elbo_mean", "elbo_sd", "log_bf", "learned"} <= set(ranking[0])
    assert any(line.startswith("verdict: ") for line in lines) and f"report: {tmp_path / 'r.html'}" in lines
    assert "<table" in (tmp_path / "r.html").read_text()
    code, out, _ = run_main(capsys, "sweeps", "--json")  # one stored sweep, like any other
    assert code == 0 and "discover symmetric-2d" in out


@pytest.mark.parametrize("flags", [["--serial", "--workers", "2"]])
def test_serial_with_workers_is_a_usage_error(flags, capsys):
    code, _, err = run_main(capsys, "discover", "--dataset", "digits", *flags)
    assert code == 2 and "--serial" in err


def test_a_group_on_named_coordinates_is_its_own_candidate(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.uniform(-3, 3, size=(60, 3))
    y = np.sin(2 * X[:, 0]) * np.sin(2 * X[:, 2]) + 0.5 * X[:, 1] + 0.05 * rng.normal(size=60)  # swap 0 ↔ 2 only
    path = tmp_path / "three.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header="a,b,c,y", comments="")
    store = RunStore(tmp_path / "runs.sqlite")
    plan = plan_candidates({"dataset": f"csv:{path}"}, seeds=1, steps=150,
                           orbits=["permutations:0,2", "permutations"], **SMALL)
    assert plan.names == ["none", "permutations:0,2", "permutations"]
    report = discover_report(store, run_candidates(plan, store, serial=True))
    assert report.ranking[0].candidate == "permutations:0,2", [(c.candidate, c.elbo_mean) for c in report.ranking]
    assert report.row("permutations").log_bf < 0  # all six permutations: not a symmetry of this target


def test_stage_two_combines_the_two_best_single_candidates_and_keeps_the_pair_that_beats_them(tmp_path):
    path = write_even_csv(tmp_path, 80)
    store = RunStore(tmp_path / "runs.sqlite")
    plan = plan_candidates({"dataset": f"csv:{path}"}, seeds=2, steps=150, **SMALL)
    told = []
    sweep_id = run_candidates(plan, store, serial=True, on_result=lambda *a: told.append(a[:2]))
    report = discover_report(store, sweep_id)
    best, second = sorted((c for c in report.ranking if c.candidate in ("permutations", "sign_flips")),
                          key=lambda c: -c.elbo_mean)
    pair = f"{best.candidate}+{second.candidate}"
    assert [c.candidate for c in report.ranking][0] == pair and told[-2:] == [(pair, 0), (pair, 1)]
    assert report.row(pair).elbo_mean - best.elbo_mean > max(report.row(pair).elbo_sd, best.elbo_sd)
    assert report.verdict.startswith(f"invariant under {pair} (log BF")
    assert any(note.startswith(f"stage 2: {pair} improves the ELBO of {best.candidate}") and "kept" in note
               for note in report.notes)
    assert len(store.sweeps.runs(sweep_id)) == report.total == 8 and not report.partial  # one sweep, both stages


def test_the_notes_say_when_seeds_disagree_when_differences_are_noise_and_when_a_candidate_failed():
    from invlab.sweeps.discover_report import CandidateResult, mean_sd, statistics_notes, verdict

    def row(name, elbos, failed=()):
        c = CandidateResult(name, elbos=dict(enumerate(elbos)), failed=list(failed), finished=len(elbos))
        c.elbo_mean, c.elbo_sd = mean_sd(elbos)
        return c

    none, flips, rotation = row("none", [-100.0, -101.0, -99.0]), row("flips", [-99.0, -102.0, -96.0]), \
        row("rotation", [-50.0, -52.0, -51.0])
    broken = row("affine", [], ["seed 0: step 1 produced a non-finite loss"])
    for c in (flips, rotation):
        c.log_bf, c.log_bf_sd = mean_sd([c.elbos[s] - none.elbos[s] for s in c.elbos])
    ranking = [rotation, flips, none, broken]
    budget = {"steps": 10, "optimizer": "adam", "learning_rate": 0.02, "batch_size": 0, "num_inducing": 5,
              "num_samples": 4, "seeds": [0, 1, 2]}
    notes = statistics_notes(ranking, budget, partial=False, status="incomplete")
    assert notes[0].startswith("every candidate: 10 steps of adam (learning rate 0.02, batch all), M = 5")
    assert any(n.startswith("flips and none are within noise: ELBO difference") for n in notes)
    assert "seeds disagree on the order: seed 1 ranks rotation > none > flips" in notes
    assert "affine failed (seed 0: step 1 produced a non-finite loss); it is left out of its mean" in notes
    assert not any(n.startswith("rotation and flips are within noise") for n in notes)
    assert verdict(ranking) == ("invariant under rotation (log BF 49.0 ± 1.0 over none); flips does not help; affine "
                                "failed (see the notes)")


def test_when_every_invariance_loses_to_none_beyond_noise_the_verdict_says_none_is_best_and_by_how_much():
    from invlab.sweeps.discover_report import CandidateResult, mean_sd, verdict

    def row(name, elbos):
        c = CandidateResult(name, elbos=dict(enumerate(elbos)), finished=len(elbos))
        c.elbo_mean, c.elbo_sd = mean_sd(elbos)
        return c

    none, shifts, rotation = row("none", [-100.0, -101.0]), row("cyclic_shifts", [-900.0, -910.0]), \
        row("rotation", [-665.0, -667.0])
    for c in (shifts, rotation):
        c.log_bf, c.log_bf_sd = mean_sd([c.elbos[s] - none.elbos[s] for s in c.elbos])
    assert verdict([none, rotation, shifts]) == ("none is best: every invariance tried lowers the ELBO beyond the "
                                                 "seeds' spread, by 566 nats or more (rotation comes closest, log BF "
                                                 "-565.50 ± 0.71 over none)")
    close = row("flips", [-100.5, -101.5])  # within noise of none: not a loss the data can show
    close.log_bf, close.log_bf_sd = mean_sd([close.elbos[s] - none.elbos[s] for s in close.elbos])
    assert verdict([none, close, rotation]).startswith("no invariance beats none beyond noise (best: flips")


def test_on_dask_a_diverging_candidate_fails_once_and_stage_two_still_runs(tmp_path):
    from tests.helpers.orbits import exploding_orbit

    path = write_even_csv(tmp_path, 80)
    store = RunStore(tmp_path / "runs.sqlite")
    with exploding_orbit() as name:
        plan = plan_candidates({"dataset": f"csv:{path}"}, seeds=2, steps=150,
                               orbits=["permutations", "sign_flips", name], **SMALL)
        told = []
        sweep_id = run_candidates(plan, store, n_workers=1, on_result=lambda *a: told.append((a[0], a[3])))
    assert told.count((name, "failed")) == 2  # each seed once: stage 2 does not train it again
    report = discover_report(store, sweep_id)
    assert any("+" in c.candidate for c in report.ranking) and report.row(name).failed
    assert len(store.sweeps.runs(sweep_id)) == report.total == 10


def test_a_tables_report_names_the_rmse_by_its_target_column_and_never_reads_the_name_as_html(tmp_path, monkeypatch,
                                                                                               capsys):
    """`invlab discover` on your own CSV: the terminal's table, the HTML report and the page's ranking name the test
    RMSE by the target column ("test RMSE (price_keur)"); a column name with markup is shown as text everywhere."""
    import dataclasses

    from invlab.dashboard.compare.discover_ranking import score_titles
    from invlab.sweeps.discover_html import report_html

    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, size=(40, 2))
    path = tmp_path / "flats.csv"
    np.savetxt(path, np.column_stack([X, X[:, 0] ** 2 + X[:, 1] ** 2]), delimiter=",", header="rooms,floor,price_keur",
               comments="")
    monkeypatch.setenv("INVLAB_DATA", str(tmp_path))
    code, out, err = run_main(capsys, "discover", "--dataset", f"csv:{path}", "--seeds", "1", "--steps", "30",
                              "--num-inducing", "8", "--batch-size", "0", "--serial", "--report",
                              str(tmp_path / "r.html"))
    assert code == 0, err
    header = next(line for line in out.splitlines() if line.startswith("#"))
    assert "test RMSE (price_keur)" in header, out
    assert "<th>test RMSE (price_keur)</th>" in (tmp_path / "r.html").read_text()
    store = RunStore(tmp_path / "runs.sqlite")
    report = discover_report(store, store.sweeps.list()[0].id)
    assert report.target_name == "price_keur" and report.to_dict()["target_name"] == "price_keur"
    marked = dataclasses.replace(report, target_name='<img src=x onerror="alert(1)">')
    assert "<img" not in report_html(marked) and "test RMSE (&lt;img src=x onerror=&quot;alert(1)&quot;&gt;)" in \
        report_html(marked)
    assert score_titles(report) == {"test error": "test RMSE (price_keur)"}  # the page's column title
    assert score_titles(marked) == {"test error": "test RMSE (&lt;img src=x onerror=&quot;alert(1)&quot;"
                                                                "&gt;)"}  # Tabulator reads titles as HTML
