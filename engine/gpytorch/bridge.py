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
    """A GPyTorch kernel's lengthscale and σ², read at every call in the shapes the lab's `Stationary` kernels call
    their own: the part a borrowing kernel holds in place of its `Positive` parameters."""

    def __init__(self, inner, scale):
        self.inner, self.scale = inner, scale  # plain attributes: the lab kernel does not register them as submodules
        self.ard = bool(inner.ard_num_dims and inner.ard_num_dims > 1)

    def lengthscale(self) -> torch.Tensor:
        """The GPyTorch kernel's lengthscale: a scalar, or [E] with ARD."""
        ell = self.inner.lengthscale  # [1, 1] or [1, E]
        return ell.reshape(-1) if self.ard else ell.reshape(())

    def variance(self) -> torch.Tensor:
        """σ²: the ScaleKernel's outputscale, or 1 without one (a scalar tensor)."""
        if self.scale is None:
            return torch.ones((), dtype=self.inner.lengthscale.dtype, device=self.inner.lengthscale.device)
        return self.scale.outputscale.reshape(())


def _borrow(kernel: Kernel, inner, scale) -> None:
    """Give the lab kernel `kernel` the GPyTorch kernel's hyperparameters as its `lengthscale()` and `variance()`."""
    Kernel.__init__(kernel)
    borrowed = _Borrowed(inner, scale)
    kernel.lengthscale, kernel.variance = borrowed.lengthscale, borrowed.variance
    kernel.ard, kernel.input_dim = borrowed.ard, inner.ard_num_dims


class BorrowedRBF(RBF):
    """A GPyTorch `RBFKernel` (optionally scaled) as the lab's `RBF`: σ² exp(−r²/2), r = ‖z − z'‖/ℓ."""

    def __init__(self, inner, scale):
        _borrow(self, inner, scale)


class BorrowedMatern52(Matern52):
    """A GPyTorch `MaternKernel(nu=2.5)` (optionally scaled) as the lab's `Matern52`."""

    def __init__(self, inner, scale):
        _borrow(self, inner, scale)


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
