"""The RKHS solver's two ways of running L-BFGS reach the same minimum; targets are ±1 one-vs-rest columns."""
import torch

from invlab.data import load
from invlab.models import DataInfo
from invlab.models.rkhs import RKHSConfig, build_rkhs, encode_targets


def test_recorded_and_plain_lbfgs_reach_the_same_minimum():
    d = load("two-moons", seed=0, num_train=60, num_test=10)
    X, y = torch.as_tensor(d.X_train), torch.as_tensor(d.y_train)
    cfg = RKHSConfig(sigma=0.5, labelled=12, max_unlabelled=30, nu=0.5)
    recorded, plain = (build_rkhs(cfg, X, y, DataInfo("classification", 2), generator=torch.Generator().manual_seed(0))
                       for _ in range(2))
    trace = recorded.fit(max_iter=300)
    assert plain.fit(max_iter=300, record=False) == [] and plain.trace == []
    assert trace is recorded.trace and trace[-1]["objective"] <= trace[0]["objective"]
    assert abs(plain.objective() - recorded.objective()) <= 1e-6 * abs(recorded.objective())


def test_targets_of_each_task():
    y = torch.tensor([0, 2, 1])
    labels, targets = encode_targets(y, "classification", 3, torch.float64)
    assert labels.tolist() == [0, 2, 1] and targets.tolist() == [[1, -1, -1], [-1, -1, 1], [-1, 1, -1]]
    labels, targets = encode_targets(torch.tensor([0, 1]), "classification", 2, torch.float64)
    assert targets.tolist() == [[-1.0], [1.0]]
    labels, targets = encode_targets(torch.tensor([0.5, -2.0]), "regression", None, torch.float64)
    assert labels.tolist() == [0, 0] and targets.tolist() == [[0.5], [-2.0]]
