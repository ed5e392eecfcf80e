"""The Training page's word on learned ranges: the ranges' history view says which ranges leave out the identity (a
fixed warp, not an invariance), in the judge's words; an affine augmentation learned around the identity gives the
Invariance tab sliders for the widths below and above the identity, which set the running model's range; its run
config and checkpoint round-trip."""
import pytest
import torch

from invlab.models import DataInfo
from invlab.models.invariant import InvariantConfig, build_invariant
from invlab.parameters import learnables
from invlab.train import RunConfig, Trainer
from invlab.train.edits import Freeze, SetValue
from invlab.transforms import IdentityRange, UniformRange

DT = torch.float64
WARP = "shear [0.2, 0.3] leaves out 0 (no change): a fixed warp, not an invariance"


def small_images(n=24, side=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.zeros(n, 1, side, side, dtype=DT)
    X[:, :, 2:-2, 2:-2] = torch.rand(n, 1, side - 4, side - 4, generator=g, dtype=DT)
    return X, torch.randint(0, 2, (n,), generator=g), g


def affine_model(**config):
    X, y, g = small_images()
    model = build_invariant(InvariantConfig(num_inducing=6, augmentation="affine", num_samples=3, **config), X, y,
                            DataInfo("classification", 2, image_shape=(1, 10, 10)), generator=g)
    return model, X, y


def test_a_free_range_that_leaves_out_the_identity_is_called_a_warp_on_the_page():
    model, X, y = affine_model(learn_ranges=False)
    shear = model.augmentation.ranges["shear"]
    assert isinstance(shear, UniformRange)  # the paper's free U[lo, hi], the Training page's default
    shear.lo.assign(0.2)
    shear.hi.assign(0.3)  # 0.3 of a row per row: the edge moves 5·0.3 = 1.5 px
    for _ in range(2):
        model.loss((X, y))
    view = model.diagnostics((X, y), only={"augmentation_history"})["augmentation_history"]
    assert WARP in view.description
    assert "rotation" not in view.description.split("leaves out")[0].split(":")[-1]  # ±5° holds 0: not named
    # ranges under half a pixel are named as no invariance (translations of ±0.02 of 10 px move 0.2 px)
    assert "No invariance in rotation, scale_x, scale_y, translate_x, translate_y (they move no pixel by half a " \
           "pixel)." in view.description
    assert view.description.count("At step 2:") == 1


def test_ranges_around_the_identity_have_sliders_on_either_side_that_set_the_running_range():
    config = RunConfig(model="invariant",
                       data={"dataset": "digits", "odd_even": True, "subset": 80, "test_subset": 40},
                       model_config={"augmentation": "affine", "ranges_around_identity": True, "num_inducing": 8,
                                     "num_samples": 2, "num_predict_samples": 2},
                       train={"steps": 3, "log_every": 1, "eval_every": 0, "eval_size": 40, "batch_size": 32})
    trainer = Trainer(config)
    assert all(isinstance(r, IdentityRange) for r in trainer.model.augmentation.ranges.values())
    tunables = {t.name: t for t in trainer.model.tunables() if t.group == "invariance"}
    below, above = "kernel.augmentation.ranges.shear.below", "kernel.augmentation.ranges.shear.above"
    # the unit is written out where it has no symbol, as the other ranges' labels do
    assert tunables[below].label == "shear range below the identity (tan of angle)"
    assert tunables[above].label == "shear range above the identity (tan of angle)"
    assert tunables["kernel.augmentation.ranges.rotation.above"].label == "rotation range above the identity"
    assert tunables["kernel.augmentation.ranges.rotation.above"].unit == "°"
    assert 0 < tunables[below].lo < 1e-3 and 0.99 < tunables[below].hi < 1.0  # the width spans (0, limit)
    assert tunables[below].value == pytest.approx(0.02)  # a width, positive, started at init_affine
    trainer.step()
    for name, value in ((below, 0.3), (above, 0.1)):
        trainer.edits.put(SetValue(name, value))
        trainer.edits.put(Freeze(name))
    trainer.step()
    assert trainer.history["range.shear.lo"][1][-1] == pytest.approx(-0.3)
    assert trainer.history["range.shear.hi"][1][-1] == pytest.approx(0.1)
    view = trainer.model.diagnostics(only={"augmentation_history"})["augmentation_history"]
    assert "fixed warp" not in view.description
    # the run's config and a checkpoint round-trip: the same ranges are built and take the saved values
    again = Trainer(RunConfig.from_json(trainer.config.to_json()))
    again.model.load_state_dict(trainer.model.state_dict())
    assert float(again.model.range_values()["shear.lo"]) == pytest.approx(-0.3)
    assert set(learnables(again.model)) == set(learnables(trainer.model))
