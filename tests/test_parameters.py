import pytest
import torch

from invlab.errors import ConfigError
from invlab.parameters import Bounded, LogPositive, Positive, Unconstrained, learnables


def test_positive_round_trip_and_floor():
    p = Positive(torch.tensor([0.5, 2.0, 30.0]), floor=1e-6)
    assert torch.allclose(p(), torch.tensor([0.5, 2.0, 30.0], dtype=torch.float64), rtol=1e-12)
    p.raw.data.fill_(-1e4)  # however far the optimiser pushes, the value stays above the floor
    assert (p() >= 1e-6).all()
    with pytest.raises(ConfigError, match="greater than"):
        p.assign(0.0)


def test_log_positive_and_unconstrained_round_trip():
    d = LogPositive(torch.tensor([1e-3, 1.0, 1e4]), name="delta")
    assert torch.allclose(d(), torch.tensor([1e-3, 1.0, 1e4], dtype=torch.float64), rtol=1e-12)
    assert torch.allclose(d.raw, torch.log(d()))  # learned on a log scale
    with pytest.raises(ConfigError, match="delta must be positive"):
        d.assign(0.0)
    w = Unconstrained(torch.tensor([-2.0, 0.0, 3.0]))
    assert torch.equal(w(), w.raw) and torch.equal(w(), torch.tensor([-2.0, 0.0, 3.0], dtype=torch.float64))
    w.assign(-5.0)
    assert (w() == -5.0).all()


def test_bounded_round_trip_and_range():
    b = Bounded(0.3, 0.0, 3.14, name="angle")
    assert abs(float(b()) - 0.3) < 1e-12
    b.assign(3.0)
    assert abs(float(b()) - 3.0) < 1e-9
    with pytest.raises(ConfigError, match="angle must lie strictly inside"):
        b.assign(4.0)


def test_assign_keeps_the_parameter_object_and_freeze_stops_gradients():
    p = Positive(1.0, name="variance")
    raw = p.raw
    p.assign(2.5)
    assert p.raw is raw and abs(float(p()) - 2.5) < 1e-12
    p.frozen = True
    assert not p.raw.requires_grad and p.frozen


def test_learnables_finds_nested_values():
    from invlab.kernels import RBF

    m = torch.nn.Module()
    m.kernel = RBF(2)
    assert set(learnables(m)) == {"kernel.lengthscale", "kernel.variance"}
