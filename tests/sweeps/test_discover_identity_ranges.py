"""Discover's affine candidate learns its ranges around the identity (U[−a, b], a, b ≥ 0), so a range it reports
always holds the identity: an invariance, never a fixed warp of the inputs (the Training page keeps the paper's free
U[lo, hi] by default)."""
from invlab.sweeps.discover import plan_candidates
from invlab.train import RunConfig, Trainer
from invlab.transforms import IdentityRange, UniformRange


def test_discovers_affine_candidate_learns_ranges_around_the_identity():
    data = {"dataset": "digits", "subset": 40, "test_subset": 20}
    plan = plan_candidates(data, seeds=1, steps=1, orbits=["affine"], model_config={"num_inducing": 5})
    (run,) = [r for r in plan.spec.runs() if r.point["model.augmentation"] == "affine"]
    assert run.config.model_config["ranges_around_identity"] is True
    model = Trainer(run.config).model
    assert all(isinstance(r, IdentityRange) for r in model.augmentation.ranges.values())
    values = {k: float(v) for k, v in model.range_values().items()}
    assert all(values[f"{name}.lo"] <= 0 <= values[f"{name}.hi"] for name in model.augmentation.ranges)
    # the Training page's default is the paper's parametrisation
    page = Trainer(RunConfig("invariant", data, {"augmentation": "affine", "num_inducing": 5})).model
    assert all(isinstance(r, UniformRange) for r in page.augmentation.ranges.values())
