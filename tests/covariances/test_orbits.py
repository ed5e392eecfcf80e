"""The generic orbit covariances equal the GP on f built from its definition f(x) = Σ_a w_a g(x_a)."""
import torch

from invlab.covariances import Kff_diag, Kuf, Kuu
from invlab.inducing import InterDomainPoints
from invlab.kernels import RBF
from invlab.kernels.orbit import OrbitKernel


class SwapOrbit(OrbitKernel):
    """The two-element orbit {(x1, x2), (x2, x1)}: functions symmetric under swapping coordinates."""

    def orbit(self, X):
        return torch.stack([X, X.flip(-1)], 1)  # [N, 2, 2]


def test_orbit_kernel_matches_its_definition_and_is_invariant(place, tol, assert_close):
    g = torch.Generator().manual_seed(0)
    k = place(SwapOrbit(RBF(2, lengthscale=0.7)))
    X, X2 = torch.randn(5, 2, generator=g, dtype=torch.float64), torch.randn(4, 2, generator=g, dtype=torch.float64)
    X, X2 = place(X), place(X2)
    kg = k.base.K
    ref = 0.25 * (kg(X, X2) + kg(X.flip(-1), X2) + kg(X, X2.flip(-1)) + kg(X.flip(-1), X2.flip(-1)))
    assert_close(k.K(X, X2), ref, tol.f64(atol=1e-12))
    assert_close(k.K(X.flip(-1), X2), k.K(X, X2), tol.f64(atol=1e-12))  # invariant
    assert_close(k.K_diag(X), k.K(X).diagonal(), tol.f64(atol=1e-12))


def test_interdomain_covariances(place, tol, assert_close):
    g = torch.Generator().manual_seed(1)
    k = place(SwapOrbit(RBF(2, lengthscale=0.9)))
    Z = place(InterDomainPoints(torch.randn(6, 2, generator=g, dtype=torch.float64)))
    X = place(torch.randn(5, 2, generator=g, dtype=torch.float64))
    assert_close(Kuu(Z, k), k.base.K(Z.Z), tol.f64(atol=1e-12))
    ref = 0.5 * (k.base.K(Z.Z, X) + k.base.K(Z.Z, X.flip(-1)))
    assert_close(Kuf(Z, k, X), ref, tol.f64(atol=1e-12))
    assert_close(Kff_diag(Z, k, X), k.K(X).diagonal(), tol.f64(atol=1e-12))
