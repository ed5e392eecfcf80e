"""The Pólya-Gamma logistic bound: never above log σ(yf), tight at c = |f|, with E[ω] and the KL checked against
samples drawn from the Pólya-Gamma series representation (Polson et al. 2013, eq. 1)."""
import math

import torch
from torch.nn import functional as F

from invlab.likelihoods.polya_gamma import PolyaGammaLogistic, RecognitionNetwork, pg_bound, pg_kl, pg_mean
from invlab.likelihoods.quadrature import gauss_hermite_expectation

DT = torch.float64


def pg_samples(c: float, n: int, terms: int = 400, seed: int = 0) -> torch.Tensor:
    """ω ~ PG(1, c) = (1/2π²) Σ_k g_k / ((k − ½)² + c²/4π²), g_k ~ Exp(1); the truncated tail adds its mean."""
    g = torch.Generator().manual_seed(seed)
    k = torch.arange(1, terms + 1, dtype=DT)
    denom = (k - 0.5) ** 2 + c ** 2 / (4 * math.pi ** 2)
    draws = torch.empty(n, terms, dtype=DT).exponential_(generator=g)
    tail = 1.0 / (2 * math.pi ** 2 * terms)  # Σ_{k > K} 1/(k − ½)² ≈ 1/K
    return (draws / denom).sum(1) / (2 * math.pi ** 2) + tail


def test_bound_is_below_log_sigmoid_and_tight_at_c_equal_abs_f(place, tol, assert_close):
    g = torch.Generator().manual_seed(0)
    f = 4 * torch.randn(5000, generator=g, dtype=DT)
    sign = torch.where(torch.rand(5000, generator=g, dtype=DT) < 0.5, -1.0, 1.0).to(DT)
    c = 5 * torch.rand(5000, generator=g, dtype=DT)
    f, sign, c = place(f), place(sign), place(c)
    exact = F.logsigmoid(sign * f)
    assert (pg_bound(sign, f, c) <= exact + tol.f64(atol=1e-12).atol).all()
    assert_close(pg_bound(sign, f, f.abs()), exact, tol.f64(atol=1e-10))


def test_mean_and_kl_match_samples(place):
    for c in (0.0, 0.7, 3.0):
        w = pg_samples(c, 20000, seed=int(10 * c))
        ct = place(torch.tensor(c, dtype=DT))
        assert abs(float(w.mean() - pg_mean(ct))) < 4 * float(w.std()) / math.sqrt(len(w))
        # KL(PG(1, c) ‖ PG(1, 0)) = E_q[log q/p] with q/p = cosh(c/2) exp(−c²ω/2)
        kl_mc = math.log(math.cosh(c / 2)) - c ** 2 / 2 * w.mean()
        assert abs(float(pg_kl(ct) - kl_mc)) < 4 * c ** 2 / 2 * float(w.std()) / math.sqrt(len(w)) + 1e-12
    # the density ratio used above is normalised: E_{PG(1,0)}[exp(−ω t²/2)] = 1 / cosh(t/2)
    w0 = pg_samples(0.0, 20000, seed=5)
    for t in (0.5, 2.0):
        assert abs(float(torch.exp(-w0 * t ** 2 / 2).mean()) - 1 / math.cosh(t / 2)) < 0.005


def test_kl_is_nonnegative_and_mean_is_smooth_at_zero(place, tol):
    c = place(torch.linspace(0, 20, 201, dtype=DT)).requires_grad_()
    kl = pg_kl(c)
    assert (kl >= -1e-12).all() and float(kl[0]) == 0.0
    assert abs(float(pg_mean(place(torch.tensor(0.0, dtype=DT)))) - 0.25) < tol.f64(atol=1e-15).atol
    (pg_mean(c).sum() + kl.sum()).backward()
    assert torch.isfinite(c.grad).all()


def test_expected_bound_is_below_the_expected_log_likelihood(place, tol):
    """Under q(f) = N(μ, σ²), for the optimal c and for a recognition network's c alike."""
    g = torch.Generator().manual_seed(1)
    N = 200
    mean = 3 * torch.randn(N, 1, generator=g, dtype=DT)
    var = 2 * torch.rand(N, 1, generator=g, dtype=DT)
    y = (torch.rand(N, generator=g) < 0.5).long()
    sign = (2.0 * y - 1.0).to(DT).reshape(-1, 1, 1)
    exact = gauss_hermite_expectation(lambda f: F.logsigmoid(sign * f), mean, var, 60).sum(-1)  # [N], float64
    slack = tol.f64(rtol=0, atol=1e-9)  # the bound may touch the exact value (c = |f|): rounding on both sides
    mean, var, y = place(mean), place(var), place(y)
    lik = place(PolyaGammaLogistic(input_dim=4, hidden=8))
    assert (lik.expected_log_prob(y, mean, var).cpu().double() <= exact + slack.atol + slack.rtol * exact.abs()).all()
    X = place(torch.randn(N, 4, generator=g, dtype=DT))
    with torch.no_grad():
        amortised = lik.expected_log_prob_moments(y, mean, mean ** 2, var, X)
    assert (amortised.cpu().double() <= exact + slack.atol + slack.rtol * exact.abs()).all()
    assert amortised.shape == (N,)


def test_recognition_network_is_positive_and_follows_dtype(device):
    net = RecognitionNetwork(6, 4).to(device=device, dtype=torch.float32)
    c = net(torch.randn(5, 1, 2, 3, device=device), torch.ones(5, device=device))
    assert c.shape == (5, 1) and c.dtype == torch.float32 and c.device.type == device.type and (c > 0).all()
