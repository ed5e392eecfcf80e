"""A range around the identity, θ ~ U[−a, b] with a, b ≥ 0 learned: every sample lies in it, the identity (0) is
always inside whatever the optimiser or a slider does, the bound's gradient reaches both ends (reparameterised),
and the ranges are reported like any two-sided range. `all_affine(around_identity=True)` builds the affine
augmentation from them (the configuration Discover trains)."""
import pytest
import torch

from invlab.errors import ConfigError
from invlab.parameters import learnables
from invlab.transforms import IdentityRange, all_affine, build_augmentation
from invlab.transforms.base import range_summary

DT = torch.float64


def test_samples_lie_in_the_range_and_the_identity_is_inside():
    r = IdentityRange(0.3, 1.2, 2.0, name="shear")
    eps = torch.rand(5000, dtype=DT, generator=torch.Generator().manual_seed(0))
    theta = r(eps)
    lo, hi = r.bounds()
    assert float(lo) == pytest.approx(-0.3) and float(hi) == pytest.approx(1.2)
    assert float(theta.min()) >= -0.3 - 1e-12 and float(theta.max()) <= 1.2 + 1e-12
    assert float(theta.min()) < -0.29 and float(theta.max()) > 1.19  # spread over the whole range
    # θ = −a + (a + b)·ε: the ends of the noise give the ends of the range
    assert float(r(torch.tensor([0.0, 1.0], dtype=DT))[0]) == pytest.approx(-0.3)
    assert float(r(torch.tensor([0.0, 1.0], dtype=DT))[1]) == pytest.approx(1.2)


@pytest.mark.parametrize("raw", [-60.0, -3.0, 0.0, 3.0, 60.0])
def test_the_identity_stays_inside_whatever_the_raw_values(raw):
    """The optimiser moves the unconstrained values anywhere; the range still holds 0."""
    r = IdentityRange(0.1, 0.1, 1.0, name="scale_x")
    with torch.no_grad():
        r.below.raw.fill_(raw)
        r.above.raw.fill_(-raw)
    lo, hi = r.bounds()
    assert float(lo) <= 0.0 <= float(hi)
    theta = r(torch.rand(200, dtype=DT, generator=torch.Generator().manual_seed(1)))
    assert float(theta.min()) >= float(lo) - 1e-12 and float(theta.max()) <= float(hi) + 1e-12


def test_setting_an_end_outside_zero_to_limit_is_refused():
    r = IdentityRange(0.1, 0.1, 1.0, name="shear")
    with pytest.raises(ConfigError, match="shear.below"):
        r.below.assign(-0.2)  # "below the identity" is a width, never a position past it
    with pytest.raises(ConfigError, match="shear.above"):
        r.above.assign(1.5)
    r.above.assign(0.4)
    with pytest.raises(ConfigError, match="width"):
        IdentityRange(-0.1, 0.2, 1.0, name="shear")
    assert float(r.bounds()[1]) == pytest.approx(0.4)


def test_gradients_reach_both_ends():
    r = IdentityRange(1.0, 2.0, 5.0, name="rotation")
    eps = torch.tensor([0.25], dtype=DT)
    r(eps).sum().backward()
    # θ = −a + (a + b)ε: ∂θ/∂a = ε − 1, ∂θ/∂b = ε
    da = r.below.raw.grad / torch.autograd.functional.jacobian(r.below.transform, r.below.raw.detach())
    db = r.above.raw.grad / torch.autograd.functional.jacobian(r.above.transform, r.above.raw.detach())
    assert float(da) == pytest.approx(-0.75) and float(db) == pytest.approx(0.25)


def test_range_summary_reports_lo_and_hi():
    out = range_summary({"shear": IdentityRange(0.2, 0.5, 1.0, name="shear")})
    assert set(out) == {"shear.lo", "shear.hi"}
    assert float(out["shear.lo"]) == pytest.approx(-0.2) and float(out["shear.hi"]) == pytest.approx(0.5)


def test_all_affine_around_the_identity():
    aug = all_affine(10.0, 0.1, around_identity=True)
    assert all(isinstance(r, IdentityRange) for r in aug.ranges.values())
    names = set(learnables(aug))
    assert "ranges.shear.below" in names and "ranges.shear.above" in names and len(names) == 12
    values = aug.range_values()
    assert float(values["rotation.lo"]) == pytest.approx(-10.0) and float(values["shear.hi"]) == pytest.approx(0.1)
    X = torch.rand(2, 1, 10, 10, dtype=DT, generator=torch.Generator().manual_seed(0))
    g = torch.Generator().manual_seed(0)
    weights = torch.randn(1, 1, 1, 10, 10, generator=g, dtype=DT)
    (aug.sample(X, 4, g) * weights).sum().backward()
    for name, value in learnables(aug).items():
        assert value.raw.grad is not None and value.raw.grad.abs() > 0, name
    # a zero initial range starts just off the identity (an end of (0, limit) cannot be 0 itself) and can grow
    tiny = all_affine(0.0, 0.0, around_identity=True).range_values()
    assert 0 < float(tiny["rotation.hi"]) < 0.5 and 0 < float(tiny["translate_x.hi"]) < 1e-3
    # the registered part takes the option by name
    built = build_augmentation("affine", (1, 10, 10), rotation=5.0, affine=0.02, around_identity=True)
    assert isinstance(built.ranges["scale_x"], IdentityRange)
    assert not isinstance(build_augmentation("affine", (1, 10, 10)).ranges["scale_x"], IdentityRange)
