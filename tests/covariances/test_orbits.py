"""The generic orbit covariances equal the GP on f built from its definition f(x) = Σ_a w_a g(x_a)."""
import torch

from engine.covariances import Kff_diag, Kuf, Kuu
from engine.inducing import InterDomainPoints
from engine.kernels import RBF
from engine.kernels.orbit import OrbitKernel


class SwapOrbit(OrbitKernel):
    """The two-element orbit {(x1, x2), (x2, x1)}: functions symmetric under swapping coordinates."""

    def orbit(self, X):
        return torch.stack([X, X.flip(-1)], 1)  # [N, 2, 2]


def test_orbit_kernel_matches_its_definition_and_is_invariant():
    g = torch.Generator().manual_seed(0)
    k = SwapOrbit(RBF(2, lengthscale=0.7)).double()
    X, X2 = torch.randn(5, 2, generator=g, dtype=torch.float64), torch.randn(4, 2, generator=g, dtype=torch.float64)
    kg = k.base.K
    ref = 0.25 * (kg(X, X2) + kg(X.flip(-1), X2) + kg(X, X2.flip(-1)) + kg(X.flip(-1), X2.flip(-1)))
    assert torch.allclose(k.K(X, X2), ref, atol=1e-12)
    assert torch.allclose(k.K(X.flip(-1), X2), k.K(X, X2), atol=1e-12)  # invariant
    assert torch.allclose(k.K_diag(X), k.K(X).diagonal(), atol=1e-12)


def test_interdomain_covariances():
    g = torch.Generator().manual_seed(1)
    k = SwapOrbit(RBF(2, lengthscale=0.9)).double()
    Z = InterDomainPoints(torch.randn(6, 2, generator=g, dtype=torch.float64))
    X = torch.randn(5, 2, generator=g, dtype=torch.float64)
    assert torch.allclose(Kuu(Z, k), k.base.K(Z.Z), atol=1e-12)
    ref = 0.5 * (k.base.K(Z.Z, X) + k.base.K(Z.Z, X.flip(-1)))
    assert torch.allclose(Kuf(Z, k, X), ref, atol=1e-12)
    assert torch.allclose(Kff_diag(Z, k, X), k.K(X).diagonal(), atol=1e-12)
