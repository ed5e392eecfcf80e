"""Diagnostics limited to the views on screen: `diagnostics(only=names)` returns just the named views, each equal to
the same view of a call that computes all, and computes nothing else (no engine code beyond the bookkeeping runs for
an empty selection; the invariant family draws no augmentation samples for its hyper-parameter table); the Trainer's
`snapshot(only=...)` stores just those views and leaves the run's other stored views as they were.

Every family the page offers is built small (a few dozen points, eight inducing points) and trained two steps."""
from __future__ import annotations

import dataclasses
import functools
import os
import sys

import numpy as np
import pytest
import torch

from invlab.models.invariant import InvariantSVGP
from invlab.train import RunConfig, RunStore, Trainer
from invlab.train.evaluation import views_of

DKP = {"num_inducing": 8, "num_predict_samples": 4}
# case → (family, data set, data options, model options, views the case must show)
CASES = {
    "svgp": ("svgp", "digits", {}, {"num_inducing": 8}, {"kuu_spectrum", "hyperparameters", "inducing_inputs"}),
    "svgp-plane": ("svgp", "symmetric-2d", {}, {"num_inducing": 8}, {"posterior", "predictions"}),
    "invariant": ("invariant", "digits", {}, {"num_inducing": 8, "num_samples": 2, "num_predict_samples": 4},
                  {"hyperparameters", "augmentation_history", "augmentation_samples", "inducing_inputs"}),
    "conv-invariant": ("conv-invariant", "rectangles", {}, {"num_inducing": 8}, {"inducing_patches"}),
    "conv-weighted": ("conv-weighted", "rectangles", {}, {"num_inducing": 8}, {"patch_weights"}),
    "conv-weighted-rbf": ("conv-weighted-rbf", "rectangles", {}, {"num_inducing": 8, "num_inducing_rbf": 4},
                          {"variance_split", "inducing_images", "patch_weights"}),
    "conv-colour": ("conv-colour", "photo-patches", {}, {"num_inducing": 8}, {"inducing_patches"}),
    "rkhs": ("rkhs", "two-moons", {}, {}, {"objective", "gram_spectrum", "decision_function", "solver_trace"}),
    "rkhs-images": ("rkhs", "digits", {"classes": [4, 9]},
                    {"labelled": 20, "max_unlabelled": 10, "transformations": ["rotation", "tx"]}, {"tangents"}),
    "gwi": ("gwi", "symmetric-2d", {}, {"num_spectrum": 20, "reference_steps": 5},
            {"w2_spectrum", "w2_terms", "hyperparameters", "posterior", "predictions"}),
    "diwp": ("diwp", "diabetes", {}, DKP, {"layer2_gram", "layer2_spectrum", "output_kernel", "predictions"}),
    "diwp-plane": ("diwp", "symmetric-2d", {}, DKP, {"layer1_gram", "posterior", "predictions"}),
    "nngp": ("nngp", "diabetes", {}, DKP, {"layer1_spectrum", "output_spectrum", "hyperparameters"}),
    "dkp_svgp": ("dkp_svgp", "diabetes", {}, {"num_inducing": 8}, {"kuu_spectrum", "predictions"}),
}


def config(case: str) -> RunConfig:
    """A small run of `case`: 40 training and 20 test points, batches of 20."""
    family, dataset, data, model, _ = CASES[case]
    return RunConfig(model=family, data={"dataset": dataset, "subset": 40, "test_subset": 20, **data},
                     model_config=model, train={"batch_size": 20, "eval_every": 0})


@functools.cache
def trained(case: str) -> Trainer:
    """The Trainer of `case` after two steps (an RKHS machine also fitted, so it has a solver trace); shared by the
    tests, which do not change it."""
    trainer = Trainer(config(case))
    list(trainer.run(steps=2))
    if CASES[case][0] == "rkhs":
        trainer.model.fit(max_iter=5)
    return trainer


def diagnostics(trainer: Trainer, only=None, seed: int = 3) -> dict:
    """The model's views as a snapshot asks for them (its diagnostic sample and test subset), drawn after seeding."""
    torch.manual_seed(seed)
    return trainer.model.diagnostics(trainer.report.diagnostic_data(), test=trainer.evaluation.prediction_data(),
                                     only=only)


def assert_same(got, want, where: str) -> None:
    """Equal views, field by field: arrays (also inside dicts, tuples and lists) to rtol 1e-6, the rest exactly."""
    if dataclasses.is_dataclass(want):
        assert type(got) is type(want), where
        for f in dataclasses.fields(want):
            assert_same(getattr(got, f.name), getattr(want, f.name), f"{where}.{f.name}")
    elif isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray) and got.shape == want.shape, where
        np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True, err_msg=where)
    elif isinstance(want, dict):
        assert list(got) == list(want), where
        for key in want:
            assert_same(got[key], want[key], f"{where}[{key!r}]")
    elif isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want), where
        for i, (a, b) in enumerate(zip(got, want)):
            assert_same(a, b, f"{where}[{i}]")
    elif isinstance(want, float) and np.isnan(want):
        assert isinstance(got, float) and np.isnan(got), where
    else:
        assert got == want, where


@pytest.mark.parametrize("case", list(CASES))
def test_each_view_alone_equals_the_same_view_of_a_call_that_computes_all(case):
    trainer = trained(case)
    full = diagnostics(trainer)
    assert CASES[case][4] <= set(full), f"{case} shows {sorted(full)}"
    for name in full:
        alone = diagnostics(trainer, only={name})
        assert list(alone) == [name]
        assert_same(alone[name], full[name], name)
    pair = list(full)[-2:]  # two views together, the first of them drawn after the other in a full call
    assert list(diagnostics(trainer, only=pair)) == pair


def engine_calls(fn) -> set[str]:
    """The names of the engine's Python functions that run while `fn()` runs."""
    root = os.path.dirname(sys.modules["invlab"].__file__)
    called = set()

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(root):
            called.add(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return called


# what `diagnostics` runs whatever is selected: the selection, the random stream, the names of a DKP's layer views
BOOKKEEPING = {"diagnostics", "own_diagnostics", "shared_diagnostics", "wants", "_reference", "_random_state",
               "_set_random_state", "num_layers", "<genexpr>", "<listcomp>", "<dictcomp>",
               "dkp_views", "gwi_views", "rkhs_views"}  # a family's own_diagnostics, in its views module


@pytest.mark.parametrize("case", list(CASES))
def test_an_empty_selection_returns_no_view_and_computes_nothing(case):
    trainer = trained(case)
    data, test, views = trainer.report.diagnostic_data(), trainer.evaluation.prediction_data(), {}
    called = engine_calls(lambda: views.update(trainer.model.diagnostics(data, test=test, only=set())))
    assert views == {}
    assert called <= BOOKKEEPING, f"{case} computed {sorted(called - BOOKKEEPING)} for no view"


def test_the_invariant_table_alone_draws_no_augmentation_samples(monkeypatch):
    trainer = trained("invariant")
    model = trainer.model
    want = diagnostics(trainer)["hyperparameters"]

    def refused(*args, **kwargs):
        raise AssertionError("augmentation samples drawn for a view not asked for")

    monkeypatch.setattr(InvariantSVGP, "augmentation_samples", refused)
    monkeypatch.setattr(model.augmentation, "sample", refused)
    views = diagnostics(trainer, only={"hyperparameters"})
    assert list(views) == ["hyperparameters"]
    assert_same(views["hyperparameters"], want, "hyperparameters")
    assert not any(k.startswith("kernel.augmentation.") for k in views["hyperparameters"].values)
    with pytest.raises(AssertionError, match="not asked for"):
        diagnostics(trainer, only={"augmentation_samples"})
    # the failed call left no selection behind
    assert model.wants("kuu_spectrum") and model._views_wanted is None and model._views_stream is None


def test_diagnostics_leave_the_random_stream_where_they_found_it():
    trainer = trained("diwp-plane")  # its Gram views and its posterior draw from torch's stream
    torch.manual_seed(11)
    before = torch.get_rng_state()
    trainer.model.diagnostics(trainer.report.diagnostic_data(), test=trainer.evaluation.prediction_data())
    assert torch.equal(torch.get_rng_state(), before)


def test_a_string_is_refused_as_a_selection():
    with pytest.raises(TypeError, match="collection of view names"):
        diagnostics(trained("svgp"), only="kuu_spectrum")


def test_a_snapshot_of_one_view_stores_it_and_keeps_the_other_stored_views(tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        trainer = Trainer(config("invariant"), store=store)
        list(trainer.run(steps=2))
        full = trainer.report.snapshot(views=True).views
        store.flush()
        list(trainer.run(steps=2))
        part = trainer.report.snapshot(views=True, only={"kuu_spectrum"}).views
        store.flush()
        stored = store.views.read(trainer.record.run_id).views
    assert list(part) == ["kuu_spectrum"] and len(full) > 1
    assert set(stored) == set(full)
    assert_same(stored["kuu_spectrum"], part["kuu_spectrum"], "kuu_spectrum")
    for name in set(full) - {"kuu_spectrum"}:
        assert_same(stored[name], full[name], name)


class Plain:
    """A model that is no `ModelFamily`: its `diagnostics(data)` gives two views and counts its calls."""

    def __init__(self):
        self.calls = []

    def diagnostics(self, data=None):
        self.calls.append(None)
        return {"a": 1, "b": 2}


class Selective(Plain):
    """The same, with a `diagnostics` that takes `only` (and is handed the selection)."""

    def diagnostics(self, data=None, only=None):
        self.calls.append(only)
        return {k: v for k, v in {"a": 1, "b": 2}.items() if only is None or k in only}


def test_a_model_of_another_kind_gets_the_selection_when_it_takes_one_and_is_filtered_otherwise():
    plain, selective = Plain(), Selective()
    assert views_of(plain, None) == {"a": 1, "b": 2} and views_of(plain, None, only={"b"}) == {"b": 2}
    assert views_of(selective, None, only={"b"}) == {"b": 2} and selective.calls == [{"b"}]
