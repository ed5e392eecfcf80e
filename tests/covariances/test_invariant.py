"""The invariant estimators against brute force: Monte-Carlo unbiasedness (densities and finite orbits sampled
without replacement), exactness when S equals the orbit size, and the per-sample K_uf."""
import math

import pytest
import torch

from invlab.covariances import Kff_diag, Kuf, Kuu
from invlab.covariances.invariant import OrbitSample, pair_weights
from invlab.covariances.orbits import _kff_diag_interdomain, _kuf_interdomain
from invlab.inducing import InterDomainPoints
from invlab.kernels import RBF
from invlab.kernels.invariant import InvariantKernel, gram_blocks
from invlab.models.conditionals import project, sampled_moments
from invlab.transforms import CyclicShiftOrbit, PermutationOrbit, Rot90Orbit, rotation_only

DT = torch.float64


def setup(place, augmentation, S, shape=(1, 5, 5), N=3, M=5, L=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = place(torch.rand((N,) + shape, generator=g, dtype=DT))
    D = math.prod(shape)
    kernel = place(InvariantKernel(RBF(D, lengthscale=1.5, variance=1.3), augmentation, S))
    Z = place(InterDomainPoints(torch.rand(M, D, generator=g, dtype=DT)))
    q_mu = place(torch.randn(M, L, generator=g, dtype=DT))
    q_sqrt = place(torch.tril(0.4 * torch.randn(L, M, M, generator=g, dtype=DT)) + 0.6 * torch.eye(M, dtype=DT))
    Luu = torch.linalg.cholesky(Kuu(Z, kernel) + 1e-8 * place(torch.eye(M, dtype=DT)))
    return X, kernel, Z, q_mu, q_sqrt, Luu


def estimates(X, kernel, Z, q_mu, q_sqrt, Luu, R, S, whiten=True):
    """R independent draws of (μ̂, μ²̂, σ²̂, k̂_f) at every input, in one batch: each [R, N, L] (k̂_f: [R, N, 1])."""
    N = X.shape[0]
    Xr = X.repeat(R, *([1] * (X.dim() - 1)))  # [R·N, ...]: every replicate draws its own samples
    orbit = OrbitSample(kernel.sample_orbit(Xr, S), kernel.orbit_size)
    kff = Kff_diag(Z, kernel, orbit)
    mu, mu2, var = sampled_moments(Kuf(Z, kernel, orbit), Luu, kff, q_mu, q_sqrt, whiten, kernel.orbit_size)
    return [t.reshape(R, N, -1) for t in (mu, mu2, var, kff[:, None])]


def pair_terms(a, b, kernel, Z, q_mu, q_sqrt, Luu):
    """r(a, b) of each quantity for two augmented points a, b [K, E]: the integrands of eq. 20."""
    Wa = torch.linalg.solve_triangular(Luu, kernel.base.K(Z.Z, a), upper=False)  # [M, K]
    Wb = torch.linalg.solve_triangular(Luu, kernel.base.K(Z.Z, b), upper=False)
    ha, hb = Wa.T @ q_mu, Wb.T @ q_mu  # [K, L]
    La, Lb = q_sqrt.transpose(-1, -2) @ Wa, q_sqrt.transpose(-1, -2) @ Wb  # [L, M, K]
    kab = gram_blocks(kernel.base, torch.stack([a, b], 1))[:, 0, 1]  # [K]: k_g(a_k, b_k)
    quad = kab[:, None] - (Wa * Wb).sum(0)[:, None] + (La * Lb).sum(1).T  # σ² integrand [K, L]
    return ha, ha * hb, quad, kab[:, None]


def z_scores(est, ref_mean, ref_se):
    m, se = est.mean(0), est.std(0) / math.sqrt(est.shape[0])
    return ((m - ref_mean) / torch.sqrt(se ** 2 + ref_se ** 2)).abs()


def test_pair_weights():
    assert pair_weights(4, None) == (1 / 12, 0.0)
    c_off, c_diag = pair_weights(5, 5)
    assert math.isclose(c_off, 1 / 25) and math.isclose(c_diag, 1 / 25)  # S = P: the plain average
    c_off, c_diag = pair_weights(3, 8)
    assert math.isclose(c_off, 7 / (8 * 3 * 2)) and math.isclose(c_diag, 1 / 24)


def test_kuf_is_per_sample_and_averages_to_the_orbit_covariance(place, tol, assert_close):
    X, kernel, Z, *_ = setup(place, Rot90Orbit(), 4)
    K = Kuf(Z, kernel, X)
    assert K.shape == (5, 3, 4)
    assert_close(K.mean(2), _kuf_interdomain(Z, kernel, X), tol.f64(atol=1e-12))  # generic brute-force path


@pytest.mark.parametrize("whiten", [True, False])
def test_density_estimators_are_unbiased(whiten, place):
    """Rotation density: the mean of R draws of each estimator (S = 3 shared samples) matches a brute-force value
    from 60,000 independent pairs of samples, within 3 standard errors; the naive estimator that keeps the
    diagonal (s = s') fails the same test."""
    torch.manual_seed(0)
    S, R, K = 3, 6000, 60000
    X, kernel, Z, q_mu, q_sqrt, Luu = setup(place, rotation_only(60.0), S)
    # unwhitened: the same q(f) in other coordinates, so the whitened brute-force references still apply
    q = (q_mu, q_sqrt) if whiten else (Luu @ q_mu, Luu @ q_sqrt)
    with torch.no_grad():
        est = estimates(X, kernel, Z, *q, Luu, R, S, whiten)
        for n in range(X.shape[0]):
            a = kernel.sample_orbit(X[n:n + 1].expand(K, -1, -1, -1), 1)[:, 0]
            b = kernel.sample_orbit(X[n:n + 1].expand(K, -1, -1, -1), 1)[:, 0]
            refs = pair_terms(a, b, kernel, Z, q_mu, q_sqrt, Luu)
            for name, e, r in zip(("mu", "mu2", "var", "kff"), est, refs):
                z = z_scores(e[:, n], r.mean(0), r.std(0) / math.sqrt(K))
                assert (z < 3).all(), (name, n, z)
            # the naive double sum over all pairs, diagonal included, is biased for k_f: the test has power
            A = kernel.sample_orbit(X[n:n + 1].expand(R, -1, -1, -1), S)  # [R, S, E]
            naive = torch.vmap(kernel.base.K)(A).mean((1, 2))
            assert z_scores(naive[:, None], refs[3].mean(0), refs[3].std(0) / math.sqrt(K)).item() > 10


@pytest.mark.parametrize("orbit,shape,S", [(CyclicShiftOrbit(3, 3), (1, 3, 3), 3), (Rot90Orbit(), (1, 5, 5), 2)])
def test_finite_orbit_estimators_without_replacement_are_unbiased(orbit, shape, S, place):
    """S < P elements drawn without replacement (appendix B re-weighting): the mean of R draws matches the exact
    orbit average within 3 standard errors; treating the draws as i.i.d. (density weights) is detectably biased."""
    torch.manual_seed(1)
    R = 8000
    X, kernel, Z, q_mu, q_sqrt, Luu = setup(place, orbit, S, shape=shape)
    P = orbit.orbit_size
    with torch.no_grad():
        exact = estimates(X, kernel, Z, q_mu, q_sqrt, Luu, 1, P)  # S = P: the exact double sums
        est = estimates(X, kernel, Z, q_mu, q_sqrt, Luu, R, S)
        for name, e, x in zip(("mu", "mu2", "var", "kff"), est, exact):
            z = z_scores(e, x[0], torch.zeros_like(x[0]))
            assert (z < 3).all(), (name, z)
        # density weights on samples drawn without replacement miss the diagonal terms: biased
        orbit_sample = OrbitSample(kernel.sample_orbit(X.repeat(R, 1, 1, 1), S), None)
        wrong = Kff_diag(Z, kernel, orbit_sample).reshape(R, -1)
        assert (z_scores(wrong, exact[3][0, :, 0], torch.zeros(X.shape[0], dtype=X.dtype, device=X.device)) > 10).all()


@pytest.mark.parametrize("mean_field", [False, True])
def test_full_orbit_is_exact(mean_field, place, tol, assert_close):
    """S = P: μ̂, σ²̂ equal q(f) of the exact double-sum kernel (generic brute-force covariances), μ²̂ = μ²."""
    X, kernel, Z, q_mu, q_sqrt, Luu = setup(place, Rot90Orbit(), 4)
    if mean_field:
        q_sqrt = q_sqrt.diagonal(dim1=-2, dim2=-1)
    with torch.no_grad():
        mu, mu2, var = sampled_moments(Kuf(Z, kernel, X), Luu, Kff_diag(Z, kernel, X), q_mu, q_sqrt, True, 4)
        ref_mu, ref_var = project(_kuf_interdomain(Z, kernel, X), Luu, _kff_diag_interdomain(Z, kernel, X),
                                  q_mu, q_sqrt)
        kff_bruteforce = kernel.K(X).diagonal()  # OrbitKernel's double sum over the exact orbit
    assert_close(mu, ref_mu, tol.f64(atol=1e-12))
    assert_close(mu2, ref_mu ** 2, tol.f64(atol=1e-12))
    assert_close(var, ref_var, tol.f64(atol=1e-12))
    assert_close(Kff_diag(Z, kernel, X), kff_bruteforce, tol.f64(atol=1e-12))


def test_permutation_orbit_gives_the_swap_invariant_kernel(place, tol, assert_close):
    kernel = place(InvariantKernel(RBF(2, lengthscale=0.7), PermutationOrbit(2), 2))
    g = torch.Generator().manual_seed(0)
    X, X2 = place(torch.randn(5, 2, generator=g, dtype=DT)), place(torch.randn(4, 2, generator=g, dtype=DT))
    kg = kernel.base.K
    ref = 0.25 * (kg(X, X2) + kg(X.flip(-1), X2) + kg(X, X2.flip(-1)) + kg(X.flip(-1), X2.flip(-1)))
    assert_close(kernel.K(X, X2), ref, tol.f64(atol=1e-12))
    assert_close(kernel.K_diag(X), kernel.K(X).diagonal(), tol.f64(atol=1e-12))


def test_gram_blocks_match_per_input_kernel_matrices(place, tol, assert_close):
    from invlab.kernels import Matern52, Polynomial

    A = place(torch.randn(5, 4, 7, generator=torch.Generator().manual_seed(0), dtype=DT))
    for k in (RBF(7, 1.3, 0.7, ard=True), Matern52(7, 2.0), Polynomial(2)):
        k = place(k)
        ref = torch.stack([k.K(a) for a in A])
        assert_close(gram_blocks(k, A), ref, tol.f64(atol=1e-10), msg=type(k).__name__)


@pytest.mark.parametrize("ard", [False, True])
def test_stationary_fast_path_matches_the_kernel_itself(ard, place, tol, assert_close):
    """K_uf and k̂_f share one pass over the augmented images for stationary k_g; check against k_g(Z, x_a) directly."""
    from invlab.kernels import Matern52

    g = torch.Generator().manual_seed(3)
    for base in (RBF(16, 1.7, 0.8, ard=ard), Matern52(16, 2.5, 1.1, ard=ard)):
        if ard:
            base.lengthscale.assign(1.0 + torch.rand(16, generator=g, dtype=DT))
        kernel = place(InvariantKernel(base, rotation_only(40.0), 3))
        Z = place(InterDomainPoints(torch.rand(5, 16, generator=g, dtype=DT)))
        orbit = OrbitSample(kernel.sample_orbit(place(torch.rand(4, 1, 4, 4, generator=g, dtype=DT))), None)
        A = orbit.points
        assert_close(Kuf(Z, kernel, orbit), base.K(Z.Z, A.reshape(12, 16)).reshape(5, 4, 3), tol.f64(atol=1e-12))
        blocks = torch.stack([base.K(a) for a in A])
        ref = (blocks.sum((1, 2)) - blocks.diagonal(dim1=1, dim2=2).sum(1)) / 6
        assert_close(Kff_diag(Z, kernel, orbit), ref, tol.f64(atol=1e-12))
