"""What a discover verdict may claim, on constructed results (no training): a learned range that leaves out the
identity is a warp and never named as an invariance; a candidate whose every range is a warp or moves no pixel by
half a pixel is no invariance and cannot be the verdict's; `affine` (which contains `rotation`) is named only where
it beats rotation beyond noise; the ELBO's Monte-Carlo error counts in "beyond noise" beside the seeds' spread; the
held-out test NLPD is a second opinion the verdict reports when it disagrees. One small `invlab discover` run checks
the JSON line carries the second opinion and each learned range's kind."""
import html
import json
import math

import pytest

from invlab.sweeps.discover_report import CandidateResult, mean_sd, statistics_notes, verdict
from invlab.sweeps.discover_verdict import chosen, preferred_order
from tests.helpers.cli import run_main

IMAGE = (1, 28, 28)  # one input's shape: R = 14 pixels from the centre to the edge
BUDGET = {"steps": 10, "optimizer": "adam", "learning_rate": 0.02, "batch_size": 0, "num_inducing": 5,
          "num_samples": 4, "seeds": [0, 1, 2]}


def row(name, elbos, learned=None, mc=None, nlpd=None, error=None, shape=IMAGE, estimator=""):
    """A finished candidate over seeds 0.. with these ELBOs; `learned`: final range values by stored key; `mc`: each
    seed's Monte-Carlo standard error (None: not stored, as an old sweep); `nlpd` / `error`: per-seed test figures."""
    from invlab.sweeps.discover_ranges import judge

    c = CandidateResult(name, elbos=dict(enumerate(elbos)), finished=len(elbos), estimator=estimator)
    c.elbo_mean, c.elbo_sd = mean_sd(elbos)
    c.learned = {k: {"mean": v, "sd": None, "steps": [], "values": []} for k, v in (learned or {}).items()}
    c.input_shape = shape
    if mc is not None:
        c.mc_ses = dict(enumerate(mc))
        c.elbo_mc_se = math.sqrt(sum(s * s for s in mc)) / len(mc)
    if nlpd is not None:
        c.nlpd = mean_sd(nlpd)
    if error is not None:
        c.test_error = mean_sd(error)
    c.judgements = judge(c)
    return c


def with_bf(ranking):
    none = next(c for c in ranking if c.candidate == "none")
    for c in ranking:
        if c is not none:
            c.log_bf, c.log_bf_sd = mean_sd([c.elbos[s] - none.elbos[s] for s in c.elbos])
    return sorted(ranking, key=lambda c: -c.elbo_mean)


WIDE_AFFINE = {"rotation.lo": -44.0, "rotation.hi": 45.0, "scale_x.lo": 0.125, "scale_x.hi": 0.161,
               "scale_y.lo": -0.001, "scale_y.hi": 0.001, "shear.lo": -0.002, "shear.hi": 0.003,
               "translate_x.lo": -0.004, "translate_x.hi": 0.004, "translate_y.lo": -0.004, "translate_y.hi": 0.004}
TINY_AFFINE = {"rotation.lo": -1.0, "rotation.hi": 1.0, "scale_x.lo": -0.01, "scale_x.hi": 0.01,
               "scale_y.lo": -0.01, "scale_y.hi": 0.01, "shear.lo": -0.01, "shear.hi": 0.01,
               "translate_x.lo": -0.005, "translate_x.hi": 0.005, "translate_y.lo": -0.005, "translate_y.hi": 0.005}


def test_a_warp_is_never_named_an_invariance_and_the_verdict_names_only_the_invariant_ranges():
    none = row("none", [-150.0, -151.0, -149.0])
    affine = row("affine", [-100.0, -101.0, -99.0], WIDE_AFFINE)
    ranking = with_bf([none, affine])
    said = verdict(ranking)
    claim = said.split(";")[0]
    assert claim == "invariant under affine: rotation [−44°, 45°]", said
    assert "no invariance in scale_y, shear, translate_x, translate_y" in said
    assert "scale_x is a fixed warp, not an invariance" in said
    kinds = {k: v["kind"] for k, v in affine.to_dict()["learned"].items()}
    assert kinds["rotation.lo"] == kinds["rotation.hi"] == "invariance"
    assert kinds["scale_x.hi"] == "warp" and kinds["shear.lo"] == "negligible"
    from invlab.sweeps.discover_html import learned_text

    cell = learned_text(affine)
    assert "scale_x [0.125, 0.161] (a warp)" in cell and "no invariance in scale_y, shear" in cell
    assert cell.startswith("rotation [-44.0, 45.0]")


def test_an_affine_whose_every_range_is_negligible_is_no_invariance_and_cannot_be_the_verdicts():
    none = row("none", [-150.0, -151.0, -149.0])
    affine = row("affine", [-140.0, -141.0, -139.0], TINY_AFFINE)  # beats none by 10 nats, seed spread 1
    ranking = with_bf([none, affine])
    assert chosen(ranking) is none
    said = verdict(ranking)
    assert not said.startswith("invariant under affine") and "affine learned no invariance" in said, said
    order, moved = preferred_order(ranking)
    assert [c.candidate for c in order] == ["none", "affine"] and moved == {"affine": "none"}
    notes = statistics_notes(ranking, BUDGET, partial=False, status="finished")
    assert "affine's learned ranges moved no pixel by more than half a pixel: no invariance" in notes, notes


def test_an_affine_made_only_of_warps_and_negligible_ranges_is_no_invariance():
    none = row("none", [-150.0, -151.0, -149.0])
    warped = dict(TINY_AFFINE, **{"scale_x.lo": 0.125, "scale_x.hi": 0.161})
    affine = row("affine", [-140.0, -141.0, -139.0], warped)
    ranking = with_bf([none, affine])
    assert chosen(ranking) is none
    notes = " ".join(statistics_notes(ranking, BUDGET, partial=False, status="finished"))
    assert "affine's learned ranges are no invariance" in notes and "scale_x [0.125, 0.161]" in notes
    assert "fixed warp" in notes


def test_affine_contains_rotation_so_it_is_named_only_where_it_beats_rotation_beyond_noise():
    none = row("none", [-150.0, -151.0, -149.0])
    rotation = row("rotation", [-100.0, -101.0, -99.0], {"rotation": 45.0})
    affine = row("affine", [-99.5, -100.5, -98.5], dict(TINY_AFFINE, **{"rotation.lo": -44.0, "rotation.hi": 45.0}))
    ranking = with_bf([none, rotation, affine])
    assert chosen(ranking) is rotation
    said = verdict(ranking)
    assert said.startswith("rotation-invariant up to ±45° (log BF"), said
    assert "affine does not help" not in said
    order, moved = preferred_order(ranking)
    assert [c.candidate for c in order] == ["rotation", "affine", "none"] and moved == {"affine": "rotation"}
    notes = statistics_notes(ranking, BUDGET, partial=False, status="finished")
    assert any(n.startswith("affine contains rotation: it changes the ELBO of rotation by 0.5 nats, within noise")
               and "rotation alone is preferred" in n for n in notes), notes

    better = row("affine", [-90.0, -91.0, -89.0], dict(TINY_AFFINE, **{"rotation.lo": -44.0, "rotation.hi": 45.0}))
    ranking = with_bf([none, rotation, better])
    assert chosen(ranking) is better and verdict(ranking).startswith("invariant under affine: rotation [−44°, 45°]")


def test_the_monte_carlo_error_counts_in_beyond_noise_and_the_notes_give_both_figures():
    none = row("none", [-100.0, -100.5, -99.5], mc=[0.0, 0.0, 0.0], estimator="exact")
    rotation = row("rotation", [-98.0, -98.5, -97.5], {"rotation": 45.0}, mc=[4.0, 4.0, 4.0],
                   estimator="16 samples per input × 4 evaluation seeds (unbiased)")
    ranking = with_bf([none, rotation])
    # the seeds alone (sd 0.5) would call a 2-nat gain real; with the ELBO's MC error (√48/3 ≈ 2.31) it is noise
    assert rotation.elbo_mc_se == pytest.approx(math.sqrt(48) / 3)
    assert chosen(ranking) is none and verdict(ranking).startswith("no invariance beats none beyond noise")
    notes = statistics_notes(ranking, BUDGET, partial=False, status="finished")
    within = next(n for n in notes if n.startswith("rotation and none are within noise"))
    assert "seed spread 0.5" in within and "Monte-Carlo error 2.31" in within, within
    assert any(n.startswith("rotation's ELBO Monte-Carlo error (2.31 nats) is not small beside its seed spread "
                            "(0.5 nats)") for n in notes), notes
    footing = next(n for n in notes if n.startswith("one footing"))
    assert "exact for none" in footing and "sampled to a Monte-Carlo standard error of at most 4 nats" in footing
    assert not any("estimated differently" in n for n in notes)


def test_an_old_sweep_without_monte_carlo_errors_still_reports_and_says_the_error_is_not_known():
    none = row("none", [-150.0, -151.0, -149.0], estimator="exact")
    rotation = row("rotation", [-100.0, -101.0, -99.0], {"rotation": 45.0}, estimator="6 samples per input")
    ranking = with_bf([none, rotation])
    assert rotation.elbo_mc_se is None and chosen(ranking) is rotation
    notes = statistics_notes(ranking, BUDGET, partial=False, status="finished")
    assert any(n.startswith("no Monte-Carlo error is known for rotation") and "6 samples per input" in n
               for n in notes), notes


def test_the_second_opinion_agrees_when_the_held_out_nlpd_is_no_worse():
    from invlab.sweeps.discover_second import second_opinion

    none = row("none", [-150.0, -151.0, -149.0], nlpd=[0.50, 0.52, 0.48], error=[0.2, 0.21, 0.19])
    rotation = row("rotation", [-100.0, -101.0, -99.0], {"rotation": 45.0}, nlpd=[0.30, 0.31, 0.29],
                   error=[0.1, 0.11, 0.09])
    ranking = with_bf([none, rotation])
    opinion = second_opinion(ranking)
    assert opinion.agrees and opinion.text.startswith("the held-out test NLPD agrees"), opinion.text
    assert "0.300 ± 0.010" in opinion.text and "0.500 ± 0.020" in opinion.text


def test_the_second_opinion_disagrees_when_the_chosen_candidates_nlpd_is_worse_than_nones_beyond_noise():
    from invlab.sweeps.discover_report import DiscoverReport
    from invlab.sweeps.discover_second import second_opinion

    none = row("none", [-150.0, -151.0, -149.0], nlpd=[0.50, 0.51, 0.49], error=[0.2, 0.2, 0.2])
    rotation = row("rotation", [-100.0, -101.0, -99.0], {"rotation": 45.0}, nlpd=[0.90, 0.91, 0.89],
                   error=[0.3, 0.31, 0.29])
    ranking = with_bf([none, rotation])
    opinion = second_opinion(ranking)
    assert not opinion.agrees
    assert opinion.text.startswith("the held-out test figures disagree: rotation's test NLPD 0.900 ± 0.010 is "
                                   "worse than none's 0.500 ± 0.010 beyond their seeds' spread"), opinion.text
    assert "; rotation's test error 30.0 ± 1.0% is worse than none's 20.0 ± 0.0% beyond" in opinion.text
    report = DiscoverReport(1, "x", "finished", ranking, BUDGET, [], "v", False, 6, 6, second=opinion)
    assert report.to_dict()["second_opinion"] == {"agrees": False, "text": opinion.text}


def test_the_second_opinion_disagrees_when_none_is_chosen_but_a_candidates_nlpd_is_better_beyond_noise():
    from invlab.sweeps.discover_second import second_opinion

    none = row("none", [-150.0, -151.0, -149.0], nlpd=[0.50, 0.51, 0.49])
    flips = row("flips", [-160.0, -161.0, -159.0], nlpd=[0.20, 0.21, 0.19])
    close = row("cyclic_shifts", [-152.0, -151.0, -150.0], nlpd=[0.49, 0.50, 0.48])
    ranking = with_bf([none, flips, close])
    assert chosen(ranking) is none
    opinion = second_opinion(ranking)
    assert not opinion.agrees
    assert opinion.text.startswith("the held-out test NLPD disagrees: none is chosen, but flips's test NLPD 0.200 ± "
                                   "0.010 is better than none's 0.500 ± 0.010 beyond their seeds' spread"), opinion.text


def test_the_command_ends_with_json_that_has_the_second_opinion_and_each_learned_ranges_kind(tmp_path, monkeypatch,
                                                                                             capsys):
    monkeypatch.setenv("INVLAB_DATA", str(tmp_path))
    code, out, err = run_main(capsys, "discover", "--dataset", "digits", "--subset", "40", "--test-subset", "30",
                              "--orbit", "rotation", "--seeds", "1", "--steps", "5", "--num-inducing", "5",
                              "--num-samples", "2", "--batch-size", "0",
                              "--no-combine", "--serial", "--json", "--report", str(tmp_path / "r.html"))
    assert code == 0, err
    lines = out.strip().splitlines()
    result = json.loads(lines[-1])
    assert set(result["second_opinion"]) == {"agrees", "text"} and isinstance(result["second_opinion"]["agrees"], bool)
    rotation = next(r for r in result["ranking"] if r["candidate"] == "rotation")
    assert rotation["learned"]["rotation"]["kind"] in ("invariance", "negligible")
    assert any(line.startswith("second opinion: ") for line in lines)
    assert f"Second opinion: {html.escape(result['second_opinion']['text'])}" in (tmp_path / "r.html").read_text()


def test_stage_two_never_combines_a_candidate_that_is_no_invariance_or_does_not_beat_what_it_contains(monkeypatch):
    from invlab.sweeps import discover_combine
    from invlab.sweeps.discover_report import DiscoverReport
    from invlab.sweeps.discover_verdict import preferred_order

    none = row("none", [-150.0, -151.0, -149.0])
    rotation = row("rotation", [-100.0, -101.0, -99.0], {"rotation": 45.0})
    nested = row("affine", [-99.5, -100.5, -98.5], dict(TINY_AFFINE, **{"rotation.lo": -44.0, "rotation.hi": 45.0}))
    flips = row("flips", [-120.0, -121.0, -119.0])
    for affine in (nested, row("affine", [-90.0, -91.0, -89.0], TINY_AFFINE)):  # within noise of rotation; no range
        ranking, _ = preferred_order(with_bf([none, rotation, affine, flips]))
        report = DiscoverReport(1, "x", "finished", ranking, BUDGET, [], "", False, 12, 12)
        monkeypatch.setattr(discover_combine, "discover_report", lambda store, sweep_id: report)
        assert discover_combine.next_combination(None, 1) == ("rotation", "flips")


def test_a_stored_sweep_is_read_with_its_runs_precision_and_input_shape(tmp_path):
    """Each run's sweep info as the sweep task stores it (elbo_mc_se, estimator, input_shape; an older run: only an
    estimator phrase) reaches the report: the candidate's Monte-Carlo error sqrt(Σ se²)/n, the judged ranges (a
    1° rotation on 8×8 digits moves no pixel by half a pixel), an exact estimate counted as no error, and a held-out
    NLPD that contradicts the ELBO's choice said in the verdict."""
    from invlab.sweeps.discover import create_sweep, plan_candidates
    from invlab.sweeps.discover_report import discover_report
    from invlab.train import RunStore

    plan = plan_candidates({"dataset": "digits", "subset": 40}, seeds=2, orbits=["rotation", "flips"], combine=False)
    sampled = {"rotation": ("16 samples per input × 4 evaluation seeds (unbiased)", [0.3, 0.4], {"rotation": 1.0})}
    with RunStore(tmp_path / "runs.sqlite") as store:
        sweep_id = create_sweep(plan, store)
        for run in plan.spec.runs():
            name = run.point["model.augmentation"]
            estimator, ses, learned = sampled.get(name, ("exact", None, {}))
            info = {"point": run.point, "seed": run.seed, "estimator": estimator, "learned": learned}
            if ses is not None:  # the sampled candidate's runs are new; the exact ones were stored before
                info.update(elbo_mc_se=ses[run.seed], input_shape=[1, 8, 8], elbo_bias=0.0)
            store.sweeps.store_run(sweep_id, run.key, config_json=run.config.to_json(), model="invariant",
                                   dataset="digits", status="finished", step=10, history={}, info=info,
                                   figures={"full_elbo": (-90.0 if name == "flips" else -100.0) - run.seed,
                                            "test_nlpd": 0.9 if name == "flips" else 0.5})
        report = discover_report(store, sweep_id)
    rotation, flips = report.row("rotation"), report.row("flips")
    assert rotation.elbo_mc_se == pytest.approx(math.sqrt(0.3 ** 2 + 0.4 ** 2) / 2) and flips.elbo_mc_se == 0.0
    assert rotation.input_shape == (1, 8, 8) and [j.kind.value for j in rotation.judgements] == ["negligible"]
    kinds = {c["candidate"]: {k: v["kind"] for k, v in c["learned"].items()} for c in report.to_dict()["ranking"]}
    assert kinds["rotation"] == {"rotation": "negligible"}
    assert any(n.startswith("one footing") and "exact for flips, none" in n and "at most 0.4 nats" in n
               for n in report.notes), report.notes
    assert "rotation's learned ranges moved no pixel by more than half a pixel: no invariance" in report.notes
    # flips wins the ELBO, but its held-out NLPD is worse than none's: the verdict says so
    assert report.verdict.startswith("invariant under flips (log BF 10") and not report.second.agrees
    assert report.verdict.endswith("; but the held-out test figures disagree (see the second opinion)"), report.verdict
    assert "rotation learned no invariance" in report.verdict


def test_a_group_in_a_list_of_candidates_is_named_by_its_columns_but_a_longer_group_is_left_alone():
    """A note lists candidates with ', ' between them ('exact for permutations:0,1, none'): the group is still named
    by its columns, while 'permutations:0,1,2' is another group and keeps its own name."""
    from invlab.sweeps.discover_labels import relabel

    labels = {"permutations:0,1": "permutations: age, height", "none": "none"}
    assert relabel("exact for permutations:0,1, none", labels) == "exact for permutations: age, height, none"
    assert relabel("permutations:0,1,2 helps", labels) == "permutations:0,1,2 helps"
    assert relabel("permutations:0,1 helps", labels) == "permutations: age, height helps"
