"""Representers of Zhang, Lee & Teh 2013's functionals against independent computations: autograd Hessians of the kernel
(eq. 6–8), mixed derivatives through the image warp (Thm 5, eq. 9), numerical integration (sec. 4.3), and the
materialised product that eq. 11 replaces."""
import copy
import math

import numpy as np
import pytest
import torch

from invlab.errors import ConfigError
from invlab.kernels import RBF, Linear, Matern52, Polynomial
from invlab.models.rkhs import (
    DirectionalDerivative,
    Evaluation,
    LocalAverage,
    PartialDerivatives,
    RepresenterGram,
    dense_partials_gram,
    fast_gradient,
    inner,
)
from invlab.models.rkhs.functionals import _deriv_deriv_autograd, _eval_deriv_autograd, check_norms
from invlab.models.rkhs.tangents import PAPER_MAGNITUDES, TRANSFORMATIONS, bilinear_warp, gaussian_warp, tangent_vectors

D = 3


def points(seed, M, D=D, scale=0.7):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(M, D, generator=g, dtype=torch.float64) * scale


def by_differences(kernel, x, y):
    """The Gaussian kernel written with x − y (the engine's code expands ‖x − y‖² and clamps it at 0, which
    autograd cannot differentiate through at x = y)."""
    return kernel.variance() * torch.exp(-0.5 * (((x - y) / kernel.lengthscale()) ** 2).sum())


def brute_force(kernel, XA, VA, XB, VB, reference=None):
    """v_iᵀ [∂²k/∂x∂y](x_i, y_j) w_j, and w_j·∇_y k(x_i, y_j), pair by pair from autograd's full Hessian."""
    DD = torch.zeros(len(XA), len(XB), dtype=torch.float64)
    ED = torch.zeros(len(XA), len(XB), dtype=torch.float64)
    n = XA.shape[1]
    for i in range(len(XA)):
        for j in range(len(XB)):
            def k(z):
                if reference is not None:
                    return reference(kernel, z[:n], z[n:])
                return kernel.K(z[None, :n], z[None, n:])[0, 0]

            z = torch.cat([XA[i], XB[j]])
            H = torch.autograd.functional.hessian(k, z)
            DD[i, j] = VA[i] @ H[:n, n:] @ VB[j]
            ED[i, j] = torch.autograd.functional.jacobian(k, z)[n:] @ VB[j]
    return DD, ED


def _ard(kernel, lengthscales):
    kernel.lengthscale.assign(torch.tensor(lengthscales, dtype=torch.float64))
    return kernel


KERNELS = {
    "rbf": lambda: RBF(D, lengthscale=0.9, variance=1.3),
    "rbf_ard": lambda: _ard(RBF(D, lengthscale=1.0, variance=0.8, ard=True), [0.6, 1.1, 1.7]),
    "matern52": lambda: Matern52(D, lengthscale=1.2, variance=1.1),
    "polynomial3": lambda: Polynomial(degree=3, variance=0.7, offset=1.3),
    "polynomial1": lambda: Polynomial(degree=1, variance=1.0, offset=1.0),
}


@pytest.mark.parametrize("name", list(KERNELS))
def test_derivative_representer_inner_products_equal_autograd_second_derivatives(name, place, tol, assert_close):
    kernel = KERNELS[name]().double()  # the float64 CPU reference; `placed` is the engine under test
    placed = place(copy.deepcopy(kernel))
    XA, XB = points(0, 4), points(1, 3)
    XB[0] = XA[1]  # a coincident pair: r = 0, where a clamped implementation would go wrong
    VA, VB = points(2, 4), points(3, 3)
    DD, ED = brute_force(kernel, XA, VA, XB, VB, by_differences if name.startswith("rbf") else None)
    XA, XB, VA, VB = place(XA), place(XB), place(VA), place(VB)
    with torch.no_grad():
        closed = inner(placed, DirectionalDerivative(XA, VA), DirectionalDerivative(XB, VB))
        cross = inner(placed, Evaluation(XA), DirectionalDerivative(XB, VB))
        swapped = inner(placed, DirectionalDerivative(XB, VB), Evaluation(XA))
    if name == "matern52":
        # the engine's Matérn code clamps r at 0, so autograd's Hessian is wrong exactly there (the closed form is
        # not); at r = 0 the mixed derivative is 5s²/(3ℓ²) v·w
        s2, ell = float(kernel.variance()), float(kernel.lengthscale())
        assert float(closed[1, 0]) == pytest.approx(5 * s2 / (3 * ell**2) * float(VA[1] @ VB[0]),
                                                    rel=tol.f64(rtol=1e-12).rtol)
        DD[1, 0] = float(closed[1, 0])
    assert_close(closed, DD, tol.f64(rtol=1e-8, atol=1e-10))
    assert_close(cross, ED, tol.f64(rtol=1e-8, atol=1e-10))
    assert_close(swapped, ED.T, tol.f64(rtol=1e-8, atol=1e-10))


def test_autograd_path_matches_closed_forms_and_serves_other_kernels(place, tol, assert_close):
    XA, XB, VA, VB = points(4, 5), points(5, 4), points(6, 5), points(7, 4)
    A, B = DirectionalDerivative(place(XA), place(VA)), DirectionalDerivative(place(XB), place(VB))
    for make in (KERNELS["rbf_ard"], KERNELS["polynomial3"]):
        kernel = place(make())
        assert_close(_deriv_deriv_autograd(kernel, A, B), inner(kernel, A, B), tol.f64(rtol=1e-10, atol=1e-12))
        assert_close(_eval_deriv_autograd(kernel, Evaluation(place(XA)), B), inner(kernel, Evaluation(place(XA)), B),
                     tol.f64(rtol=1e-10, atol=1e-12))
    linear = Linear(variance=0.5, offset=0.2).double()  # no closed form registered: the general path
    DD, _ = brute_force(linear, XA, VA, XB, VB)
    assert_close(inner(place(linear), A, B), DD, tol.f64(rtol=1e-8, atol=1e-12))


def test_paper_equations_7_and_8_as_printed(place, tol, assert_close):
    X = points(8, 4)
    i, j = 0, 2
    xi, xj = X[i], X[j]
    r = 2
    poly = place(Polynomial(degree=r, variance=1.0, offset=1.0))  # (x·y + 1)^r
    G = inner(poly, PartialDerivatives(place(X)), PartialDerivatives(place(X))).reshape(4, D, 4, D)
    u = xi @ xj + 1
    eq7 = r * u ** (r - 2) * ((r - 1) * torch.outer(xj, xi) + u * torch.eye(D, dtype=torch.float64))
    assert_close(G[i, :, j, :], eq7, tol.f64(rtol=1e-12))  # [d, d'] = r u^{r−2}[(r−1) x_i^{d'} x_j^d + u δ]
    sigma = 0.25
    G8 = inner(place(RBF(D, lengthscale=sigma)), PartialDerivatives(place(X)), PartialDerivatives(place(X)))
    assert_close(G8, dense_partials_gram(place(X), sigma), tol.f64(rtol=1e-12, atol=1e-14))
    assert_close(torch.diagonal(G8), torch.full((4 * D,), sigma**-2, dtype=torch.float64), tol.f64())  # ‖L‖ = 1/σ


def test_fast_gradient_equals_the_materialised_product(place, tol, assert_close):
    l, n, sigma = 30, 5, 1.3
    X = place(points(9, l, n))
    alpha = place(points(10, l, n))
    N = dense_partials_gram(X, sigma)  # (l·n × l·n)
    direct = (N @ alpha.reshape(-1)).reshape(l, n)
    K = torch.exp(-0.5 * torch.cdist(X, X) ** 2 / sigma**2)
    G = fast_gradient(X.T, alpha.T, K, sigma)  # the paper's layout: columns are points
    assert_close(G.T, direct, tol.f64(rtol=1e-10, atol=1e-12))


@pytest.mark.parametrize("name", ["rbf", "rbf_ard", "matern52"])
def test_structured_gram_operator_equals_the_dense_one(name, place, tol, assert_close):
    kernel = place(KERNELS[name]())
    XL, XU = place(points(11, 6)), place(points(12, 9))
    blocks = lambda: [Evaluation(XL), PartialDerivatives(torch.cat([XL, XU]))]  # noqa: E731
    fast = RepresenterGram(kernel, blocks(), fast=True)
    dense = RepresenterGram(kernel, blocks(), fast=False)
    assert fast.fast and not dense.fast
    alpha = place(points(13, fast.size, 3))  # three outputs
    assert_close(fast.matmul(alpha), dense.matmul(alpha), tol.f64(rtol=1e-10, atol=1e-12))
    assert_close(dense.matmul(alpha), dense.full() @ alpha, tol.f64(rtol=1e-10, atol=1e-12))
    Xs = place(points(14, 7))
    assert_close(fast.values(Xs, alpha), dense.values(Xs, alpha), tol.f64(rtol=1e-10, atol=1e-12))
    # the caches follow a kernel value set from outside (the dashboard's live edit): K scales with s²
    before, s2 = fast.matmul(alpha), float(kernel.variance())
    kernel.variance.assign(2.0)
    assert_close(fast.matmul(alpha), 2.0 / s2 * before, tol.f64(rtol=1e-10, atol=1e-12))
    assert_close(dense.matmul(alpha), 2.0 / s2 * before, tol.f64(rtol=1e-10, atol=1e-12))


# -- local averaging (sec. 4.3) --------------------------------------------------------------------------------------
def _gauss_hermite(x, theta, nodes=30):
    t, w = np.polynomial.hermite.hermgauss(nodes)
    t, w = torch.as_tensor(t), torch.as_tensor(w) / math.sqrt(math.pi)
    Dn = x.shape[-1]
    grids = torch.meshgrid(*([t] * Dn), indexing="ij")
    weights = torch.ones_like(grids[0])
    for g in torch.meshgrid(*([w] * Dn), indexing="ij"):
        weights = weights * g
    offsets = math.sqrt(2.0) * theta * torch.stack([g.reshape(-1) for g in grids], -1)  # τ − x ~ N(0, θ²)
    return x[:, None, :] + offsets[None], weights.reshape(-1)  # nodes [M, Q, D], weights [Q]


@pytest.mark.parametrize("Dn", [1, 2])
def test_gaussian_local_average_matches_numerical_integration(Dn, place, tol, assert_close):
    ell, s2, theta = 0.8, 1.4, 0.5
    kernel = RBF(Dn, lengthscale=ell, variance=s2).double()  # the float64 CPU reference (quadrature, autograd)
    placed = place(copy.deepcopy(kernel))
    P, Q = points(15, 3, Dn), points(16, 4, Dn)
    V = points(17, 4, Dn)

    def z(p, x):  # z_p(x) = ∫ k(x, τ) N(τ; p, θ²) dτ − k(x, p) by quadrature   [len(x), len(p)]
        tau, w = _gauss_hermite(p, theta)
        kt = torch.stack([kernel.K(x, tau[m]) @ w for m in range(len(p))], 1)
        return kt - kernel.K(x, p)

    A = LocalAverage(place(P), theta)
    assert_close(inner(placed, Evaluation(place(Q)), A), z(P, Q), tol.f64(rtol=1e-10, atol=1e-12))
    # ⟨z_{q,v}, z_p⟩ = v·∇_x z_p(x) at x = q, by autograd through the quadrature
    Qg = Q.clone().requires_grad_(True)
    zq = z(P, Qg)
    deriv = torch.stack([torch.autograd.grad(zq[:, m], Qg, torch.ones(len(Q), dtype=torch.float64),
                                             retain_graph=True)[0]
                         .mul(V).sum(1) for m in range(len(P))], 1)
    assert_close(inner(placed, DirectionalDerivative(place(Q), place(V)), A), deriv, tol.f64(rtol=1e-9, atol=1e-11))
    # ⟨z_p, z_q⟩ = L_q(z_p) = ∫ z_p(τ) N(τ; q, θ²) dτ − z_p(q)
    tau, w = _gauss_hermite(P, theta)
    LL = torch.stack([z(P, tau[m]).T @ w for m in range(len(P))], 1) - z(P, P)
    assert_close(inner(placed, A, A), LL, tol.f64(rtol=1e-9, atol=1e-11))
    # the paper's printed form holds when its σ, θ are read as variances ℓ², θ² and the exponent is −n/2
    r2 = torch.cdist(P, P) ** 2
    kap = lambda v: torch.exp(-0.5 * r2 / v)  # noqa: E731
    paper = s2 * (kap(ell**2) + (1 + 2 * theta**2 / ell**2) ** (-Dn / 2) * kap(ell**2 + 2 * theta**2)
                  - 2 * (1 + theta**2 / ell**2) ** (-Dn / 2) * kap(ell**2 + theta**2))
    assert_close(inner(placed, A, A), paper, tol.f64(rtol=1e-12))


def test_local_average_needs_the_gaussian_kernel():
    with pytest.raises(ConfigError, match="RBF"):
        inner(Matern52(2).double(), LocalAverage(points(0, 2, 2), 0.3), Evaluation(points(1, 2, 2)))


def test_a_kernel_with_wrong_derivatives_is_refused(place):
    # Matérn's own code clamps r at zero, so autograd gets the wrong sign at coincident points
    X = place(points(18, 3))
    bad = _deriv_deriv_autograd(place(Matern52(D)), DirectionalDerivative(X, X), DirectionalDerivative(X, X))
    with pytest.raises(ConfigError, match="negative"):
        check_norms(bad, "test")
    good = inner(place(Matern52(D)), DirectionalDerivative(X, X), DirectionalDerivative(X, X))
    check_norms(good, "test")


# -- transformation invariance (sec. 4.2) ----------------------------------------------------------------------------
def digit_images(n=3):
    from sklearn.datasets import load_digits

    return torch.as_tensor(load_digits().images[:n] / 16.0)[:, None]  # [n, 1, 8, 8]


def test_transformation_representers_are_mixed_derivatives_through_the_warp(place, tol):
    """Eq. 9: ⟨z_{g,t}, z_{g',t'}⟩ = ∂²/∂α∂α' k(I(g, α), I(g', α')) with tangents from differentiating the warp."""
    images = digit_images(2)
    kernel = RBF(64, lengthscale=2.5, variance=1.2).double()  # the float64 CPU reference (autograd through the warp)
    placed = place(copy.deepcopy(kernel))
    names = ["rotation", "tx", "shear_y"]
    mags = {n: 1.0 for n in names}
    T = tangent_vectors(place(images), names, method="analytic", magnitudes=mags)  # [2, 3, 1, 8, 8]
    zero = place(torch.zeros((), dtype=torch.float64))
    base = gaussian_warp(place(images), "tx", zero)  # I(g, 0): the interpolated image
    F = DirectionalDerivative(base.reshape(2, -1).repeat_interleave(3, 0), T.reshape(6, -1))
    G = inner(placed, F, F)
    x = torch.rand(1, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    E = inner(placed, Evaluation(place(x)), F)
    rtol = tol.f64(rtol=1e-9).rtol
    for a in range(6):
        for b in range(6):
            ga, ta = divmod(a, 3)
            gb, tb = divmod(b, 3)
            s = torch.zeros(2, dtype=torch.float64, requires_grad=True)
            Ia = gaussian_warp(images[ga:ga + 1], names[ta], s[0]).reshape(1, -1)
            Ib = gaussian_warp(images[gb:gb + 1], names[tb], s[1]).reshape(1, -1)
            k = by_differences(kernel, Ia, Ib)
            (g,) = torch.autograd.grad(k, s, create_graph=True)
            (h,) = torch.autograd.grad(g[1], s)
            assert abs(float(h[0] - G[a, b].cpu())) <= rtol * max(1.0, abs(float(G[a, b])))
        s = torch.zeros((), dtype=torch.float64, requires_grad=True)
        ga, ta = divmod(a, 3)
        k = by_differences(kernel, x, gaussian_warp(images[ga:ga + 1], names[ta], s).reshape(1, -1))
        (g,) = torch.autograd.grad(k, s)
        assert abs(float(g - E[0, a].cpu())) <= rtol * max(1.0, abs(float(E[0, a])))


def test_tangent_methods_agree(place, tol, assert_close):
    images = place(digit_images(3))
    analytic = tangent_vectors(images, method="analytic")
    auto = tangent_vectors(images, method="autograd")
    assert_close(analytic, auto, tol.f64(rtol=1e-12, atol=1e-12))
    # the paper's recipe (raw image, bilinear, ±2 px, ±10°, ±0.1) points the same way
    paper = tangent_vectors(images, method="finite")
    cos = (paper * analytic).flatten(2).sum(-1) / (paper.flatten(2).norm(dim=-1) * analytic.flatten(2).norm(dim=-1))
    assert float(cos.min()) > 0.6, cos


@pytest.mark.float64_only(reason="central differences with a step of 1e-5 resolve a derivative only to ~eps/1e-5, "
                                 "1e-2 in float32")
def test_finite_difference_tangents_converge_to_the_analytic_ones(place):
    images = place(digit_images(3))
    small = {n: 1e-5 for n in TRANSFORMATIONS}
    fd = tangent_vectors(images, method="finite", interpolation="gaussian", magnitudes=small)
    exact = tangent_vectors(images, method="analytic", magnitudes=small)
    assert float((fd - exact).abs().max()) <= 1e-7 * float(exact.abs().max())


def test_bilinear_shift_by_whole_pixels_is_an_exact_shift(place, tol, assert_close):
    img = place(digit_images(1))
    shifted = bilinear_warp(img, "tx", 2.0)  # content moves 2 columns to the right
    expect = torch.zeros_like(img)
    expect[..., 2:] = img[..., :-2]
    assert_close(shifted, expect, tol.f64(atol=1e-12))
    assert PAPER_MAGNITUDES["rotation"] == pytest.approx(math.radians(10))


def test_rotation_tangent_of_a_round_blob_vanishes(place):
    H = 21
    yy, xx = torch.meshgrid(torch.arange(H) - 10.0, torch.arange(H) - 10.0, indexing="ij")
    blob = place(torch.exp(-(xx**2 + yy**2) / (2 * 2.0**2)).double()[None, None])
    T = tangent_vectors(blob, ["rotation", "tx", "scale"], magnitudes={"rotation": 1.0, "tx": 1.0, "scale": 1.0})
    rot, shift, scale = T[0, 0].norm(), T[0, 1].norm(), T[0, 2].norm()
    assert float(rot) < 1e-4 * float(shift) and float(scale) > 0.5 * float(shift)
    with pytest.raises(ConfigError, match="unknown transformation"):
        tangent_vectors(blob, ["zoom"])
