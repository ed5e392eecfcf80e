"""The invariant kernel of paper 000: k_g averaged over an augmentation distribution or a finite orbit.

    k_f(x, x') = E_{x_a ~ p(·|x)} E_{x'_a ~ p(·|x')} [k_g(x_a, x'_a)]          (eq. 8; eq. 7 as an average)

It is an `OrbitKernel` whose orbit is the augmentation's: the exact orbit for a finite one (so the
brute-force `K` is exact), `num_samples` draws for a density (a Monte-Carlo orbit). Training never
forms `K`: the covariances in `engine.covariances.invariant` use S samples per input and the unbiased
estimators of eq. 16–21 / appendix B. `K_diag` here is that unbiased estimator too (the brute-force
double sum over a sampled orbit would count each sample with itself and be biased upwards).
"""
from __future__ import annotations

import torch

from ..errors import ConfigError
from ..transforms import Augmentation
from .base import Kernel, Stationary, flatten
from .orbit import OrbitKernel


def gram_blocks(kernel: Kernel, A: torch.Tensor) -> torch.Tensor:
    """k(a_s, a_s') among the S points of each group: A [N, S, E] → [N, S, S].

    Stationary kernels are batched by hand (one bmm); others through vmap, which is several times slower on
    the CPU for large E (its batched element-wise kernels take a slow strided path)."""
    if isinstance(kernel, Stationary):
        As = A / kernel.lengthscale()  # [N, S, E]
        sq = (As * As).sum(-1)  # [N, S]
        r2 = (sq[:, :, None] + sq[:, None, :] - 2.0 * As @ As.transpose(1, 2)).clamp_min(0.0)  # [N, S, S]
        return kernel.variance() * kernel.K_r2(r2)
    try:
        return torch.vmap(kernel.K)(A)
    except Exception:  # a kernel with an operation vmap cannot batch: one group at a time
        return torch.stack([kernel.K(flatten(a)) for a in A])


class InvariantKernel(OrbitKernel):
    def __init__(self, base: Kernel, augmentation: Augmentation, num_samples: int = 8):
        super().__init__(base)
        self.augmentation = augmentation
        self.num_samples = int(num_samples)
        if self.num_samples < 2 and augmentation.orbit_size != 1:
            raise ConfigError(f"num_samples must be at least 2 (the estimators pair distinct samples), got {num_samples}")

    @property
    def orbit_size(self) -> int | None:
        return self.augmentation.orbit_size

    def sample_orbit(self, X: torch.Tensor, S: int | None = None, generator=None) -> torch.Tensor:
        """S augmented copies per input, flattened for k_g: [N, ...] → [N, S, E]."""
        A = self.augmentation.sample(X, self.num_samples if S is None else S, generator)
        return A.reshape(A.shape[0], A.shape[1], -1)

    def orbit(self, X: torch.Tensor) -> torch.Tensor:
        """The exact orbit [N, P, E] for a finite orbit; `num_samples` draws for a density."""
        if self.orbit_size is not None:
            A = self.augmentation.elements(X)
            return A.reshape(A.shape[0], A.shape[1], -1)
        return self.sample_orbit(X)

    def _K_diag(self, X):
        from ..covariances.invariant import estimate_kff

        return estimate_kff(self.base, self.sample_orbit(X), self.orbit_size)

