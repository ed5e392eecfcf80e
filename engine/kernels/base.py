"""Kernel base classes (GPflow 2 split: a kernel only knows `K(X, X2)` and `K_diag(X)`).

Inputs are `[N, D]`; anything with more trailing dimensions (images `[N, C, H, W]`) is flattened to
`[N, D]` here, so leaf kernels never see shapes. `Stationary` owns the (ARD) lengthscales and the signal
variance; a leaf stationary kernel only defines `K_r2`, its profile κ as a function of the scaled squared
distance r², and where it has them `K_r2_derivatives`, κ with its first two derivatives in r² in closed form.
"""
from __future__ import annotations

import torch
from torch import nn

from ..errors import ShapeError
from ..parameters import Positive, positive_init


def flatten(X: torch.Tensor) -> torch.Tensor:
    """Kernel inputs as a matrix [N, D]: images [N, C, H, W] (or any [N, ...]) are flattened; a vector is refused with a
    ShapeError."""
    if X.dim() == 1:
        raise ShapeError("kernel inputs must be [N, D] (or [N, C, H, W] images); "
                         f"got a vector of shape {tuple(X.shape)}")
    return X if X.dim() == 2 else X.reshape(X.shape[0], -1)


class Kernel(nn.Module):
    """k(x, x'). Subclasses implement `_K(X, X2)` and `_K_diag(X)` on flattened `[N, D]` inputs."""

    def K(self, X: torch.Tensor, X2: torch.Tensor | None = None) -> torch.Tensor:  # [N, N2]
        """The covariance matrix k(X, X2) [N, N2] (X2 = X when omitted); inputs [N, D] or images, flattened; a mismatch
        in D raises ShapeError."""
        X = flatten(X)
        X2 = X if X2 is None else flatten(X2)
        if X.shape[1] != X2.shape[1]:
            raise ShapeError(f"kernel inputs disagree in dimension: {X.shape[1]} vs {X2.shape[1]}")
        return self._K(X, X2)

    def K_diag(self, X: torch.Tensor) -> torch.Tensor:  # [N]
        """The diagonal of k(X, X) [N], without forming the matrix."""
        return self._K_diag(flatten(X))

    def _K(self, X, X2):  # pragma: no cover - abstract
        raise NotImplementedError

    def _K_diag(self, X):  # pragma: no cover - abstract
        raise NotImplementedError

    def forward(self, X, X2=None):
        """`kernel(X, X2)` is `kernel.K(X, X2)` [N, N2]."""
        return self.K(X, X2)


def square_distance(X: torch.Tensor, X2: torch.Tensor) -> torch.Tensor:
    """||x - x'||² by the inner-product expansion, clamped at zero against cancellation. [N, N2]"""
    Xs = (X * X).sum(-1)
    X2s = (X2 * X2).sum(-1)
    r2 = Xs[:, None] + X2s[None, :] - 2.0 * X @ X2.T
    return r2.clamp_min(0.0)


class Stationary(Kernel):
    """σ² κ(r²) with r² = Σ_d (x_d − x'_d)² / ℓ_d². `ard=True` learns one lengthscale per input dimension."""

    def __init__(self, input_dim: int | None = None, lengthscale: float = 1.0, variance: float = 1.0,
                 ard: bool = False):
        super().__init__()
        if ard and not input_dim:
            raise ShapeError("an ARD kernel needs input_dim (the number of input dimensions D)")
        self.input_dim = input_dim
        self.ard = ard
        init = positive_init(lengthscale, "lengthscale")
        shape = (input_dim,) if ard else ()
        self.lengthscale = Positive(torch.full(shape, init, dtype=torch.float64), name="lengthscale")
        self.variance = Positive(positive_init(variance, "variance"), name="variance")

    def scaled_square_distance(self, X, X2):
        """‖(x − x')/ℓ‖² between the rows of X [N, D] and X2 [N2, D], divided by the (ARD) lengthscales: [N, N2]."""
        ell = self.lengthscale()
        if self.ard and X.shape[1] != ell.shape[0]:
            raise ShapeError(f"ARD kernel was built for D={ell.shape[0]} inputs but got D={X.shape[1]}")
        return square_distance(X / ell, X2 / ell)

    def _K(self, X, X2):
        return self.variance() * self.K_r2(self.scaled_square_distance(X, X2))

    def _K_diag(self, X):
        return self.variance().expand(X.shape[0]).clone()

    def K_r2(self, r2: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        """κ(r²)."""
        raise NotImplementedError

    # `K_r2_derivatives(r2) -> (κ, dκ/dr², d²κ/d(r²)²)` in closed form, defined by the leaf kernels that have one;
    # None for the others, whose derivatives the callers take by autograd through `K_r2` (or refuse).
    K_r2_derivatives = None
