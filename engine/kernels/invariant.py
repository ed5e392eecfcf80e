"""The invariant kernel of van der Wilk et al. 2018: k_g averaged over an augmentation distribution or a finite orbit.

    k_f(x, x') = E_{x_a ~ p(·|x)} E_{x'_a ~ p(·|x')} [k_g(x_a, x'_a)]          (eq. 8; eq. 7 as an average)

It is an `OrbitKernel` whose orbit is the augmentation's: the exact orbit for a finite one (so the
brute-force `K` is exact), `num_samples` draws for a density (a Monte-Carlo orbit). Training never
forms `K`: the covariances in `invlab.covariances.invariant` use S samples per input and the unbiased
estimators of eq. 16–21 / appendix B. `K_diag` here is that unbiased estimator too (the brute-force
double sum over a sampled orbit would count each sample with itself and be biased upwards).

The estimators all average a pair function r over the orbit, I = E_a E_b r(a, b), with one pair estimator

    Î = c_off Σ_{s≠s'} r(s, s') + c_diag Σ_s r(s, s)
    density (i.i.d. samples, eq. 21 / B eq. 15):      c_off = 1 / (S(S−1)),        c_diag = 0
    finite orbit of P, S drawn without replacement    c_off = (P−1) / (P·S(S−1)),  c_diag = 1 / (P·S)
      (appendix B eq. 8 divided by P², since the engine averages over the orbit rather than sums)

For S = P the finite-orbit weights are both 1/P²: the exact double sum. It lives here, with the kernel, so
that the kernel's `K_diag`, the covariances (`invlab.covariances.invariant`) and the moments of q(f)
(`invlab.models.conditionals.orbit_moments`) share it without importing each other.
"""
from __future__ import annotations

import torch

from ..errors import ConfigError
from ..transforms import Augmentation
from .base import Kernel, Stationary, flatten
from .orbit import OrbitKernel


def pair_weights(S: int, P: int | None) -> tuple[float, float]:
    """(c_off, c_diag) of the pair estimator Î for S samples of a density (P None) or of a P-element orbit."""
    if P is not None and not 1 <= S <= P:
        raise ConfigError(f"cannot draw S={S} distinct elements of an orbit of P={P}")
    if S == 1:
        if P == 1:
            return 0.0, 1.0
        raise ConfigError("the pair estimator needs S ≥ 2 samples per input (eq. 21 pairs distinct samples)")
    if P is None:
        return 1.0 / (S * (S - 1)), 0.0
    return (P - 1) / (P * S * (S - 1)), 1.0 / (P * S)


def pair_estimate(total: torch.Tensor, diagonal: torch.Tensor, S: int, P: int | None) -> torch.Tensor:
    """Î from the full double sum Σ_{s,s'} r and its diagonal Σ_s r(s, s)."""
    c_off, c_diag = pair_weights(S, P)
    return c_off * (total - diagonal) + c_diag * diagonal


def pair_kff(blocks: torch.Tensor, P: int | None) -> torch.Tensor:
    """k̂_f(x_n, x_n) from the Gram blocks k_g(x_n^(s), x_n^(s')) [N, S, S] of each input's samples. [N]"""
    return pair_estimate(blocks.sum((1, 2)), blocks.diagonal(dim1=1, dim2=2).sum(1), blocks.shape[1], P)


def estimate_kff(base: Kernel, A: torch.Tensor, P: int | None) -> torch.Tensor:
    """k̂_f(x_n, x_n) from the samples A [N, S, E] of each input (eq. 21 / appendix B eq. 8). [N]"""
    return pair_kff(gram_blocks(base, A), P)


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
    """k(x, x') = E_{x_a ~ p(·|x), x'_a ~ p(·|x')}[k_g(x_a, x'_a)], the kernel of f(x) = E[g(x_a)] for an augmentation
    distribution, estimated from `num_samples` samples per input (van der Wilk, Bauer, John & Hensman, "Learning
    invariances using the marginal likelihood", 2018, eq. 5–6)."""
    def __init__(self, base: Kernel, augmentation: Augmentation, num_samples: int = 8):
        super().__init__(base)
        self.augmentation = augmentation
        self.num_samples = int(num_samples)
        if self.num_samples < 2 and augmentation.orbit_size != 1:
            raise ConfigError("num_samples must be at least 2 (the estimators pair distinct samples), "
                              f"got {num_samples}")

    @property
    def orbit_size(self) -> int | None:
        """The size of the augmentation's finite orbit, or None for a continuous one (then the orbit is sampled)."""
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
        return estimate_kff(self.base, self.sample_orbit(X), self.orbit_size)

