"""Kernels on Gram matrices against independent computations: feature-space kernels, Monte Carlo, block identities."""
import math

import pytest
import torch

from engine.errors import ConfigError, ShapeError
from engine.kernels import RBF, ArcCosine
from engine.kernels.gram import (InputAffine, NNGPKernel, ReluGram, SquaredExponentialGram, build_gram_kernel,
                                 linear_gram)

DT = torch.float64


def features(P=6, N=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(P, N, generator=g, dtype=DT)


def test_squared_exponential_on_the_gram_equals_rbf_on_the_features():
    F = features()
    G = F @ F.T  # eq. 17: R_ij = G_ii − 2G_ij + G_jj is the squared distance between rows of F
    k = SquaredExponentialGram(lengthscale=0.7, variance=1.3)
    ref = RBF(F.shape[1], lengthscale=0.7, variance=1.3).K(F)
    assert torch.allclose(k.K(G), ref, atol=1e-12, rtol=1e-10)


def test_relu_on_the_gram_equals_the_arc_cosine_kernel_on_the_features():
    F = features()
    w, b = 0.8, 0.3  # G = w F Fᵀ + b is the Gram matrix of the features [√w F, √b]
    G = w * F @ F.T + b
    ref = ArcCosine(order=1, variance=1.0, weight_variance=w, bias_variance=b).K(F)
    assert torch.allclose(ReluGram().K(G), ref, atol=1e-10, rtol=1e-9)


def test_relu_kernel_is_twice_the_expected_product_of_relus():
    """The NNGP meaning (paper 004 eq. 52): K(G) = 2 E[relu(f_i) relu(f_j)], f ~ N(0, G); MC within 3 SE."""
    F = features(P=3, N=5)
    G = F @ F.T / 5
    g = torch.Generator().manual_seed(1)
    f = torch.randn(200_000, 3, generator=g, dtype=DT) @ torch.linalg.cholesky(G).T
    prod = 2.0 * torch.relu(f)[:, :, None] * torch.relu(f)[:, None, :]  # [S, 3, 3]
    z = (prod.mean(0) - ReluGram().K(G)) / (prod.std(0) / math.sqrt(prod.shape[0]))
    assert z.abs().max() < 3.0


@pytest.mark.parametrize("name", ["relu", "sqexp"])
def test_blocks_agree_with_the_full_matrix(name):
    F = features(P=7)
    G = F @ F.T / 4
    k = build_gram_kernel(name, lengthscale=1.5, variance=0.9)
    full = k.K(G)
    Kii, Kit, ktt = k.blocks(G[:3, :3], G[:3, 3:], G.diagonal()[3:])
    assert torch.allclose(Kii, full[:3, :3], atol=1e-12)
    assert torch.allclose(Kit, full[:3, 3:], atol=1e-12)
    assert torch.allclose(ktt, full.diagonal()[3:], atol=1e-12)
    # batched over samples
    Gs = torch.stack([G, 2.0 * G])
    assert torch.allclose(k.K(Gs)[1], k.K(2.0 * G), atol=1e-12)


@pytest.mark.parametrize("name", ["relu", "sqexp"])
def test_kernel_of_a_gram_matrix_is_positive_semidefinite(name):
    F = features(P=30, N=3, seed=4)  # rank-3 Gram: the kernel must still be PSD
    K = build_gram_kernel(name).K(F @ F.T / 3)
    assert torch.linalg.eigvalsh(K).min() > -1e-10 * K.diagonal().max()


@pytest.mark.parametrize("name", ["relu", "sqexp"])
def test_gradients_are_finite_for_duplicate_points(name):
    F = features(P=4)
    F = torch.cat([F, F[:1]])  # a repeated point: θ = 0 and R = 0 off the diagonal
    G = (F @ F.T / 4).requires_grad_(True)
    build_gram_kernel(name).K(G).sum().backward()
    assert torch.isfinite(G.grad).all()


def test_nngp_kernel_composes_the_layers_and_applies_the_input_affine():
    D = 3
    X, X2 = features(P=5, N=D, seed=2), features(P=4, N=D, seed=3)
    kernels = [ReluGram(variance=1.2), SquaredExponentialGram(lengthscale=0.9)]
    k = NNGPKernel(D, kernels, input_scale_bias=True)
    with torch.no_grad():
        k.affine.scale.assign(torch.tensor([0.5, 2.0, 1.0], dtype=DT))
        k.affine.bias.copy_(torch.tensor([0.1, -0.3, 0.7], dtype=DT))
    A = torch.cat([X, X2]) * torch.tensor([0.5, 2.0, 1.0], dtype=DT) + torch.tensor([0.1, -0.3, 0.7], dtype=DT)
    full = kernels[1].K(kernels[0].K(A @ A.T / D))  # the composition on the joint Gram matrix
    assert torch.allclose(k.K(X, X2), full[:5, 5:], atol=1e-12)
    assert torch.allclose(k.K(X), full[:5, :5], atol=1e-12)
    assert torch.allclose(k.K_diag(X2), full.diagonal()[5:], atol=1e-12)


def test_linear_gram_and_input_affine():
    X = features(P=4, N=3)
    assert torch.allclose(linear_gram(X, X), X @ X.T / 3)
    assert torch.equal(InputAffine(3, enabled=False)(X), X)
    with pytest.raises(ShapeError, match="D=3"):
        InputAffine(3)(features(P=4, N=2))


def test_bad_inputs_are_refused_with_a_message():
    with pytest.raises(ConfigError, match="relu, sqexp"):
        build_gram_kernel("matern")
    with pytest.raises(ShapeError, match="square"):
        ReluGram().K(torch.ones(3, 2, dtype=DT))
    with pytest.raises(ConfigError, match="num_layers"):
        NNGPKernel(3, [])
