"""The likelihood registry: the built-ins come through the same `invlab.likelihoods.register` a plugin uses, and
the README's own likelihood (a Student-t, its snippet run as written) becomes a choice of every family that takes
a likelihood, its own argument a setting, its expectations right against brute-force computations, and it trains.
Every registration here is rolled back afterwards (`invlab.registry.snapshot`)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import invlab.likelihoods as likelihoods
from invlab.errors import ConfigError
from invlab.likelihoods import Bernoulli, Gaussian, RobustMax, Softmax, build_likelihood
from invlab.models.convolutional import ConvolutionalConfig
from invlab.models.dkp.config import DIWPConfig
from invlab.models.invariant import InvariantConfig
from invlab.models.svgp import SVGPConfig
from invlab.registry import snapshot
from tests.helpers.plugins import readme_blocks


@pytest.fixture
def student_t():
    """The README's likelihood snippet run as written; (its class), everything it registered undone after."""
    saved = snapshot()
    block = next(b for b in readme_blocks("python") if "likelihoods.register" in b)
    space: dict = {}
    exec(compile(block, "README.md", "exec"), space)  # noqa: S102 — the README's own code
    try:
        yield space["StudentT"]
    finally:
        saved.restore()


def test_the_built_ins_are_registered_parts_with_their_tasks():
    parts = likelihoods.REGISTRY.parts
    assert list(parts)[:4] == ["gaussian", "bernoulli", "softmax", "robustmax"]
    assert all(parts[name].builtin and parts[name].origin == "built-in" for name in list(parts)[:4])
    assert parts["gaussian"].info == {"tasks": ("regression", "classification"), "two_class": False,
                                      "suits": ("regression",)}
    assert parts["bernoulli"].info == {"tasks": ("classification",), "two_class": True, "suits": ("two_class",)}
    assert isinstance(build_likelihood("gaussian", "regression", None, noise_variance=0.3), Gaussian)
    assert isinstance(build_likelihood("auto", "classification", 2), Bernoulli)
    softmax = build_likelihood("softmax", "classification", 4, num_samples=3)  # a DKP's own samples: not its
    assert isinstance(softmax, Softmax) and softmax.num_samples == 16
    robust = build_likelihood("robustmax", "classification", 3, epsilon=0.01, noise_variance=9.0)  # extra: ignored
    assert isinstance(robust, RobustMax)
    assert float(build_likelihood("gaussian", "regression", None, noise_variance=0.3).variance()) == pytest.approx(0.3)


def test_a_registered_likelihood_is_a_choice_with_its_own_setting_and_rolls_back(student_t):
    for config in (SVGPConfig, ConvolutionalConfig, DIWPConfig):
        assert "student_t" in config.param.likelihood.objects
        assert config.param.dof.default == 4.0  # its own argument, a setting of every family that takes one
    assert "student_t" in InvariantConfig.param.likelihood.objects  # the invariant family takes any registered one
    part = likelihoods.REGISTRY.parts["student_t"]
    assert not part.builtin and part.info["tasks"] == ("regression",)
    # the README's likelihood declares no target it suits: auto never picks it, a config names it
    assert likelihoods.resolve_likelihood("auto", "regression", None) == "gaussian"
    with pytest.raises(ConfigError, match="'student_t' is for regression; this dataset is a classification task"):
        likelihoods.resolve_likelihood("student_t", "classification", 3)
    with pytest.raises(ConfigError, match="likelihood name 'student_t' is taken"):
        likelihoods.register("student_t", tasks=("regression",))(lambda task, num_classes: None)
    with pytest.raises(ConfigError, match="tasks must be some of regression, classification"):
        likelihoods.register("other", tasks=("ranking",))


def test_a_registration_rolled_back_leaves_no_choice_or_setting():
    saved = snapshot()
    block = next(b for b in readme_blocks("python") if "likelihoods.register" in b)
    exec(compile(block, "README.md", "exec"), {})  # noqa: S102
    assert "student_t" in SVGPConfig.param.likelihood.objects
    saved.restore()
    assert "student_t" not in SVGPConfig.param.likelihood.objects and "dof" not in SVGPConfig.param
    assert "student_t" not in likelihoods.REGISTRY.parts


def _t_log_density(y, f, nu, s2):
    """log Student-t(y; f, s2, nu) written out independently of the README's code (numpy, float64)."""
    return (math.lgamma((nu + 1) / 2) - math.lgamma(nu / 2) - 0.5 * np.log(math.pi * nu * s2)
            - (nu + 1) / 2 * np.log1p((y - f) ** 2 / (nu * s2)))


def test_the_readme_likelihoods_expectations_match_monte_carlo_and_a_fine_grid(student_t):
    lik = student_t("regression", None, noise_variance=0.2, dof=3.0).double()
    y = torch.tensor([[0.3], [-1.2], [2.5]], dtype=torch.float64)
    mean = torch.tensor([[0.0], [-1.0], [0.5]], dtype=torch.float64)
    var = torch.tensor([[0.5], [0.05], [1.5]], dtype=torch.float64)
    with torch.no_grad():
        ell = lik.expected_log_prob(lik.encode(y[:, 0]), mean, var).numpy()
        lpd = lik.log_predictive_density(y[:, 0], mean, var).numpy()
        mean_y, var_y = lik.predict_mean_and_var(mean, var)
    rng = np.random.default_rng(0)
    for i in range(3):
        m, v, yi = float(mean[i, 0]), float(var[i, 0]), float(y[i, 0])
        f = m + math.sqrt(v) * rng.standard_normal(2_000_000)
        mc = _t_log_density(yi, f, 3.0, 0.2)
        assert ell[i] == pytest.approx(mc.mean(), abs=4 * mc.std() / math.sqrt(f.size) + 1e-4)
        grid = np.linspace(m - 12 * math.sqrt(v), m + 12 * math.sqrt(v), 400_001)
        normal = np.exp(-0.5 * (grid - m) ** 2 / v) / math.sqrt(2 * math.pi * v)
        density = np.trapezoid(np.exp(_t_log_density(yi, grid, 3.0, 0.2)) * normal, grid)
        assert lpd[i] == pytest.approx(math.log(density), abs=2e-3)
    assert torch.allclose(var_y, var + 0.2 * 3.0 / (3.0 - 2.0))


def test_the_readme_likelihood_trains_svgp_on_diabetes_with_its_own_setting(student_t):
    from invlab import RunConfig, Trainer

    config = RunConfig(model="svgp", data={"dataset": "diabetes"},
                       model_config={"likelihood": "student_t", "dof": 3.0, "num_inducing": 20},
                       train={"steps": 60, "eval_every": 0})
    trainer = Trainer(config)
    elbos = [snap.parts["elbo"] for snap in trainer.run(every=20)]
    assert isinstance(trainer.model.likelihood, student_t) and trainer.model.likelihood.dof == 3.0
    assert trainer.config.model_params().dof == 3.0 and trainer.config.model_config["dof"] == 3.0
    assert all(math.isfinite(e) for e in elbos) and elbos[-1] > elbos[0]
    metrics = trainer.report.evaluate()
    assert math.isfinite(metrics["test_nlpd"]) and metrics["test_rmse"] < 80  # diabetes targets: sd about 77
