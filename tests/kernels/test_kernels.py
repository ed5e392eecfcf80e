"""Every kernel gets the same battery (GPyTorch style): symmetry, PSD, diagonal, dtypes, gradients, shapes;
plus independent checks of each formula."""
import math

import numpy as np
import pytest
import torch

from invlab.errors import ConfigError, ShapeError
from invlab.kernels import RBF, ArcCosine, Linear, Matern52, Polynomial, build_kernel

D = 5

KERNELS = {
    "rbf": lambda: RBF(D, lengthscale=0.7, variance=1.3),
    "rbf_ard": lambda: RBF(D, lengthscale=0.9, variance=0.8, ard=True),
    "matern52": lambda: Matern52(D, lengthscale=1.1, variance=2.0),
    "matern52_ard": lambda: Matern52(D, lengthscale=1.1, ard=True),
    "linear": lambda: Linear(variance=0.5),
    "polynomial": lambda: Polynomial(degree=3, variance=0.4, offset=1.0),
    "arccos0": lambda: ArcCosine(0, variance=1.5),
    "arccos1": lambda: ArcCosine(1, variance=0.7, weight_variance=2.0, bias_variance=0.3),
}


@pytest.fixture(params=sorted(KERNELS))
def kernel(request):
    return KERNELS[request.param]()


@pytest.mark.parametrize("precision", [torch.float32, torch.float64])  # both, whatever --dtype says
def test_gram_is_symmetric_psd_and_matches_diag(kernel, precision, device, rng):
    k = kernel.to(device=device, dtype=precision)
    X = torch.randn(30, D, generator=rng).to(device=device, dtype=precision)
    K = k.K(X)
    assert K.dtype == precision and K.device == X.device and K.shape == (30, 30)
    tol = 1e-4 if precision == torch.float32 else 1e-10
    assert torch.allclose(K, K.T, atol=tol)
    eig = torch.linalg.eigvalsh(K.double())
    assert eig.min() > -tol * max(1.0, float(eig.max()))
    assert torch.allclose(k.K_diag(X), K.diagonal(), rtol=tol * 10, atol=tol * 10)


def test_cross_covariance_shape_and_consistency(kernel, rng, place, tol, assert_close):
    k = place(kernel)
    X, X2 = torch.randn(7, D, generator=rng, dtype=torch.float64), torch.randn(4, D, generator=rng, dtype=torch.float64)
    X, X2 = place(X), place(X2)
    full = k.K(torch.cat([X, X2]))
    assert_close(k.K(X, X2), full[:7, 7:], tol.f64(atol=1e-12))


def test_gradients_are_finite_including_on_the_diagonal(kernel, rng, place):
    k = place(kernel)
    X = place(torch.randn(10, D, generator=rng, dtype=torch.float64))
    X = torch.cat([X, X[:2]])  # duplicated points: r = 0 off the diagonal too
    K = k.K(X)
    K.sum().backward()
    grads = [p.grad for p in k.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)


def test_images_are_flattened(kernel, rng, place, tol, assert_close):
    k = KERNELS["rbf"]() if isinstance(kernel, (RBF, Matern52)) and kernel.ard else kernel
    k = place(k)
    X = place(torch.randn(6, 1, 1, D, generator=rng, dtype=torch.float64))
    assert_close(k.K(X), k.K(X.reshape(6, D)), tol.f64())


def test_rbf_matches_brute_force_ard(rng, place, tol, assert_close):
    ell = torch.tensor([0.5, 1.0, 1.5, 2.0, 2.5], dtype=torch.float64)
    k = place(RBF(D, ard=True, variance=1.7))
    k.lengthscale.assign(place(ell))
    X, X2 = torch.randn(4, D, generator=rng, dtype=torch.float64), torch.randn(3, D, generator=rng, dtype=torch.float64)
    brute = torch.tensor([[1.7 * math.exp(-0.5 * float((((a - b) / ell) ** 2).sum())) for b in X2] for a in X],
                         dtype=torch.float64)
    assert_close(k.K(place(X), place(X2)), brute, tol.f64(rtol=1e-12))


def test_matern52_formula(rng, place, tol, assert_close):
    k = place(Matern52(D, lengthscale=1.3, variance=0.9))
    X, X2 = torch.randn(4, D, generator=rng, dtype=torch.float64), torch.randn(3, D, generator=rng, dtype=torch.float64)
    r = torch.cdist(X, X2) / 1.3
    ref = 0.9 * (1 + math.sqrt(5) * r + 5 / 3 * r ** 2) * torch.exp(-math.sqrt(5) * r)
    assert_close(k.K(place(X), place(X2)), ref, tol.f64(rtol=1e-10))


def test_polynomial_and_linear_formulas(rng, place, tol, assert_close):
    X, X2 = torch.randn(4, D, generator=rng, dtype=torch.float64), torch.randn(3, D, generator=rng, dtype=torch.float64)
    poly = place(Polynomial(3, 0.4, 1.0))
    assert_close(poly.K(place(X), place(X2)), (0.4 * X @ X2.T + 1.0) ** 3, tol.f64(rtol=1e-10))
    assert_close(place(Linear(0.5)).K(place(X), place(X2)), 0.5 * X @ X2.T, tol.f64(rtol=1e-12))


def test_arccos1_is_twice_the_relu_network_covariance(place):
    """k_1(x, x') = 2 E_w[relu(w·x̃) relu(w·x̃')] with x̃ the augmented input (σ_w x, σ_b); checked by Monte Carlo."""
    g = torch.Generator().manual_seed(0)
    X = torch.randn(3, 2, generator=g, dtype=torch.float64)
    sw2, sb2 = 1.5, 0.4
    k = place(ArcCosine(1, variance=1.0, weight_variance=sw2, bias_variance=sb2))
    Xa = torch.cat([math.sqrt(sw2) * X, math.sqrt(sb2) * torch.ones(3, 1, dtype=torch.float64)], 1)
    W = torch.randn(400_000, 3, generator=g, dtype=torch.float64)
    H = torch.relu(Xa @ W.T)  # [3, S]
    mc = 2 * (H @ H.T) / W.shape[0]
    se = 2 * torch.sqrt(((H[:, None, :] * H[None, :, :]).var(-1)) / W.shape[0])
    assert ((k.K(place(X)).cpu().double() - mc).abs() < 4 * se + 1e-12).all()


def test_arccos0_is_twice_the_step_network_covariance(place, tol, assert_close):
    g = torch.Generator().manual_seed(1)
    X = torch.randn(3, 2, generator=g, dtype=torch.float64)
    k = place(ArcCosine(0, variance=1.0, weight_variance=1.0, bias_variance=1.0))
    Xa = torch.cat([X, torch.ones(3, 1, dtype=torch.float64)], 1)
    H = (Xa @ torch.randn(400_000, 3, generator=g, dtype=torch.float64).T > 0).double()
    mc = 2 * (H @ H.T) / H.shape[1]
    assert_close(k.K(place(X)), mc, tol.f64(atol=0.01))


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ShapeError, match="input_dim"):
        RBF(None, ard=True)
    with pytest.raises(ShapeError, match="dimension"):
        RBF(3).K(torch.zeros(2, 3), torch.zeros(2, 4))
    with pytest.raises(ShapeError, match="vector"):
        RBF(3).K(torch.zeros(3))
    with pytest.raises(ConfigError, match="lengthscale"):
        RBF(3, lengthscale=-1.0)
    with pytest.raises(ConfigError, match="unknown kernel"):
        build_kernel("cosine", 3)
    with pytest.raises(ShapeError, match="D=4"):
        RBF(4, ard=True).K(torch.zeros(2, 3))


def test_kernels_follow_the_module_device_and_dtype(device):
    k = build_kernel("rbf", D).to(device=device, dtype=torch.float32)
    K = k.K(torch.zeros(2, D, device=device))
    assert K.dtype == torch.float32 and K.device == torch.zeros(0, device=device).device
    assert np.isclose(float(k.variance()), 1.0)
