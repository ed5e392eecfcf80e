"""Inter-domain inducing points in the space of g with an orbit kernel k_f = Σ_a Σ_b w_a w_b k_g(x_a, x'_b).

Generic (brute-force over the orbit) paths; families register faster pairs for their own kernel types.
"""
from ..inducing import InterDomainPoints
from ..kernels.orbit import OrbitKernel
from . import Kff_diag, Kuf, Kuu


@Kuu.register(InterDomainPoints, OrbitKernel)
def _kuu_interdomain(inducing, kernel):
    return kernel.base.K(inducing.Z)  # [M, M] = k_g(Z, Z)


@Kuf.register(InterDomainPoints, OrbitKernel)
def _kuf_interdomain(inducing, kernel, X):
    return kernel.cross_g(inducing.Z, X)  # [M, N]


@Kff_diag.register(InterDomainPoints, OrbitKernel)
def _kff_diag_interdomain(inducing, kernel, X):
    return kernel.K_diag(X)  # [N]
