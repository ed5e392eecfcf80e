"""Calibration of class probabilities on a synthetic 3-class set whose true probabilities are known (a softmax of
smooth functions of x): the trained model's NLPD approaches the Bayes rate, its probabilities sum to one, and the
engine's expected calibration error matches an independent numpy computation."""
import numpy as np
import pytest
import torch

from invlab.likelihoods.calibration import expected_calibration_error, nlpd
from invlab.models import DataInfo, SVGPConfig
from invlab.models.svgp import build_svgp


def numpy_ece(p, y, bins=15):
    conf, pred = p.max(1), p.argmax(1)
    total = 0.0
    for b in range(bins):
        inside = (conf > b / bins) & (conf <= (b + 1) / bins)
        if b == 0:
            inside |= conf == 0
        if inside.any():
            total += inside.mean() * abs((pred[inside] == y[inside]).mean() - conf[inside].mean())
    return total


def synthetic(n, g):
    X = torch.rand(n, 1, generator=g, dtype=torch.float64) * 6 - 3
    logits = 1.5 * torch.cat([2 * torch.sin(X), 2 * torch.cos(X), 0.5 * X], 1)
    p = torch.softmax(logits, 1)  # [n, 3]: the true class probabilities
    return X, torch.multinomial(p, 1, generator=g)[:, 0], p


def test_ece_matches_numpy():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(4) * 0.5, 500)
    y = rng.integers(0, 4, 500)
    assert abs(expected_calibration_error(torch.tensor(p), torch.tensor(y)) - numpy_ece(p, y)) < 1e-12
    assert abs(nlpd(torch.tensor(p), torch.tensor(y)) + np.log(p[np.arange(500), y]).mean()) < 1e-12


@pytest.mark.float64_only("a training run compared with the Bayes rate to 0.1 nats")
def test_one_hot_gaussian_probabilities_approach_the_bayes_rate():
    """29 % Bayes error: class probabilities from the latent variance alone gave NLPD 56 here (P(f_k largest) → 0/1
    as q(f) concentrates on the class frequencies); the predicted targets' probabilities are calibrated."""
    g = torch.Generator().manual_seed(0)
    X, y, _ = synthetic(600, g)
    Xt, yt, pt = synthetic(3000, g)
    model = build_svgp(SVGPConfig(num_inducing=20, likelihood="gaussian"), X, y, DataInfo("classification", 3),
                       generator=g)
    opt = torch.optim.Adam(model.parameters(), lr=0.03)
    for _ in range(400):
        opt.zero_grad()
        model.loss((X, y)).loss.backward()
        opt.step()
    with torch.no_grad():
        P = model.predict(Xt).probs
    assert float((P.sum(1) - 1).abs().max()) < 1e-6
    bayes = nlpd(pt, yt)  # 0.655
    assert nlpd(P, yt) < bayes + 0.1
    ece = expected_calibration_error(P, yt)
    assert abs(ece - numpy_ece(P.numpy(), yt.numpy())) < 1e-12
    assert ece < expected_calibration_error(pt, yt) + 0.04  # the true probabilities' own ECE on 3,000 draws: 0.025
