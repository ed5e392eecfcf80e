"""`invlab.testing.check_kernel`: the kernel contract on anyone's kernel. It passes on every built-in and on a
rational-quadratic kernel written as the README shows, and each broken kernel fails with the property named."""
from __future__ import annotations

import pytest
import torch

from invlab.kernels import REGISTRY, Kernel, Stationary
from invlab.testing import PROPERTIES, KernelContractError, check_kernel


class RationalQuadratic(Stationary):
    """σ² (1 + r²/(2α))^(−α), as in the README (not registered here)."""

    def __init__(self, input_dim, lengthscale=1.0, variance=1.0, ard=False, alpha=1.0):
        super().__init__(input_dim, lengthscale, variance, ard)
        self.alpha = float(alpha)

    def K_r2(self, r2):
        return (1.0 + r2 / (2.0 * self.alpha)) ** (-self.alpha)


class NotPSD(Stationary):
    """1 − r²: symmetric, right diagonal, but its Gram matrices have negative eigenvalues."""

    def K_r2(self, r2):
        return 1.0 - r2


class Asymmetric(Stationary):
    def K_r2(self, r2):
        return torch.exp(-r2)

    def _K(self, X, X2):
        return super()._K(X, X2) + 0.1 * X[:, :1]


class WrongDiagonal(Stationary):
    def K_r2(self, r2):
        return torch.exp(-r2)

    def _K_diag(self, X):
        return 2 * super()._K_diag(X)


class AlwaysFloat64(Stationary):
    def K_r2(self, r2):
        return torch.exp(-r2).double()

    def _K_diag(self, X):
        return super()._K_diag(X).double()


class Detached(Stationary):
    def _K(self, X, X2):
        return super()._K(X, X2).detach()

    def K_r2(self, r2):
        return torch.exp(-r2)


class WrongShape(Kernel):
    def _K(self, X, X2):
        return torch.ones(X.shape[0], X.shape[0], dtype=X.dtype)

    def _K_diag(self, X):
        return torch.ones(X.shape[0], dtype=X.dtype)


@pytest.mark.parametrize("name", list(REGISTRY.parts))
def test_every_registered_kernel_passes_by_name(name):
    assert check_kernel(name) == PROPERTIES


@pytest.mark.parametrize("kernel", [RationalQuadratic(5, alpha=2.0), RationalQuadratic(5, 0.8, 1.5, ard=True)],
                         ids=["rq", "rq-ard"])
def test_a_users_rational_quadratic_kernel_passes(kernel):
    assert check_kernel(kernel) == PROPERTIES


@pytest.mark.parametrize("kernel, says", [
    (NotPSD(5), "kernel NotPSD fails the kernel contract: PSD: the Gram matrix of 30 random inputs has eigenvalue -"),
    (Asymmetric(5), "kernel Asymmetric fails the kernel contract: symmetry: K(X) differs from its transpose"),
    (WrongDiagonal(5), "kernel WrongDiagonal fails the kernel contract: diagonal: K_diag(X) differs from the diagonal"),
    (AlwaysFloat64(5), "kernel AlwaysFloat64 fails the kernel contract: dtypes: torch.float32 inputs gave K in "
                       "torch.float64"),
    (Detached(5), "kernel Detached fails the kernel contract: gradients: K does not depend on its hyper-parameters "
                  "(lengthscale.raw, variance.raw)"),
    (WrongShape(), "kernel WrongShape fails the kernel contract: shapes: K(X, X2) for 30 and 10 inputs has shape "
                   "(30, 30); expected (30, 10)"),
], ids=["not-psd", "asymmetric", "wrong-diagonal", "wrong-dtype", "no-gradient", "wrong-shape"])
def test_a_broken_kernel_fails_with_the_property_named(kernel, says):
    with pytest.raises(KernelContractError) as info:
        check_kernel(kernel)
    assert says in str(info.value) and "\n" not in str(info.value)
    assert isinstance(info.value, AssertionError)  # reads as a test failure under pytest


def test_an_unknown_name_lists_the_registered_kernels():
    with pytest.raises(Exception, match="unknown kernel 'nope'; choose one of rbf, matern52"):
        check_kernel("nope")
