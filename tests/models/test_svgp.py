"""SVGP against independent computations: the exact GP, torch.distributions KLs, whitening equivalence."""
import math

import pytest
import torch
from torch.distributions import MultivariateNormal, kl_divergence

from invlab.covariances import Kuu
from invlab.errors import NumericalError
from invlab.inducing import InducingPoints
from invlab.kernels import RBF
from invlab.likelihoods import Gaussian, RobustMax
from invlab.linalg import robust_cholesky
from invlab.models import SVGP, DataInfo, SVGPConfig
from invlab.models.svgp import build_svgp
from tests.helpers.spectra import assert_spectrum_of
from tests.helpers.titsias import optimal_q

N, D = 25, 2


def problem(place, seed=0, whiten=True, num_latent=1, Z=None):
    """The model on the test device and dtype; X, y stay float64 on the CPU for the references (place them to call
    the model)."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(N, D, generator=g, dtype=torch.float64) * 1.5
    y = torch.sin(X[:, 0]) + 0.3 * torch.randn(N, generator=g, dtype=torch.float64)
    kernel = RBF(D, lengthscale=0.8, variance=1.2)
    model = place(SVGP(kernel, InducingPoints(X if Z is None else Z), Gaussian(0.3), N, num_latent=num_latent,
                       whiten=whiten, jitter=0.0))
    return model, X, y, g


def reference_kernel():
    """The problem's kernel in float64 on the CPU, for the exact references."""
    return RBF(D, lengthscale=0.8, variance=1.2).double()


def exact_lml(X, y, kernel, noise):
    K = kernel.K(X) + noise * torch.eye(len(X), dtype=X.dtype)
    return MultivariateNormal(torch.zeros(len(X), dtype=X.dtype), covariance_matrix=K).log_prob(y)


@pytest.mark.parametrize("whiten", [True, False])
def test_elbo_equals_exact_marginal_likelihood_when_Z_is_X(whiten, place, tol, assert_close):
    model, X, y, _ = problem(place, whiten=whiten)
    model.q.set(*optimal_q(model, X, y, 0.3))
    with torch.no_grad():
        elbo = model.elbo_terms(place(X), place(y))["elbo"]
        exact = exact_lml(X, y, reference_kernel(), 0.3)
    assert_close(elbo, exact, tol.f64(rtol=1e-8, atol=0))


def test_random_q_gives_a_lower_bound(place):
    model, X, y, g = problem(place)
    exact = float(exact_lml(X, y, reference_kernel(), 0.3))
    for _ in range(5):
        with torch.no_grad():
            model.q.set(torch.randn(N, 1, generator=g, dtype=torch.float64),
                        torch.tril(0.3 * torch.randn(1, N, N, generator=g, dtype=torch.float64)) + 0.5 * torch.eye(N))
            assert float(model.elbo_terms(place(X), place(y))["elbo"]) < exact


def test_predictions_equal_the_exact_posterior_when_Z_is_X(place, tol, assert_close):
    model, X, y, g = problem(place)
    model.q.set(*optimal_q(model, X, y, 0.3))
    Xs = torch.randn(7, D, generator=g, dtype=torch.float64)
    kernel = reference_kernel()
    K = kernel.K(X) + 0.3 * torch.eye(N, dtype=torch.float64)
    Ks = kernel.K(Xs, X)
    mean = Ks @ torch.linalg.solve(K, y)
    var = kernel.K_diag(Xs) - (Ks * torch.linalg.solve(K, Ks.T).T).sum(1)
    with torch.no_grad():
        pred = model.predict(place(Xs))
    assert_close(pred.mean[:, 0], mean, tol.f64(atol=1e-8))
    assert_close(pred.var[:, 0], var, tol.f64(atol=1e-8))
    assert_close(pred.y_var[:, 0], var + 0.3, tol.f64(atol=1e-8))


def test_whitened_and_unwhitened_agree_for_the_same_q_of_f(place, tol):
    Z = torch.linspace(-2, 2, 8, dtype=torch.float64)[:, None].expand(8, D).clone()
    white, X, y, g = problem(place, whiten=True, Z=Z)
    plain, _, _, _ = problem(place, whiten=False, Z=Z)
    m_v = torch.randn(8, 1, generator=g, dtype=torch.float64)
    L_v = torch.tril(torch.randn(1, 8, 8, generator=g, dtype=torch.float64) * 0.3) + torch.eye(8)
    white.q.set(m_v, L_v)
    with torch.no_grad():
        Lm = torch.linalg.cholesky(reference_kernel().K(Z))
        plain.q.set(Lm @ m_v, Lm @ L_v)
        a, b = white.elbo_terms(place(X), place(y)), plain.elbo_terms(place(X), place(y))
    rtol = tol.f64(rtol=1e-9).rtol
    for k in ("elbo", "kl", "expected_log_lik"):
        assert abs(float(a[k] - b[k])) <= rtol * max(1.0, abs(float(b[k]))), k


UNWHITENED_KL = pytest.mark.float64_only(reason="the unwhitened KL with Z = X solves against K_uu + 1e-6 I "
                                                "(condition ~1e6): float32 rounding grows to ~1e-3")


@pytest.mark.parametrize("whiten", [True, pytest.param(False, marks=UNWHITENED_KL)])
def test_kl_matches_torch_distributions(whiten, place, tol, assert_close):
    model, X, y, g = problem(place, whiten=whiten, num_latent=2)
    m = torch.randn(N, 2, generator=g, dtype=torch.float64)
    L = torch.tril(torch.randn(2, N, N, generator=g, dtype=torch.float64) * 0.2) + torch.eye(N)
    model.q.set(m, L)
    with torch.no_grad():
        K = reference_kernel().K(X) + 1e-6 * torch.eye(N, dtype=torch.float64)
        model.jitter = 1e-6
        prior = MultivariateNormal(torch.zeros(N, dtype=torch.float64),
                                   K if not whiten else torch.eye(N, dtype=torch.float64))
        ref = sum(kl_divergence(MultivariateNormal(m[:, l], scale_tril=L[l]), prior) for l in range(2))
        assert_close(model.kl(), ref, tol.f64(rtol=1e-8, atol=0))


def test_minibatch_elbo_is_unbiased_over_a_partition(place, tol, assert_close):
    model, X, y, g = problem(place)
    model.q.set(torch.randn(N, 1, generator=g, dtype=torch.float64), torch.eye(N, dtype=torch.float64)[None] * 0.7)
    perm = torch.randperm(N, generator=g)
    X, y = place(X), place(y)
    with torch.no_grad():
        full = model.elbo_terms(X, y)["elbo"]
        parts = [model.elbo_terms(X[idx], y[idx])["elbo"] for idx in perm.reshape(5, 5)]
    assert_close(sum(parts) / 5, full, tol.f64(rtol=1e-9, atol=0))


def test_outputs_share_inducing_inputs_and_add_up(place, tol, assert_close):
    """L outputs with a shared Z: the ELBO is the sum of L single-output ELBOs with the matching q(u)."""
    model2, X, _, g = problem(place, num_latent=2)
    Y = torch.randn(N, 2, generator=g, dtype=torch.float64)
    m = torch.randn(N, 2, generator=g, dtype=torch.float64)
    L = torch.tril(torch.randn(2, N, N, generator=g, dtype=torch.float64) * 0.1) + torch.eye(N)
    model2.q.set(m, L)
    X, Y = place(X), place(Y)
    total = 0.0
    with torch.no_grad():
        for l in range(2):
            single, _, _, _ = problem(place)
            single.q.set(m[:, l:l + 1], L[l:l + 1])
            total += float(single.elbo_terms(X, Y[:, l])["elbo"])
        Luu = model2.prior_cholesky()
        both = float(model2.expected_log_lik(X, Y, Luu).sum() - model2.kl(Luu))
    assert_close(both, total, tol.f64(rtol=1e-9, atol=0))


def test_mean_field_equals_full_with_diagonal_covariance(place, tol, assert_close):
    g = torch.Generator().manual_seed(3)
    X = torch.randn(30, 3, generator=g, dtype=torch.float64)
    y = torch.randint(0, 3, (30,), generator=g)
    info = DataInfo("classification", 3)
    full = build_svgp(SVGPConfig(num_inducing=10, likelihood="robustmax"), X, y, info,
                      generator=torch.Generator().manual_seed(0))
    mf = build_svgp(SVGPConfig(num_inducing=10, likelihood="robustmax", mean_field=True), X, y, info,
                    generator=torch.Generator().manual_seed(0))
    full, mf, X, y = place(full), place(mf), place(X), place(y)
    d = place(0.5 + torch.rand(3, 10, generator=g, dtype=torch.float64))
    full.q.set(full.q.q_mu, torch.diag_embed(d))
    mf.q.set(mf.q.q_mu, torch.diag_embed(d))
    with torch.no_grad():
        assert_close(full.loss((X, y)).loss, mf.loss((X, y)).loss, tol.f64(rtol=1e-12))


def test_jitter_escalates_and_reports_when_Kuu_is_singular(place):
    Z = torch.zeros(4, D, dtype=torch.float64)  # identical inducing points: K_uu has rank one
    model, X, y, _ = problem(place, Z=Z)
    model.jitter = 0.0
    with pytest.warns(RuntimeWarning, match="used"):
        model.elbo_terms(place(X), place(y))
    assert model.last_jitter > 0.0
    with pytest.raises(NumericalError, match="NaN"):
        robust_cholesky(place(torch.full((3, 3), float("nan"), dtype=torch.float64)))


def test_build_from_config_on_images_and_classification_metrics(place):
    g = torch.Generator().manual_seed(0)
    X = torch.rand(60, 1, 4, 4, generator=g, dtype=torch.float64)
    y = (X.reshape(60, -1).mean(1) > 0.5).long()
    model = build_svgp(SVGPConfig(num_inducing=12), X, y, DataInfo("classification", 2, image_shape=(1, 4, 4)),
                       generator=g)
    model, X, y = place(model), place(X), place(y)
    assert model.inducing.Z.shape == (12, 16) and model.q.num_latent == 1
    metrics = model.metrics(X, y)
    assert 0.0 <= metrics["error"] <= 1.0 and math.isfinite(metrics["nlpd"])
    views = model.diagnostics((X, y))
    assert views["inducing_inputs"].images.shape[2:] == (4, 4)
    assert_spectrum_of(views["kuu_spectrum"].values, Kuu(model.inducing, model.kernel))


def test_robustmax_model_trains_on_multiclass_toy(place):
    g = torch.Generator().manual_seed(0)
    centres = torch.tensor([[0.0, 3.0], [3.0, 0.0], [-3.0, -3.0]], dtype=torch.float64)
    y = torch.randint(0, 3, (150,), generator=g)
    X = centres[y] + 0.7 * torch.randn(150, 2, generator=g, dtype=torch.float64)
    model = build_svgp(SVGPConfig(num_inducing=15), X, y, DataInfo("classification", 3), generator=g)
    model, X, y = place(model), place(X), place(y)
    assert isinstance(model.likelihood, RobustMax)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    start = float(model.loss((X, y)).loss)
    for _ in range(150):
        opt.zero_grad()
        loss = model.loss((X, y)).loss
        loss.backward()
        opt.step()
    assert float(loss) < start and model.metrics(X, y)["error"] < 0.05
    field = model.diagnostics((X, y))["posterior"]
    assert field.values.shape == (60, 60)


def test_fused_whitened_solve_gradients_match_autograd(place, tol, assert_close):
    from invlab.linalg import whitened_solve

    g = torch.Generator().manual_seed(5)
    A = torch.randn(6, 6, generator=g, dtype=torch.float64)
    K = place(A @ A.T + 6 * torch.eye(6, dtype=torch.float64)).requires_grad_(True)
    B = place(torch.randn(6, 4, generator=g, dtype=torch.float64)).requires_grad_(True)
    Gout = place(torch.randn(6, 4, generator=g, dtype=torch.float64))
    W, _ = whitened_solve(K, B, 0.0)
    dK, dB = torch.autograd.grad((W * Gout).sum(), (K, B))
    K2, B2 = K.detach().clone().requires_grad_(True), B.detach().clone().requires_grad_(True)
    W2 = torch.linalg.solve_triangular(torch.linalg.cholesky(K2), B2, upper=False)
    rK, rB = torch.autograd.grad((W2 * Gout).sum(), (K2, B2))
    assert_close(W, W2, tol.f64(atol=1e-12))
    assert_close(dB, rB, tol.f64(atol=1e-10))
    assert_close(dK, 0.5 * (rK + rK.T), tol.f64(atol=1e-10))  # the symmetric gradient (K is symmetric)
    if K.dtype == torch.float64:  # gradcheck's finite differences need float64
        assert torch.autograd.gradcheck(lambda k, b: whitened_solve(0.5 * (k + k.T), b, 0.0)[0],
                                        (K.detach().clone().requires_grad_(True), B))


# -- the whole-data ELBO ----------------------------------------------------------------------------------------------
@pytest.mark.float64_only(reason="identities checked to 1e-9")
@pytest.mark.parametrize("whiten", [True, False])
def test_full_elbo_is_the_sum_of_its_batches_and_the_kl_once(whiten, place):
    model, X, y, g = problem(place, whiten=whiten)
    X, y = place(X), place(y)
    L = torch.tril(torch.randn(1, N, N, generator=g, dtype=torch.float64) * 0.1) + 0.8 * torch.eye(N)
    model.q.set(torch.randn(N, 1, generator=g, dtype=torch.float64), L)
    out = model.full_elbo(X, y, batch_size=7)
    with torch.no_grad():  # by hand: every point's expected log-likelihood once (batches of 7, 7, 7, 4), the KL once
        ell = sum(float(model.likelihood.expected_log_prob(y[a:a + 7, None], *model.qf(X[a:a + 7])).sum())
                  for a in range(0, N, 7))
        kl = float(model.kl())
        whole = model.elbo_terms(X, y)  # one batch of everything: the same number
    assert set(out) == {"elbo", "expected_log_lik", "kl"} and all(isinstance(v, float) for v in out.values())
    assert abs(out["expected_log_lik"] - ell) < 1e-9 * abs(ell) and abs(out["kl"] - kl) < 1e-9 * abs(kl)
    assert abs(out["elbo"] - (ell - kl)) < 1e-9 * abs(ell - kl)
    assert abs(out["elbo"] - float(whole["elbo"])) < 1e-9 * abs(out["elbo"])
    assert model.full_elbo(X, y, batch_size=1000) == pytest.approx(out, rel=1e-12)


def test_full_elbo_with_a_monte_carlo_likelihood_is_deterministic_for_a_seed():
    g = torch.Generator().manual_seed(5)
    X = torch.randn(40, 2, generator=g, dtype=torch.float64)
    y = torch.randint(0, 3, (40,), generator=g)
    model = build_svgp(SVGPConfig(num_inducing=8, likelihood="softmax"), X, y, DataInfo("classification", 3),
                       generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        model.q.q_mu.copy_(torch.randn(8, 3, generator=g, dtype=torch.float64))
    before = torch.random.get_rng_state()
    a, b = model.full_elbo(X, y, seed=3), model.full_elbo(X, y, seed=3)
    assert a == b and model.full_elbo(X, y, seed=4) != a  # softmax expectations are sampled: the seed decides
    assert torch.equal(torch.random.get_rng_state(), before)  # training's random stream is left where it was
