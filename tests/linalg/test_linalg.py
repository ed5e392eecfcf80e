"""invlab.linalg: Cholesky with escalating, reported jitter, and the fused whitened solve against plain autograd."""
import warnings

import pytest
import torch

from invlab import settings
from invlab.errors import NumericalError
from invlab.linalg import robust_cholesky, whitened_solve

DT = torch.float64


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def spd(M, seed=0, ridge=0.5):
    A = torch.randn(M, M, generator=gen(seed), dtype=DT)
    return A @ A.T / M + ridge * torch.eye(M, dtype=DT)


def not_quite_psd(M, rank, seed=0):
    """A low-rank PSD matrix shifted down a little: the smallest eigenvalues are −1e-4 (rounding-sized errors of a
    kernel matrix would not reliably fail a Cholesky factorisation)."""
    A = torch.randn(M, rank, generator=gen(seed), dtype=DT)
    return A @ A.T - 1e-4 * torch.eye(M, dtype=DT)


# -- robust_cholesky --------------------------------------------------------------------------------------------------
def test_positive_definite_matrix_uses_the_requested_jitter_without_warning():
    K = spd(6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = robust_cholesky(K, 1e-8)
    assert r.jitter == 1e-8 and not r.escalated
    assert torch.allclose(r.L @ r.L.T, K + 1e-8 * torch.eye(6, dtype=DT), atol=1e-12)
    assert torch.equal(r.L, torch.tril(r.L))
    assert robust_cholesky(K, 0.0).jitter == 0.0


def test_default_jitter_is_the_setting(monkeypatch):
    assert robust_cholesky(spd(4)).jitter == settings.default_jitter()
    monkeypatch.setattr(settings, "default_jitter", lambda: 1e-5)
    assert robust_cholesky(spd(4)).jitter == 1e-5


def test_singular_matrix_escalates_reports_and_warns():
    K = not_quite_psd(8, 3)
    with pytest.warns(RuntimeWarning, match="K_test was not positive definite with jitter 0; used"):
        r = robust_cholesky(K, 0.0, what="K_test")
    assert r.escalated and r.jitter > 0.0
    # the reported jitter is the one in the factor
    assert torch.allclose(r.L @ r.L.T, K + r.jitter * torch.eye(8, dtype=DT), atol=1e-10)
    # the jitter climbs by factors of ten and stops at the first step that works
    lowest = float(torch.linalg.eigvalsh(K).min())  # −1e-4
    assert lowest + r.jitter > 0 and lowest + r.jitter / 10 <= 0
    with pytest.warns(RuntimeWarning):
        r2 = robust_cholesky(K, 1e-14)
    assert r2.escalated and lowest + r2.jitter > 0 and lowest + r2.jitter / 10 <= 0


def test_hopeless_and_non_finite_matrices_are_refused_with_a_message():
    with pytest.raises(NumericalError, match="failed even with jitter"):
        robust_cholesky(-torch.eye(3, dtype=DT), 1e-6)
    with pytest.raises(NumericalError, match="NaN or inf"):
        robust_cholesky(torch.full((3, 3), float("inf"), dtype=DT), 1e-6)


# -- whitened_solve ---------------------------------------------------------------------------------------------------
def plain(K, B, jitter):
    L = torch.linalg.cholesky(K + jitter * torch.eye(K.shape[0], dtype=K.dtype))
    return torch.linalg.solve_triangular(L, B, upper=False)


def test_whitened_solve_forward_is_the_triangular_solve():
    K, B = spd(5), torch.randn(5, 7, generator=gen(1), dtype=DT)
    W, j = whitened_solve(K, B, 1e-7)
    assert j == 1e-7 and torch.allclose(W, plain(K, B, 1e-7), atol=1e-12)


@pytest.mark.parametrize("jitter", [0.0, 1e-6])
def test_whitened_solve_backward_equals_autograd_through_cholesky(jitter):
    """K = A Aᵀ + ridge and B depend on leaf tensors; gradients of a random functional of W agree with autograd
    through `cholesky` and `solve_triangular`."""
    A = torch.randn(5, 5, generator=gen(2), dtype=DT).requires_grad_()
    B = torch.randn(5, 3, generator=gen(3), dtype=DT).requires_grad_()
    G = torch.randn(5, 3, generator=gen(4), dtype=DT)

    def K_of(A):
        return A @ A.T / 5 + 0.5 * torch.eye(5, dtype=DT)

    W, _ = whitened_solve(K_of(A), B, jitter)
    fused = torch.autograd.grad((W * G).sum(), (A, B))
    ref = torch.autograd.grad((plain(K_of(A), B, jitter) * G).sum(), (A, B))
    for a, b in zip(fused, ref):
        assert torch.allclose(a, b, atol=1e-12, rtol=1e-10)


def test_whitened_solve_passes_gradcheck():
    def fn(A, B):
        return whitened_solve(A @ A.T / 4 + 0.5 * torch.eye(4, dtype=DT), B, 0.0)[0]

    A = torch.randn(4, 4, generator=gen(5), dtype=DT).requires_grad_()
    B = torch.randn(4, 2, generator=gen(6), dtype=DT).requires_grad_()
    assert torch.autograd.gradcheck(fn, (A, B))


def test_whitened_solve_escalates_and_reports_its_jitter():
    K = not_quite_psd(6, 2)
    B = torch.randn(6, 2, generator=gen(7), dtype=DT)
    with pytest.warns(RuntimeWarning):
        W, j = whitened_solve(K, B, 0.0)
    assert j > 0.0 and torch.allclose(W, plain(K, B, j), atol=1e-8)
