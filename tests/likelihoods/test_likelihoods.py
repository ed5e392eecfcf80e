"""Each likelihood's quadrature (or closed form) against plain Monte Carlo with many samples."""
import math

import pytest
import torch

from invlab.errors import ConfigError
from invlab.likelihoods import (
    Bernoulli,
    Gaussian,
    RobustMax,
    Softmax,
    build_likelihood,
    gauss_hermite_expectation,
    prob_is_largest,
)

S = 400_000


def mc_expectation(fn, mean, var, g):
    f = mean + var.sqrt() * torch.randn((S,) + mean.shape, generator=g, dtype=mean.dtype)
    vals = fn(f)  # [S, N]
    return vals.mean(0), vals.std(0) / math.sqrt(S)


def host(t):
    """A result on the test device and dtype, as float64 on the CPU beside the Monte Carlo reference."""
    return t.detach().cpu().double()


def _moments(N, L, g):
    return (torch.randn(N, L, generator=g, dtype=torch.float64),
            0.1 + torch.rand(N, L, generator=g, dtype=torch.float64) * 2)


def test_gauss_hermite_matches_closed_form_moments(place, tol, assert_close):
    mean, var = torch.tensor([0.3, -1.0], dtype=torch.float64), torch.tensor([0.5, 2.0], dtype=torch.float64)
    m2 = gauss_hermite_expectation(lambda f: f ** 2, place(mean), place(var))
    assert_close(m2, mean ** 2 + var, tol.f64(rtol=1e-12))


def test_gaussian_closed_form_vs_monte_carlo(rng, place, tol, assert_close):
    lik = place(Gaussian(0.3))
    mean, var = _moments(6, 1, rng)
    y = torch.randn(6, 1, generator=rng, dtype=torch.float64)
    ref, se = mc_expectation(lambda f: -0.5 * math.log(2 * math.pi * 0.3) - 0.5 * (y[:, 0] - f[..., 0]) ** 2 / 0.3,
                             mean, var, rng)
    got = host(lik.expected_log_prob(place(y), place(mean), place(var)))
    assert ((got - ref).abs() < 4 * se).all()
    # predictive density is exact: N(y; μ, v + σ²)
    lpd = lik.log_predictive_density(place(y), place(mean), place(var))
    ref_lpd = torch.distributions.Normal(mean[:, 0], (var[:, 0] + 0.3).sqrt()).log_prob(y[:, 0])
    assert_close(lpd, ref_lpd, tol.f64(rtol=1e-12))


@pytest.mark.parametrize("link", ["probit", "logit"])
def test_bernoulli_quadrature_vs_monte_carlo(link, rng, place):
    lik = place(Bernoulli(link))
    mean, var = _moments(8, 1, rng)
    y = (torch.rand(8, generator=rng) > 0.5).long()
    sign = (2.0 * y - 1).double()
    logp = (lambda z: torch.special.log_ndtr(z)) if link == "probit" else torch.nn.functional.logsigmoid
    ref, se = mc_expectation(lambda f: logp(sign * f[..., 0]), mean, var, rng)
    assert ((host(lik.expected_log_prob(place(y), place(mean), place(var))) - ref).abs() < 4 * se + 1e-6).all()
    p_ref, p_se = mc_expectation(lambda f: (torch.special.ndtr(f[..., 0]) if link == "probit"
                                            else torch.sigmoid(f[..., 0])),
                                 mean, var, rng)
    assert ((host(lik.predict_probs(place(mean), place(var)))[:, 1] - p_ref).abs() < 4 * p_se + 1e-6).all()


def test_softmax_monte_carlo_is_unbiased(rng, place):
    torch.manual_seed(0)
    lik = place(Softmax(4, num_samples=200_000))
    mean, var = _moments(5, 4, rng)
    y = torch.randint(0, 4, (5,), generator=rng)
    ref, se = mc_expectation(lambda f: torch.log_softmax(f, -1).gather(-1, y.expand(S, 5)[..., None])[..., 0],
                             mean, var, rng)
    assert ((host(lik.expected_log_prob(place(y), place(mean), place(var))) - ref).abs() < 5 * se + 2e-3).all()


def test_robustmax_probability_of_largest_vs_monte_carlo(rng, place, tol, assert_close):
    K, eps = 4, 0.01
    lik = place(RobustMax(K, eps))
    mean, var = _moments(6, K, rng)
    y = torch.randint(0, K, (6,), generator=rng)
    f = mean + var.sqrt() * torch.randn((S, 6, K), generator=rng, dtype=torch.float64)
    hit = (f.argmax(-1) == y).double()  # [S, N]
    S_mc, se = hit.mean(0), hit.std(0) / math.sqrt(S)
    logw = hit * math.log(1 - eps) + (1 - hit) * math.log(eps / (K - 1))
    got = host(lik.expected_log_prob(place(y), place(mean), place(var)))
    assert ((got - logw.mean(0)).abs() < 4 * logw.std(0) / math.sqrt(S) + 1e-6).all()
    S_q = host(prob_is_largest(place(mean), place(var))).gather(1, y[:, None])[:, 0]
    assert ((S_q - S_mc).abs() < 4 * se + 1e-4).all()
    probs = host(lik.predict_probs(place(mean), place(var)))
    assert_close(probs.sum(-1), torch.ones(6, dtype=torch.float64), tol.f64(atol=1e-12))
    assert ((probs.gather(1, y[:, None])[:, 0] - (eps / (K - 1) + (1 - eps - eps / (K - 1)) * S_mc)).abs()
            < 4 * se + 1e-3).all()


def test_robustmax_scales_nodes_by_standard_deviation(place, tol):
    """With a large variance, scaling nodes by var instead of std would give a visibly wrong answer."""
    mean = place(torch.tensor([[0.0, 0.0]], dtype=torch.float64))
    var = place(torch.tensor([[9.0, 1e-8]], dtype=torch.float64))  # P(f_0 > ~0) = 1/2 exactly
    S0 = place(RobustMax(2, 1e-3)).predict_probs(mean, var)[0, 0]
    assert abs(float((S0 - 1e-3) / (1 - 2e-3)) - 0.5) < tol.f64(atol=1e-6).atol


def test_gaussian_one_hot_classification_probabilities_sum_to_one(rng, place, tol, assert_close):
    lik = place(Gaussian(0.1, num_classes=3))
    mean, var = _moments(4, 3, rng)
    assert lik.encode(place(torch.tensor([0, 2]))).tolist() == [[1, 0, 0], [0, 0, 1]]
    probs = lik.predict_probs(place(mean), place(var))
    assert_close(probs.sum(-1), torch.ones(4, dtype=torch.float64), tol.f64(atol=1e-6))


def test_build_likelihood_errors_say_what_to_use():
    with pytest.raises(ConfigError, match="bernoulli.*2 classes"):
        build_likelihood("bernoulli", "classification", 10)
    with pytest.raises(ConfigError, match="regression"):
        build_likelihood("softmax", "regression", None)
    assert isinstance(build_likelihood("auto", "classification", 2), Bernoulli)
    assert isinstance(build_likelihood("auto", "classification", 10), RobustMax)
