"""Kernels on Gram matrices against independent computations: feature-space kernels, Monte Carlo, block identities."""
import math

import pytest
import torch

from invlab.errors import ConfigError, ShapeError
from invlab.kernels import RBF, ArcCosine
from invlab.kernels.gram import (
    InputAffine,
    NNGPKernel,
    ReluGram,
    SquaredExponentialGram,
    build_gram_kernel,
    linear_gram,
)

DT = torch.float64  # random draws and reference values; `place` puts them on the test device and dtype


def features(P=6, N=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(P, N, generator=g, dtype=DT)


def test_squared_exponential_on_the_gram_equals_rbf_on_the_features(place, tol, assert_close):
    F = place(features())
    G = F @ F.T  # eq. 17: R_ij = G_ii − 2G_ij + G_jj is the squared distance between rows of F
    k = place(SquaredExponentialGram(lengthscale=0.7, variance=1.3))
    ref = place(RBF(F.shape[1], lengthscale=0.7, variance=1.3)).K(F)
    assert_close(k.K(G), ref, tol.f64(atol=1e-12, rtol=1e-10))


def test_relu_on_the_gram_equals_the_arc_cosine_kernel_on_the_features(place, tol, assert_close):
    F = place(features())
    w, b = 0.8, 0.3  # G = w F Fᵀ + b is the Gram matrix of the features [√w F, √b]
    G = w * F @ F.T + b
    ref = place(ArcCosine(order=1, variance=1.0, weight_variance=w, bias_variance=b)).K(F)
    assert_close(place(ReluGram()).K(G), ref, tol.f64(atol=1e-10, rtol=1e-9))


def test_relu_kernel_is_twice_the_expected_product_of_relus(place):
    """The NNGP meaning (Aitchison, Yang & Ober 2021 eq. 52): K(G) = 2 E[relu(f_i) relu(f_j)], f ~ N(0, G); MC within 3
    SE."""
    F = features(P=3, N=5)
    G = F @ F.T / 5
    g = torch.Generator().manual_seed(1)
    f = torch.randn(200_000, 3, generator=g, dtype=DT) @ torch.linalg.cholesky(G).T
    prod = 2.0 * torch.relu(f)[:, :, None] * torch.relu(f)[:, None, :]  # [S, 3, 3]
    K = place(ReluGram()).K(place(G)).cpu().double()
    z = (prod.mean(0) - K) / (prod.std(0) / math.sqrt(prod.shape[0]))
    assert z.abs().max() < 3.0


@pytest.mark.parametrize("name", ["relu", "sqexp"])
def test_blocks_agree_with_the_full_matrix(name, place, tol, assert_close):
    F = place(features(P=7))
    G = F @ F.T / 4
    k = place(build_gram_kernel(name, lengthscale=1.5, variance=0.9))
    full = k.K(G)
    Kii, Kit, ktt = k.blocks(G[:3, :3], G[:3, 3:], G.diagonal()[3:])
    assert_close(Kii, full[:3, :3], tol.f64(atol=1e-12))
    assert_close(Kit, full[:3, 3:], tol.f64(atol=1e-12))
    assert_close(ktt, full.diagonal()[3:], tol.f64(atol=1e-12))
    # batched over samples
    Gs = torch.stack([G, 2.0 * G])
    assert_close(k.K(Gs)[1], k.K(2.0 * G), tol.f64(atol=1e-12))


@pytest.mark.parametrize("name", ["relu", "sqexp"])
def test_kernel_of_a_gram_matrix_is_positive_semidefinite(name, place, tol):
    F = place(features(P=30, N=3, seed=4))  # rank-3 Gram: the kernel must still be PSD
    K = place(build_gram_kernel(name)).K(F @ F.T / 3)
    assert torch.linalg.eigvalsh(K).min() > -tol.f64(atol=1e-10).atol * K.diagonal().max()


@pytest.mark.parametrize("name", ["relu", "sqexp"])
def test_gradients_are_finite_for_duplicate_points(name, place):
    F = place(features(P=4))
    F = torch.cat([F, F[:1]])  # a repeated point: θ = 0 and R = 0 off the diagonal
    G = (F @ F.T / 4).requires_grad_(True)
    place(build_gram_kernel(name)).K(G).sum().backward()
    assert torch.isfinite(G.grad).all()


def test_nngp_kernel_composes_the_layers_and_applies_the_input_affine(place, tol, assert_close):
    D = 3
    X, X2 = place(features(P=5, N=D, seed=2)), place(features(P=4, N=D, seed=3))
    kernels = [ReluGram(variance=1.2), SquaredExponentialGram(lengthscale=0.9)]
    k = place(NNGPKernel(D, kernels, input_scale_bias=True))
    with torch.no_grad():
        k.affine.scale.assign(place(torch.tensor([0.5, 2.0, 1.0], dtype=DT)))
        k.affine.bias.copy_(place(torch.tensor([0.1, -0.3, 0.7], dtype=DT)))
    scale, bias = place(torch.tensor([0.5, 2.0, 1.0], dtype=DT)), place(torch.tensor([0.1, -0.3, 0.7], dtype=DT))
    A = torch.cat([X, X2]) * scale + bias
    full = kernels[1].K(kernels[0].K(A @ A.T / D))  # the composition on the joint Gram matrix
    assert_close(k.K(X, X2), full[:5, 5:], tol.f64(atol=1e-12))
    assert_close(k.K(X), full[:5, :5], tol.f64(atol=1e-12))
    assert_close(k.K_diag(X2), full.diagonal()[5:], tol.f64(atol=1e-12))


def test_linear_gram_and_input_affine(place, tol, assert_close):
    X = place(features(P=4, N=3))
    assert_close(linear_gram(X, X), X @ X.T / 3, tol.f64())
    assert torch.equal(place(InputAffine(3, enabled=False))(X), X)
    with pytest.raises(ShapeError, match="D=3"):
        InputAffine(3)(features(P=4, N=2))


def test_bad_inputs_are_refused_with_a_message():
    with pytest.raises(ConfigError, match="relu, sqexp"):
        build_gram_kernel("matern")
    with pytest.raises(ShapeError, match="square"):
        ReluGram().K(torch.ones(3, 2, dtype=DT))
    with pytest.raises(ConfigError, match="num_layers"):
        NNGPKernel(3, [])
