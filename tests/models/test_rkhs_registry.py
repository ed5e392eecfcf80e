"""The RKHS family's losses and kinds of invariance functional come through one registry door each
(`invlab.models.rkhs.register_data_loss`, `register_invariance_loss`, `register_functionals`), as a plugin's do:
a registered part becomes a choice of `RKHSConfig`, its own arguments become settings, and the solver uses it,
checked against closed forms (kernel ridge regression) and against the built-ins it is equivalent to.

Every registration here is rolled back afterwards (`invlab.registry.snapshot`)."""
import pytest
import torch

from invlab.errors import ConfigError
from invlab.models.base import DataInfo
from invlab.models.rkhs import (
    DirectionalDerivative,
    RKHSConfig,
    build_rkhs,
    data_loss_names,
    register_data_loss,
    register_functionals,
    register_invariance_loss,
)
from invlab.registry import snapshot


@pytest.fixture
def registered():
    saved = snapshot()

    @register_data_loss("weighted_squared", tasks=("regression",))
    def weighted_squared(values, targets, labels, eps, h, weight: float = 1.0):
        return 0.5 * weight * ((values - targets) ** 2).sum(1)

    @register_invariance_loss("scaled_squared")
    def scaled_squared(values, eps, h, strength: float = 1.0):
        return 0.5 * strength * (values**2).sum(1)

    @register_functionals("first_axis")
    def first_axis(points, image_shape, sigma, transformations, tangent_method, blur, average_width):
        direction = torch.zeros_like(points)
        direction[:, 0] = 1.0
        return [DirectionalDerivative(points, direction)], None

    yield
    saved.restore()


def _regression(n=40, d=1, seed=3):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=g, dtype=torch.float64) * 4 - 2
    y = torch.sin(2 * X[:, -1]) + (X[:, 0] if d > 1 else 0) + 0.1 * torch.randn(n, generator=g, dtype=torch.float64)
    return X, y, g


def test_registered_parts_are_choices_with_their_own_settings(registered):
    assert "weighted_squared" in RKHSConfig.param.loss.objects and "weight" in RKHSConfig.param
    assert "scaled_squared" in RKHSConfig.param.invariance_loss.objects and "strength" in RKHSConfig.param
    assert "first_axis" in RKHSConfig.param.functionals.objects
    assert "weighted_squared" in data_loss_names("regression")
    assert "weighted_squared" not in data_loss_names("classification")


def test_a_registered_data_loss_and_its_option_reach_the_solver(registered, place, tol, assert_close):
    """w/2 (f − y)² with λ: the minimiser of ½‖f‖² + λ w/2 Σ (f − y)², kernel ridge regression with ridge 1/(λw)."""
    X, y, g = _regression()
    cfg = RKHSConfig(sigma=0.6, labelled=0, functionals="none", bias=False, lam=2.0, loss="weighted_squared",
                     weight=2.5)
    model = place(build_rkhs(cfg, X, y, DataInfo("regression"), generator=g))
    assert model.loss_options == {"weight": 2.5}
    model.fit()
    K = torch.exp(-0.5 * torch.cdist(X, X) ** 2 / 0.36)
    beta = torch.linalg.solve(K + torch.eye(40, dtype=torch.float64) / 5.0, y)
    Xs = torch.linspace(-2, 2, 50, dtype=torch.float64)[:, None]
    Ks = torch.exp(-0.5 * torch.cdist(Xs, X) ** 2 / 0.36)
    # float32: L-BFGS stops where the objective's rounding hides further progress, a few × the default away
    assert_close(model.predict(place(Xs)).y_mean[:, 0], Ks @ beta, tol.f64(atol=1e-6, f32=5))


def test_a_data_loss_for_regression_is_refused_for_classification(registered):
    X, _, g = _regression()
    labels = (X[:, 0] > 0).long()
    cfg = RKHSConfig(labelled=0, functionals="none", loss="weighted_squared")
    with pytest.raises(ConfigError, match="does not suit classification; choose one of logistic"):
        build_rkhs(cfg, X, labels, DataInfo("classification", 2), generator=g)


def test_a_registered_invariance_loss_and_functional_solve_as_their_built_in_equivalents(registered, place, tol,
                                                                                         assert_close):
    """ν · s/2 Σ v² on the derivative along x₀ is the built-in squared loss with weight ν·s on the same functional;
    and with a large weight the fit changes along x₀ by under a third of what it does without (y = sin 2x₁ + x₀
    changes by 2 across x₀ ∈ [−1, 1])."""
    X, y, g = _regression(n=60, d=2)
    common = dict(sigma=0.8, labelled=0, bias=False, semi_supervised=False, functionals="first_axis", loss="squared")
    plugin = place(build_rkhs(RKHSConfig(nu=0.1, invariance_loss="scaled_squared", strength=100.0, **common), X, y,
                              DataInfo("regression"), generator=torch.Generator().manual_seed(0)))
    builtin = place(build_rkhs(RKHSConfig(nu=10.0, invariance_loss="squared", **common), X, y, DataInfo("regression"),
                               generator=torch.Generator().manual_seed(0)))
    plain = place(build_rkhs(RKHSConfig(nu=0.0, **common), X, y, DataInfo("regression"),
                             generator=torch.Generator().manual_seed(0)))
    for model in (plugin, builtin, plain):
        model.fit(max_iter=500)
    grid = torch.linspace(-1.5, 1.5, 7, dtype=torch.float64)
    left = torch.stack([torch.full_like(grid, -1.0), grid], 1)
    right = torch.stack([torch.full_like(grid, 1.0), grid], 1)
    assert_close(plugin.predict(place(left)).y_mean, builtin.predict(place(left)).y_mean, tol.f64(atol=1e-5, f32=50))
    change = lambda m: (m.predict(place(right)).y_mean - m.predict(place(left)).y_mean).abs().mean()  # noqa: E731
    assert float(change(plain)) > 1.0  # the data's own slope along x₀
    assert float(change(plugin)) < 0.35 * float(change(plain)), (float(change(plugin)), float(change(plain)))
