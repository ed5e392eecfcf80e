"""Every Discover candidate's ELBO on one footing: each run's sweep info says how its whole-data ELBO was estimated
(`estimator`, one phrase), to which Monte-Carlo standard error, with how many samples per input and evaluation seeds,
the measured bias, and one input's shape — exact for no augmentation and a small finite orbit, sampled to the
precision Discover asks for (DEFAULT_TRAIN's elbo_precision) for a learned range."""
from invlab.sweeps.discover import DEFAULT_TRAIN, plan_candidates, run_candidates
from invlab.train import RunStore

DIGITS = {"dataset": "digits", "subset": 60, "test_subset": 30, "seed": 0}


def test_a_discover_run_stores_how_each_candidates_elbo_was_estimated(tmp_path):
    assert DEFAULT_TRAIN["elbo_precision"] == 0.1
    store = RunStore(tmp_path / "runs.sqlite")
    plan = plan_candidates(DIGITS, seeds=1, steps=5, orbits=["rotation", "flips"], combine=False,
                           model_config={"num_inducing": 8, "num_samples": 3, "num_predict_samples": 4},
                           train={"elbo_precision": 2.0})  # an untrained model is noisy: a loose target stays cheap
    sweep_id = run_candidates(plan, store, serial=True)
    infos = {}
    for run in store.sweeps.runs(sweep_id):
        assert run.status == "finished", run.message
        info = store.sweeps.info(run.id)
        infos[info["point"]["model.augmentation"]] = info
    assert set(infos) == {"identity", "rotation", "flips"}, set(infos)
    for info in infos.values():
        assert info["input_shape"] == [1, 8, 8]
        assert {"elbo_mc_se", "elbo_samples", "elbo_evaluations", "elbo_bias"} <= set(info)
        assert info["full_elbo"]["mc_se"] == info["elbo_mc_se"]
    none, rotation, flips = infos["identity"], infos["rotation"], infos["flips"]
    assert none["estimator"] == "exact (nothing sampled)" and none["elbo_mc_se"] == 0.0
    assert flips["estimator"] == "exact (whole orbit of 2)" and flips["elbo_evaluations"] == 1
    assert 0 < rotation["elbo_mc_se"] <= 2.0 and rotation["elbo_samples"] >= 16 and rotation["elbo_bias"] == 0.0
    assert "standard error" in rotation["elbo_method"] and "unbiased" in rotation["elbo_method"]
    assert rotation["estimator"] == (f"{rotation['elbo_samples']} samples per input × {rotation['elbo_evaluations']} "
                                     "evaluation seeds (unbiased)")


def test_the_command_line_sets_the_precision_every_candidates_elbo_is_estimated_to(capsys):
    """`invlab discover --elbo-precision NATS` is the precision the runs are estimated to and the budget reports; a
    negative one is refused with a sentence before anything trains."""
    import json

    from tests.helpers.cli import run_main

    small = ["discover", "--dataset", "digits", "--subset", "40", "--test-subset", "20", "--seeds", "1", "--steps",
             "3", "--num-inducing", "6", "--orbit", "rotation", "--no-combine", "--serial", "--quiet"]
    code, out, err = run_main(capsys, *small, "--elbo-precision", "3", "--json")
    assert code == 0, err
    report = json.loads(out.strip().splitlines()[-1])
    assert report["budget"]["elbo_precision"] == 3.0
    rotation = next(row for row in report["ranking"] if row["candidate"] == "rotation")
    assert 0 < rotation["elbo_mc_se"] <= 3.0
    code, out, err = run_main(capsys, *small, "--elbo-precision", "-1")
    assert code != 0 and "elbo_precision must be at least 0" in err and "Traceback" not in err + out


def test_unbiased_estimates_of_one_elbo_compare_on_one_axis_and_a_plug_in_does_not(tmp_path):
    """`invlab compare` of a Discover sweep: exact evaluations and sampled ones to a stated precision are unbiased
    estimates of the same ELBO, so they share one axis though their sample counts differ run by run; a plug-in
    estimate (biased) is named as the reason they do not."""
    from invlab.sweeps.compare import comparison
    from invlab.sweeps.discover import create_sweep

    plan = plan_candidates(DIGITS, seeds=2, orbits=["rotation", "flips"], combine=False)

    def store_all(store, sweep_id, rotation_estimator):
        for run in plan.spec.runs():
            name = run.point["model.augmentation"]
            estimator = (rotation_estimator.format(seed=run.seed) if name == "rotation"
                         else "exact (whole orbit of 2)" if name == "flips" else "exact (nothing sampled)")
            store.sweeps.store_run(sweep_id, run.key, config_json=run.config.to_json(), model="invariant",
                                   dataset="digits", status="finished", step=5, history={},
                                   info={"point": run.point, "seed": run.seed, "estimator": estimator},
                                   figures={"full_elbo": -100.0 - run.seed})

    with RunStore(tmp_path / "unbiased.sqlite") as store:
        sweep_id = create_sweep(plan, store)
        store_all(store, sweep_id, "{seed}6 samples per input × 4 evaluation seeds (unbiased)")
        compared = comparison(store, sweep_id)
        assert compared.comparable, compared.reason
    with RunStore(tmp_path / "plug_in.sqlite") as store:
        sweep_id = create_sweep(plan, store)
        store_all(store, sweep_id, "16 samples per input × 4 evaluation seeds (plug-in, bias +0.02 nats)")
        compared = comparison(store, sweep_id)
        assert not compared.comparable and "plug-in" in compared.reason, compared.reason
