"""Inducing points with any plain kernel: u = f(Z)."""
from ..inducing import InducingPoints
from ..kernels import Kernel
from .dispatch import Kff_diag, Kuf, Kuu


@Kuu.register(InducingPoints, Kernel)
def _kuu_points(inducing: InducingPoints, kernel: Kernel):
    return kernel.K(inducing.Z)  # [M, M]


@Kuf.register(InducingPoints, Kernel)
def _kuf_points(inducing: InducingPoints, kernel: Kernel, X):
    return kernel.K(inducing.Z, X)  # [M, N]


@Kff_diag.register(InducingPoints, Kernel)
def _kff_diag_points(inducing: InducingPoints, kernel: Kernel, X):
    return kernel.K_diag(X)  # [N]
