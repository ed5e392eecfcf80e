"""Wishart machinery of deep kernel processes (Aitchison, Yang & Ober 2021) against scipy, closed-form moments and joint
samples."""
import math

import numpy as np
import pytest
import scipy.stats as st
import torch

from invlab.errors import ConfigError
from invlab.kernels.gram import ReluGram, SquaredExponentialGram
from invlab.models.dkp.layers import GramBlocks, InverseWishartLayer, OmegaInputLayer
from invlab.models.dkp.wishart import InverseWishart, Wishart, bartlett, inverse_wishart_conditional, residual_wishart

DT = torch.float64


def spd(P, seed=0, ridge=0.5):
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(P, P + 2, generator=g, dtype=DT)
    return A @ A.T / (P + 2) + ridge * torch.eye(P, dtype=DT)


def zscores(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(mean a − mean b) / SE of the difference, for two independent Monte-Carlo samples (first dim)."""
    return (a.mean(0) - b.mean(0)) / torch.sqrt(a.var(0) / a.shape[0] + b.var(0) / b.shape[0])


def zscore_to(a: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return (a.mean(0) - target) / (a.std(0) / math.sqrt(a.shape[0]))


def host(t: torch.Tensor) -> np.ndarray:
    """A result on the test device and dtype as float64 numpy, beside scipy's reference."""
    return t.detach().cpu().double().numpy()


# -- densities ---------------------------------------------------------------------------------------------------------
NEAR_SINGULAR = pytest.mark.float64_only(reason="ν = 3.2 barely above P − 1 draws nearly singular W: log|W| in "
                                                "float32 is off by ~1e-3")


@pytest.mark.parametrize("P,df", [(1, 2.5), pytest.param(3, 3.2, marks=NEAR_SINGULAR), (4, 7.0), (6, 11.7)])
def test_wishart_log_density_matches_scipy(P, df, place, tol):
    torch.manual_seed(0)
    V = spd(P)
    dist = Wishart(df, scale=place(V))
    X = dist.rsample((4,))
    ref = [st.wishart(df=df, scale=V.numpy()).logpdf(x) for x in host(X)]
    t = tol.f64(rtol=0, atol=1e-8)
    assert np.allclose(host(dist.log_prob(X)), ref, rtol=t.rtol, atol=t.atol)


@pytest.mark.parametrize("P,df", [(1, 0.7), (3, 2.5), (4, 7.0), (6, 11.7)])
def test_inverse_wishart_log_density_matches_scipy(P, df, place, tol):
    torch.manual_seed(1)
    Psi = spd(P, seed=3)
    dist = InverseWishart(df, scale=place(Psi))
    sample = dist.rsample_with_factor((4,))
    ref = [st.invwishart(df=df, scale=Psi.numpy()).logpdf(x) for x in host(sample.value)]
    t = tol.f64(rtol=0, atol=1e-8)
    assert np.allclose(host(dist.log_prob(sample.value)), ref, rtol=t.rtol, atol=t.atol)
    # the factored route (X⁻¹ = BBᵀ and log|X| from the sampler) gives the same densities, also under another IW
    other = InverseWishart(df + 1.3, scale=place(spd(P, seed=5)))
    assert np.allclose(host(dist.log_prob(sample)), ref, rtol=t.rtol, atol=t.atol)
    ref_other = [st.invwishart(df=df + 1.3, scale=spd(P, seed=5).numpy()).logpdf(x) for x in host(sample.value)]
    assert np.allclose(host(other.log_prob(sample)), ref_other, rtol=t.rtol, atol=t.atol)


# -- Bartlett sampling -------------------------------------------------------------------------------------------------
def test_bartlett_samples_have_the_right_means(place):
    torch.manual_seed(2)
    V, nu, M = place(spd(3)), 8.5, 40_000
    W = Wishart(nu, scale=V).rsample((M,))
    assert zscore_to(W, nu * V).abs().max() < 3.0
    IW = InverseWishart(nu + 4, scale=V)  # ν − P − 1 > 4: finite fourth moments, a reliable standard error
    assert zscore_to(IW.rsample((M,)), IW.mean).abs().max() < 3.0


def test_singular_wishart_is_the_gram_of_gaussian_features(place):
    torch.manual_seed(3)
    K = place(spd(5))
    G = Wishart(2, scale=K / 2).rsample((20_000,))  # N = 2 < P: rank 2, sampled from features
    assert torch.linalg.matrix_rank(G[0]) == 2
    assert zscore_to(G, K).abs().max() < 3.0


def test_reparameterised_gradient_in_the_degrees_of_freedom(place, device, dtype, tol, assert_close):
    """d/dν E[tr W] = tr V for W ~ W(V, ν): the pathwise gradients through the Gamma draws are unbiased."""
    torch.manual_seed(4)
    V = place(spd(3))
    M = 40_000
    nu = place(torch.full((M,), 6.3, dtype=DT)).requires_grad_()  # one ν per draw: per-draw gradients in one pass
    W = Wishart(nu, scale=V).rsample()
    W.diagonal(dim1=-2, dim2=-1).sum().backward()
    grads = nu.grad.double()  # ∂ tr W_m / ∂ν_m
    z = (grads.mean() - V.trace()) / (grads.std() / math.sqrt(M))
    assert abs(float(z)) < 3.0
    A = bartlett(3, 6.3, (5,), dtype=dtype, device=device)
    assert_close(A, torch.tril(A), tol.f64())
    assert (A.diagonal(dim1=-2, dim2=-1) > 0).all()


def test_degrees_of_freedom_are_checked():
    with pytest.raises(ConfigError, match="ν > P − 1"):
        InverseWishart(1.5, scale=spd(3))
    with pytest.raises(ConfigError, match="integer"):
        Wishart(1.5, scale=spd(3)).rsample()
    with pytest.raises(ConfigError, match="exactly one"):
        Wishart(4.0)


# -- E[G_ℓ | G_ℓ₋₁] = K(G_ℓ₋₁) (eq. 10, 19) --------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", [ReluGram(), SquaredExponentialGram(lengthscale=1.3)], ids=["relu", "sqexp"])
def test_layer_expectation_is_the_kernel_of_the_previous_gram(kernel, place):
    torch.manual_seed(5)
    F = place(torch.randn(4, 3, dtype=DT))
    kernel = place(kernel)
    K = kernel.K(F @ F.T / 3) + 1e-3 * place(torch.eye(4, dtype=DT))  # K(G_ℓ₋₁) (+ the jitter the model adds)
    M, N, delta, P = 40_000, 7, 10.0, 4
    wishart = Wishart(N, scale=K / N).rsample((M,))  # deep Wishart layer (eq. 8b)
    inverse = InverseWishart(delta + P + 1, scale=delta * K).rsample((M,))  # deep inverse Wishart layer (eq. 18)
    assert zscore_to(wishart, K).abs().max() < 3.0
    assert zscore_to(inverse, K).abs().max() < 3.0


def test_inverse_wishart_layer_blocks_have_the_kernel_as_mean(place, tol):
    """The model's layer, with Q = P (γ → 0, V = 0): E of the inducing block, the cross block and the train diagonal
    is K."""
    torch.manual_seed(6)
    Pi, Pt, M = 3, 4, 20_000
    F = place(torch.randn(Pi + Pt, 5, dtype=DT))
    K = place(SquaredExponentialGram()).K(F @ F.T / 5) + 1e-2 * place(torch.eye(Pi + Pt, dtype=DT))
    layer = place(InverseWishartLayer(Pi, delta=8.0, gamma=1e-9, V_init=torch.zeros(Pi, Pi, dtype=DT)))
    blocks = GramBlocks(K[None, :Pi, :Pi], K[None, :Pi, Pi:], K.diagonal()[None, Pi:])
    with torch.no_grad():
        G, logpq = layer(blocks, M)
    assert zscore_to(G.ii, K[:Pi, :Pi]).abs().max() < 3.0
    assert zscore_to(G.it, K[:Pi, Pi:]).abs().max() < 3.0
    assert zscore_to(G.tt, K.diagonal()[Pi:]).abs().max() < 3.0
    # Q equals the prior: log P − log Q = 0 for every sample (float32: the rounding of two log densities of ~10)
    assert logpq.abs().max() < tol.f64(atol=1e-6, f32=10).atol


# -- doubly-stochastic conditionals (eq. 31–34, app. I) ---------------------------------------------------------------
def joint_and_conditional(place, Pi, Pt, delta, M, seed):
    torch.manual_seed(seed)
    Psi = place(delta * spd(Pi + Pt, seed=seed, ridge=0.3))
    joint = InverseWishart(delta + Pi + Pt + 1, scale=Psi).rsample((M,))  # all points at once
    G_ii = InverseWishart(delta + Pi + 1, scale=Psi[:Pi, :Pi]).rsample((M,))
    args = (torch.linalg.cholesky(Psi[:Pi, :Pi]).expand(M, Pi, Pi), Psi[:Pi, Pi:].expand(M, Pi, Pt),
            Psi.diagonal()[Pi:].expand(M, Pt))
    return joint, G_ii, args


def test_per_point_conditionals_reproduce_the_moments_of_joint_samples(place):
    Pi, Pt, delta, M = 3, 2, 12.0, 60_000
    joint, G_ii, args = joint_and_conditional(place, Pi, Pt, delta, M, seed=7)
    g_it, g_tt = inverse_wishart_conditional(G_ii, *args, delta)
    j_it, j_tt = joint[:, :Pi, Pi:], joint[:, Pi:, Pi:].diagonal(dim1=-2, dim2=-1)
    for a, b in [(j_it, g_it), (j_tt, g_tt), (j_it ** 2, g_it ** 2), (j_tt ** 2, g_tt ** 2),
                 (j_it * j_tt[:, None, :], g_it * g_tt[:, None, :])]:
        assert zscores(a, b).abs().max() < 4.0  # 20 statistics at once; each alone would use 3
    # the inducing block's marginal is consistent too (eq. 4: the process is consistent under marginalisation)
    assert zscores(joint[:, :Pi, :Pi], G_ii).abs().max() < 4.0


def test_the_conditional_shape_does_not_grow_with_the_batch_size(place):
    """Eq. 106's shape (δ + Pi + Pt + 1)/2 holds for Pt = 1; read with Pt = a batch of 20 it visibly breaks the match
    with joint samples, which the per-point shape (δ + Pi + 2)/2 passes (so the check above has power)."""
    Pi, Pt, delta, M = 3, 2, 12.0, 20_000
    joint, G_ii, args = joint_and_conditional(place, Pi, Pt, delta, M, seed=8)
    _, printed = inverse_wishart_conditional(G_ii, *args, delta + 19)  # shape (δ + Pi + 20 + 1)/2
    assert zscores(joint[:, Pi:, Pi:].diagonal(dim1=-2, dim2=-1), printed).abs().min() > 10.0


# -- singular input layer (eq. 18, app. F) ---------------------------------------------------------------------------
def test_omega_input_layer_gives_the_inverse_wishart_of_the_input_gram(place, tol, assert_close):
    """G₁ = XΩXᵀ/N0 with Ω ~ IW(δI, δ + N0 + 1) is IW(δ XXᵀ/N0, δ + P + 1) when P ≤ N0 (app. F eq. 95)."""
    torch.manual_seed(9)
    P, N0, delta, M = 3, 6, 9.0, 40_000
    X = place(torch.randn(P, N0, dtype=DT))
    layer = place(OmegaInputLayer(N0, delta=delta, gamma=1e-9))
    with torch.no_grad():
        layer.V.zero_()  # Q = P
        G, logpq, Omega = layer(X[:2], X[2:], M)
    full = X @ Omega @ X.T / N0
    assert_close(G.ii, full[:, :2, :2], tol.f64())
    assert_close(G.it, full[:, :2, 2:], tol.f64())
    assert_close(G.tt, full[:, 2:, 2:].diagonal(dim1=-2, dim2=-1), tol.f64())
    direct = InverseWishart(delta + P + 1, scale=delta * X @ X.T / N0).rsample((M,))
    assert zscores(full, direct).abs().max() < 4.0
    assert zscores(full ** 2, direct ** 2).abs().max() < 4.0
    assert logpq.abs().max() < tol.f64(atol=1e-6, f32=10).atol  # float32: rounding of two log densities of ~10


def test_residual_wishart_has_identity_mean_and_fewer_small_eigenvalues(device, dtype):
    torch.manual_seed(10)
    R = residual_wishart(40, 2.0, (2000,), dtype=dtype, device=device)
    assert zscore_to(R, torch.eye(40, dtype=dtype, device=device)).abs().max() < 4.5  # 1600 entries
    small = torch.linalg.eigvalsh(residual_wishart(200, 0.0, dtype=dtype, device=device)).min()
    large = torch.linalg.eigvalsh(residual_wishart(200, 3.0, dtype=dtype, device=device)).min()
    assert small < 0.01 < 0.2 < large  # app. H: α pushes the spectrum away from zero
    with pytest.raises(ConfigError, match="α"):
        residual_wishart(3, -1.0)


# -- the KL terms of the ELBO ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("P,nq,np_", [(1, 3.0, 2.2), (3, 7.5, 5.1), (5, 12.0, 8.0)])
def test_inverse_wishart_kl_matches_monte_carlo_with_scipy_densities(P, nq, np_):
    """KL(q ‖ p) in closed form against the mean of log q − log p over 40,000 scipy draws from q."""
    from invlab.models.dkp.wishart import inverse_wishart_kl
    Pq, Pp = spd(P, seed=1), spd(P, seed=2)
    kl = float(inverse_wishart_kl(InverseWishart(nq, scale=Pq), InverseWishart(np_, scale=Pp)))
    q, p = st.invwishart(df=nq, scale=Pq.numpy()), st.invwishart(df=np_, scale=Pp.numpy())
    x = q.rvs(size=40_000, random_state=0)
    x = x.reshape(-1) if P == 1 else np.moveaxis(x, 0, -1)  # scipy takes [P, P, n] stacks
    d = q.logpdf(x) - p.logpdf(x)
    assert abs(d.mean() - kl) < 4 * d.std() / math.sqrt(d.size)
    assert float(inverse_wishart_kl(InverseWishart(nq, scale=Pq), InverseWishart(nq, scale=Pq))) == pytest.approx(
        0.0, abs=1e-10)
