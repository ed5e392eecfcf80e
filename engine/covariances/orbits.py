"""Inter-domain inducing points in the space of g with an orbit kernel k_f = Σ_a Σ_b w_a w_b k_g(x_a, x'_b).

u = g(Z), so K_uu = k_g(Z, Z) and K_uf[m, n] = Σ_a w_a k_g(z_m, x_n,a) (van der Wilk et al. 2018 eq. 13, van der Wilk,
Rasmussen & Hensman 2017 eq. 15). Generic paths, brute force over the materialised orbit; families register faster pairs
for their own kernel types, and these stay the reference their tests compare with.
"""
import torch

from ..inducing import InterDomainPoints
from ..kernels.orbit import OrbitKernel
from .dispatch import Kff_diag, Kuf, Kuu


def orbit_cross(kernel: OrbitKernel, Z: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """Σ_a w_a k_g(z, x_a): the covariance of g(z) with f(x). Z [M, E], X [N, ...] → [M, N] (brute force)."""
    A = kernel.orbit(X)  # [N, P, E]
    w = kernel.orbit_weights(X, A.shape[1])  # [N, P]
    Kg = kernel.base.K(Z, A.reshape(-1, A.shape[-1])).reshape(Z.shape[0], A.shape[0], A.shape[1])  # [M, N, P]
    return (Kg * w[None]).sum(-1)


@Kuu.register(InterDomainPoints, OrbitKernel)
def _kuu_interdomain(inducing, kernel):
    return kernel.base.K(inducing.Z)  # [M, M] = k_g(Z, Z)


@Kuf.register(InterDomainPoints, OrbitKernel)
def _kuf_interdomain(inducing, kernel, X):
    return orbit_cross(kernel, inducing.Z, X)  # [M, N]


@Kff_diag.register(InterDomainPoints, OrbitKernel)
def _kff_diag_interdomain(inducing, kernel, X):
    return kernel.K_diag(X)  # [N]
