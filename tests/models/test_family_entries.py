"""Everything about a model family lives in its registry entry (`ModelSpec`): its words, its page defaults, the
labels and units of the parts of its loss and of its learned ranges, its memory estimate. A family a test registers
(as a plugin would) declares them in its entry alone, and the engine's look-ups find them; a likelihood declares the
targets `auto` may pick it for; the invariant family takes any registered likelihood suited to the task. Every
registration here is rolled back afterwards (`invlab.registry.snapshot`)."""
from __future__ import annotations

import pytest
import torch

import invlab.likelihoods as likelihoods
from invlab.likelihoods.gaussian import Gaussian
from invlab.models import REGISTRY, get_model, register
from invlab.models.base import DataInfo
from invlab.models.invariant import InvariantConfig, build_invariant
from invlab.models.registry import ModelSpec, metric_words, range_words
from invlab.models.svgp import SVGP, SVGPConfig, build_svgp
from invlab.models.words import FamilyWords, MetricWords, RangeWords
from invlab.registry import snapshot


class WiggleSVGP(SVGP):
    """The SVGP with one more logged part (`wiggle`) and one learned range (`range.twist`)."""

    def loss(self, batch):
        """The SVGP's −ELBO with `wiggle` and `range.twist` among its parts."""
        terms = super().loss(batch)
        terms.parts["wiggle"] = torch.zeros(())
        terms.parts["range.twist"] = torch.full((), 7.0)
        return terms


def build_wiggle(config, X, y, info, *, generator=None):
    """A `WiggleSVGP` built as the SVGP is."""
    model = build_svgp(config, X, y, info, generator=generator)
    model.__class__ = WiggleSVGP
    return model


WIGGLE = ModelSpec("wiggle-gp", SVGPConfig, build_wiggle, "a test family",
                   words=FamilyWords("wiggly GP", "a GP that logs how much it wiggles", "Nobody (2099), “Wiggles”"),
                   page={"data": {"dataset": "two-moons"}, "model": {"num_inducing": 12},
                         "train": {"batch_size": 32, "eval_size": 50}},
                   metrics={"wiggle": MetricWords("wiggle room (nats)", "Wiggle room", curve=True)},
                   ranges={"twist": RangeWords("twist angle", "°")},
                   memory=lambda model_config, sizes: 123)


@pytest.fixture
def wiggle():
    """The test family registered, everything it registered undone after."""
    saved = snapshot()
    register(WIGGLE)
    try:
        yield WIGGLE
    finally:
        saved.restore()


def test_a_family_entry_holds_its_words_defaults_labels_ranges_and_memory(wiggle):
    spec = get_model("wiggle-gp")
    assert spec.words.label == "wiggly GP" and spec.page["data"]["dataset"] == "two-moons"
    assert metric_words("wiggle").label == "wiggle room (nats)"
    assert range_words("twist") == RangeWords("twist angle", "°")
    assert spec.memory({}, None) == 123


def test_the_built_in_families_declare_their_words_and_page_defaults():
    for name, spec in REGISTRY.items():
        assert spec.words is not None and spec.words.label and spec.words.paper, name
        assert spec.page.get("data", {}).get("dataset"), name
    assert get_model("gwi").metrics["w2"].curve is False
    assert get_model("rkhs").metrics["objective"].title == "Objective (eq. 4)"
    assert metric_words("kl").label == "KL(q ‖ p) (nats)"
    assert range_words("rotation") == RangeWords("rotation", "°")
    assert range_words("strength").unit == "px"


def test_a_registered_likelihood_that_suits_a_target_is_picked_by_auto():
    saved = snapshot()
    try:
        @likelihoods.register("plugin_multi", tasks=("classification",), suits=("multi_class",))
        def plugin_multi(task, num_classes):
            """A stand-in classification likelihood (built as the Gaussian on one-hot targets)."""
            return Gaussian(0.1, num_classes)

        assert likelihoods.resolve_likelihood("auto", "classification", 10) == "plugin_multi"
        assert likelihoods.resolve_likelihood("auto", "classification", 2) == "bernoulli"  # it does not suit two
        assert likelihoods.resolve_likelihood("auto", "regression", None) == "gaussian"
    finally:
        saved.restore()
    assert likelihoods.resolve_likelihood("auto", "classification", 10) == "robustmax"


def test_the_invariant_family_takes_any_registered_likelihood_suited_to_the_task():
    saved = snapshot()
    try:
        @likelihoods.register("plugin_reg", tasks=("regression",))
        def plugin_reg(task, num_classes, plugin_noise: float = 0.3):
            """A stand-in regression likelihood (the Gaussian with its own starting noise)."""
            return Gaussian(plugin_noise)

        assert "plugin_reg" in InvariantConfig.param.likelihood.objects
        assert "robustmax" in InvariantConfig.param.likelihood.objects
        X = torch.randn(30, 2, dtype=torch.float64)
        y = X.sum(1)
        config = InvariantConfig(likelihood="plugin_reg", num_inducing=5, augmentation="permutations")
        model = build_invariant(config, X, y, DataInfo(task="regression", num_classes=None, input_shape=(2,)))
        assert isinstance(model.likelihood, Gaussian)
        assert float(model.likelihood.variance()) == pytest.approx(0.3)
        labels = torch.randint(0, 3, (30,))
        config = InvariantConfig(likelihood="robustmax", num_inducing=5, augmentation="permutations")
        model = build_invariant(config, X, labels, DataInfo(task="classification", num_classes=3, input_shape=(2,)))
        loss = model.loss((X, labels))
        assert torch.isfinite(loss.loss)
        assert model.q.num_latent == 3
    finally:
        saved.restore()
    assert "plugin_reg" not in InvariantConfig.param.likelihood.objects
