"""The typed contract between models and the page: `Numerics` (checked against independent eigenvalue
computations) and `Tunable`s (natural intervals strictly inside the values' bounds, set through the Trainer)."""
import math

import numpy as np
import pytest
import torch

from invlab.covariances import Kuu
from invlab.errors import ConfigError
from invlab.models import REGISTRY, ModelFamily, Numerics, Tunable
from invlab.models.base import condition_number
from invlab.train import RunConfig, Trainer
from invlab.train.edits import Freeze, SetValue

# (family, data options, model options): one small case per family
CASES = {
    "svgp": ({"dataset": "digits", "subset": 120}, {"num_inducing": 15}),
    "invariant": ({"dataset": "digits", "subset": 60}, {"num_inducing": 10, "num_samples": 2}),
    "conv-invariant": ({"dataset": "digits", "subset": 60}, {"num_inducing": 10}),
    "conv-weighted": ({"dataset": "digits", "subset": 60}, {"num_inducing": 10}),
    "conv-weighted-rbf": ({"dataset": "digits", "subset": 60}, {"num_inducing": 10, "num_inducing_rbf": 8}),
    "conv-colour": ({"dataset": "photo-patches", "subset": 40}, {"num_inducing": 8}),
    "diwp": ({"dataset": "diabetes", "subset": 80}, {"num_inducing": 12}),
    "nngp": ({"dataset": "diabetes", "subset": 80}, {"num_inducing": 12}),
    "dkp_svgp": ({"dataset": "diabetes", "subset": 80}, {"num_inducing": 12}),
    "rkhs": ({"dataset": "two-moons"}, {}),
    "gwi": ({"dataset": "diabetes", "subset": 80}, {}),
}


def trainer_for(family, train_device=None, **model):
    data, options = CASES[family]
    data = {**data, "test_subset": 30}
    return Trainer(RunConfig(model=family, data=data, model_config={**options, **model},
                             train={"steps": 2, "eval_size": 30, "batch_size": 32, **(train_device or {})}))


def independent_condition(matrix: torch.Tensor) -> float:
    ev = np.linalg.eigvalsh(matrix.detach().cpu().numpy())
    return ev.max() / max(ev.min(), ev.max() * np.finfo(np.float64).eps)


def test_every_registered_family_has_a_case():
    assert set(CASES) == set(REGISTRY)


def test_defaults_of_the_base_class():
    assert ModelFamily().tunables() == []
    assert math.isnan(ModelFamily().numerics().condition)
    assert (condition_number(torch.tensor([0.0, 1.0, 4.0], dtype=torch.float64))
            == pytest.approx(1 / np.finfo(np.float64).eps))
    assert condition_number(torch.tensor([0.0, 4.0])) == pytest.approx(1 / np.finfo(np.float32).eps)
    assert condition_number(torch.tensor([2.0, 4.0])) == 2.0


@pytest.mark.parametrize("family", sorted(CASES))
def test_numerics_is_the_condition_number_of_the_matrix_that_matters(family, train_device, dtype):
    trainer = trainer_for(family, train_device)
    trainer.step()  # one solve: the jitter in use is known
    model = trainer.model
    numerics = model.numerics()
    assert isinstance(numerics, Numerics) and numerics.condition >= 1.0
    if family == "rkhs":
        K = model.gram.full()
        assert numerics.condition_of == "K (representers)" and numerics.extra["representers"] == K.shape[0]
        assert math.isnan(numerics.jitter)
    elif family in ("diwp", "nngp"):
        with torch.random.fork_rng():
            torch.manual_seed(0)
            K = model.sample_inducing(1).output_kernel[0]  # the one sample numerics() draws
        assert numerics.condition_of == "output K_ii" and numerics.jitter == model.jitter
    else:
        inducing = model.Q.inducing if family == "gwi" else model.inducing
        K = Kuu(inducing, model.kernel)
        K = K + numerics.jitter * torch.eye(K.shape[0], dtype=K.dtype, device=K.device)
        assert numerics.condition_of == "K_uu" and numerics.jitter == pytest.approx(model.last_jitter)
        assert numerics.extra["inducing"] == K.shape[0]
    # the smallest eigenvalue of a matrix in `dtype` is resolved to ~eps·λ_max: the condition to ~cond·eps (relative)
    rel = 1e-6 if dtype == torch.float64 else max(1e-4, 10 * numerics.condition * torch.finfo(dtype).eps)
    assert numerics.condition == pytest.approx(independent_condition(0.5 * (K + K.T)), rel=rel)


def test_dkp_numerics_leaves_the_training_random_stream_alone(train_device):
    trainer = trainer_for("diwp", train_device)
    torch.manual_seed(3)
    a = trainer.model.numerics()
    after_numerics = torch.rand(3)
    torch.manual_seed(3)
    b = trainer.model.numerics()
    assert torch.equal(torch.rand(3), after_numerics) and a.condition == b.condition


# -- tunables ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("family", sorted(CASES))
def test_every_tunable_spans_a_settable_interval_and_round_trips_through_the_trainer(family, train_device, tol):
    trainer = trainer_for(family, train_device)
    tunables = trainer.model.tunables()
    assert all(isinstance(t, Tunable) for t in tunables)
    assert len({t.name for t in tunables}) == len(tunables) and len({t.label for t in tunables}) == len(tunables)
    for t in tunables:
        assert t.scale in ("linear", "log") and t.group in ("invariance", "kernel", "likelihood") and t.label
        assert t.lo is not None and t.hi is not None and t.lo < t.hi and t.lo <= t.value <= t.hi
        if t.scale == "log":
            assert t.lo > 0
        for target in (t.lo, t.hi, t.lo + 0.3 * (t.hi - t.lo) if t.scale == "linear" else math.sqrt(t.lo * t.hi)):
            trainer.edits.put(SetValue(t.name, target))  # both ends are inside the open bounds: no refusal
            now = {u.name: u for u in trainer.model.tunables()}[t.name]
            assert now.value == pytest.approx(target, rel=tol.f64(rtol=1e-6).rtol, abs=tol.f64(atol=1e-9).atol)
        trainer.edits.put(Freeze(t.name, True))
        assert {u.name: u for u in trainer.model.tunables()}[t.name].frozen
        if t.learnable:
            trainer.edits.put(Freeze(t.name, False))
            assert not {u.name: u for u in trainer.model.tunables()}[t.name].frozen
        else:
            with pytest.raises(ConfigError, match="never learned"):
                trainer.edits.put(Freeze(t.name, False))


def test_the_families_expose_what_a_user_tunes(train_device):
    groups = {f: {t.name: t for t in trainer_for(f, train_device).model.tunables()}
              for f in ("svgp", "invariant", "rkhs", "diwp")}
    assert set(groups["svgp"]) == {"kernel.lengthscale", "kernel.variance"}
    assert groups["svgp"]["kernel.variance"].scale == "log" and groups["svgp"]["kernel.variance"].group == "kernel"
    assert set(groups["rkhs"]) == {"nu", "lam"} and groups["rkhs"]["nu"].group == "invariance"
    assert not groups["rkhs"]["nu"].learnable and groups["svgp"]["kernel.variance"].learnable  # ν is set, not learned
    assert groups["rkhs"]["nu"].lo == 0.0 and groups["rkhs"]["nu"].scale == "linear"
    assert groups["diwp"]["input_layer.delta"].scale == "log" and "δ" in groups["diwp"]["input_layer.delta"].label
    assert groups["diwp"]["likelihood.variance"].group == "likelihood"


def test_a_rotation_half_width_spans_0_to_180_degrees(train_device):
    trainer = trainer_for("invariant", train_device)
    (rotation,) = [t for t in trainer.model.tunables() if t.group == "invariance"]
    assert rotation.name == "kernel.augmentation.ranges.rotation.half_width"
    assert rotation.label == "rotation half-width" and rotation.unit == "°" and rotation.scale == "linear"
    assert rotation.lo == 0.0 and 179.9 < rotation.hi < 180.0
    assert rotation.value == pytest.approx(5.0)
    trainer.edits.put(SetValue(rotation.name, 90.0))
    assert float(trainer.model.augmentation.range_values()["rotation"]) == pytest.approx(90.0)
    trainer.model.augmentation.ranges["rotation"].half_width.assign(-30.0)  # U[−α, α]: the sign does not matter
    assert [t.value for t in trainer.model.tunables() if t.name == rotation.name] == [pytest.approx(30.0)]


def test_two_sided_ranges_give_both_ends_on_their_natural_interval(train_device, tol):
    trainer = trainer_for("invariant", train_device, augmentation="affine")
    ends = {t.name: t for t in trainer.model.tunables() if t.group == "invariance"}
    lo, hi = ends["kernel.augmentation.ranges.rotation.lo"], ends["kernel.augmentation.ranges.rotation.hi"]
    assert lo.label == "rotation range, lower end" and hi.label == "rotation range, upper end"
    # a value stored through a sigmoid onto (−180, 180) is resolved to ~360·eps: 1e-6 relative as written is float64's
    assert -180 < lo.lo < -179.9 and 179.9 < lo.hi < 180
    assert lo.value == pytest.approx(-5.0, rel=tol.f64(rtol=1e-6).rtol)
    assert len(ends) == 12  # six affine parameters, two ends each


def test_frozen_and_learned_ranges_are_reported(train_device):
    trainer = trainer_for("invariant", train_device, learn_ranges=False)
    assert all(t.frozen for t in trainer.model.tunables() if t.group == "invariance")


def test_the_prior_explorer_is_found_through_the_registry():
    explorers = {name: spec.prior_explorer for name, spec in REGISTRY.items() if spec.prior_explorer is not None}
    assert set(explorers) == {"diwp", "nngp", "dkp_svgp"}
    explorer = explorers["diwp"]()
    assert callable(explorer.views) and "delta" in explorer.param
