"""GPyTorch base kernels as the lab's patch-response kernels k_g, so that the lab's covariance arithmetic evaluates
them while GPyTorch keeps owning their hyperparameters.

`patch_kernel(kernel)` takes a GPyTorch kernel on patch (or orbit-element) vectors of size E and returns a lab
`Kernel`:

- `RBFKernel`, or `MaternKernel(nu=2.5)`, each optionally inside a `ScaleKernel`: a lab `RBF` / `Matern52` whose
  lengthscale (one, or E with `ard_num_dims=E`) and variance are the GPyTorch kernel's own, read at every call
  (constraints applied, gradients reaching GPyTorch's raw parameters). The lab's memory-bounded patch sums
  (`invlab.covariances.patches`, van der Wilk, Rasmussen & Hensman 2017, appendix A.2) then apply.
- any other GPyTorch kernel: a lab kernel that evaluates it as it is (`kernel(A, B).to_dense()`); the orbit sums
  over it are then brute force.

The GPyTorch kernel is held outside the lab module's tree (it stays a submodule of the GPyTorch kernel that wraps
it, which moves it with `.to()` and lists its parameters once).
"""
from __future__ import annotations

import torch

from ..kernels.base import Kernel, flatten
from ..kernels.stationary import RBF, Matern52


def _parts(kernel):
    """(the stationary GPyTorch kernel, its ScaleKernel or None) of an RBF / Matérn-5/2 k_g, else None."""
    from gpytorch.kernels import MaternKernel, RBFKernel, ScaleKernel

    scale = None
    if isinstance(kernel, ScaleKernel):
        scale, kernel = kernel, kernel.base_kernel
    if isinstance(kernel, RBFKernel) or (isinstance(kernel, MaternKernel) and float(kernel.nu) == 2.5):
        if kernel.active_dims is not None or (scale is not None and scale.active_dims is not None):
            return None  # a slice of the patch: evaluated as GPyTorch does
        return kernel, scale
    return None


class _Borrowed:
    """The lab's `Stationary` interface (`lengthscale()`, `variance()`, `ard`) read from a GPyTorch kernel."""

    def __init__(self, inner, scale):
        Kernel.__init__(self)
        self._gpytorch = (inner, scale)  # a tuple, so not registered as submodules here
        self.ard = bool(inner.ard_num_dims and inner.ard_num_dims > 1)
        self.input_dim = inner.ard_num_dims

    def lengthscale(self) -> torch.Tensor:
        """The GPyTorch kernel's lengthscale: a scalar, or [E] with ARD."""
        ell = self._gpytorch[0].lengthscale  # [1, 1] or [1, E]
        return ell.reshape(-1) if self.ard else ell.reshape(())

    def variance(self) -> torch.Tensor:
        """σ²: the ScaleKernel's outputscale, or 1 without one (a scalar tensor)."""
        inner, scale = self._gpytorch
        if scale is None:
            return torch.ones((), dtype=inner.lengthscale.dtype, device=inner.lengthscale.device)
        return scale.outputscale.reshape(())


class BorrowedRBF(_Borrowed, RBF):
    """A GPyTorch `RBFKernel` (optionally scaled) as the lab's `RBF`: σ² exp(−r²/2), r = ‖z − z'‖/ℓ."""


class BorrowedMatern52(_Borrowed, Matern52):
    """A GPyTorch `MaternKernel(nu=2.5)` (optionally scaled) as the lab's `Matern52`."""


class AsIs(Kernel):
    """Any GPyTorch kernel evaluated as it is, as a lab kernel on flattened inputs [N, E]."""

    def __init__(self, kernel):
        super().__init__()
        self._gpytorch = (kernel,)

    def _K(self, X, X2):
        return self._gpytorch[0](X, X2).to_dense()

    def _K_diag(self, X):
        return self._gpytorch[0](X, diag=True)

    def K(self, X, X2=None):
        """k(X, X2) [N, N2] by the GPyTorch kernel."""
        X = flatten(X)
        return self._K(X, X if X2 is None else flatten(X2))


def patch_kernel(kernel) -> Kernel:
    """The lab kernel that evaluates the GPyTorch kernel `kernel` (see the module's doc)."""
    parts = _parts(kernel)
    if parts is None:
        return AsIs(kernel)
    from gpytorch.kernels import RBFKernel

    inner, scale = parts
    return (BorrowedRBF if isinstance(inner, RBFKernel) else BorrowedMatern52)(inner, scale)


__all__ = ["AsIs", "BorrowedMatern52", "BorrowedRBF", "patch_kernel"]
