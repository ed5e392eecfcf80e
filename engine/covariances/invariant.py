"""Covariances and unbiased estimators for invariant kernels (van der Wilk et al. 2018 sec. 4.3–4.4, appendix B).

Inducing points live in the space of g (eq. 13): K_uu = k_g(Z, Z). Everything that involves f uses the
*same* S augmented samples {x_n^(s)} of each input:

    K_uf[m, n, s] = k_g(z_m, x_n^(s))                               [M, N, S]   (eq. 17, per sample)
    μ̂_n   = (1/S) Σ_s h_ns,   h_ns = k_g(Z, x_n^(s))ᵀ K_uu⁻¹ m                   (eq. 16)
    μ²̂_n  = Î[r(s, s') = h_ns h_ns']                                            (eq. 18 with eq. 21)
    σ²̂_n  = k̂_f(x_n, x_n) − Î[r = a_sᵀ (K_uu − S_q) a_s'],  a_s = K_uu⁻¹ k_g(Z, x_n^(s))   (eq. 19)
    k̂_f   = Î[r = k_g(x_n^(s), x_n^(s'))]                                      (eq. 21)

with one pair estimator Î for all of them (`invlab.kernels.invariant.pair_estimate`: weights for i.i.d. samples of
a density and for S of a P-element orbit drawn without replacement; S = P is the exact double sum). Each double
sum is formed as ‖Σ_s v_s‖² − Σ_s ‖v_s‖² from per-sample vectors, so no [S, S] matrix is built except for k_g
among the samples themselves. Here: K_uu, K_uf per sample and k̂_f; μ̂, μ²̂, σ²̂ from them are q(u) → q(f), in
`invlab.models.conditionals.orbit_moments`. The estimates plug linearly into the Gaussian (and Pólya-Gamma)
expected log-likelihood, so the ELBO estimate is unbiased; σ²̂ can come out negative for a single draw.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..errors import ShapeError
from ..inducing import InterDomainPoints
from ..kernels.base import Stationary
from ..kernels.invariant import InvariantKernel, estimate_kff, pair_kff, pair_weights  # noqa: F401 (re-export)
from .dispatch import Kff_diag, Kuf


@dataclass
class OrbitSample:
    """S augmented copies per input, shared by every estimated quantity. points: [N, S, E]."""

    points: torch.Tensor
    orbit_size: int | None  # P (finite orbit, sampled without replacement) or None (density)
    cache: dict = field(default_factory=dict, repr=False)  # per-sample quantities K_uf and k̂_f both need

    @property
    def num_samples(self) -> int:
        """S, the number of orbit points drawn per input (`points` is `[N, S, ...]`)."""
        return self.points.shape[1]


def sample_orbit(kernel: InvariantKernel, X) -> OrbitSample:
    """X is either inputs [N, ...] (then `kernel.num_samples` are drawn) or an `OrbitSample` already drawn."""
    if isinstance(X, OrbitSample):
        return X
    return OrbitSample(kernel.sample_orbit(X), kernel.orbit_size)


# -- stationary k_g: one pass over the augmented images serves K_uf and k̂_f -----------------------------------------
# The augmented images [N·S, E] are the largest tensors of a step. With a stationary k_g both K_uf and the
# per-input blocks need only ‖a‖² and inner products, so the images are scaled (ARD only) and squared once per
# sample draw and the isotropic lengthscale is applied to the small [M, N, S] / [N, S, S] results instead.
def _geometry(base: Stationary, orbit: OrbitSample):
    """(A / ℓ for ARD else A [N, S, E], ‖·‖² of it [N, S], factor for r²), cached on the orbit sample."""
    if "geometry" not in orbit.cache:
        A = orbit.points / base.lengthscale() if base.ard else orbit.points
        orbit.cache["geometry"] = (A, (A * A).sum(-1))
    A, sq = orbit.cache["geometry"]
    return A, sq, (1.0 if base.ard else base.lengthscale() ** -2)


def _kuf_stationary(Z: torch.Tensor, base: Stationary, orbit: OrbitSample) -> torch.Tensor:
    A, sq, factor = _geometry(base, orbit)
    N, S, E = A.shape
    Zs = Z / base.lengthscale() if base.ard else Z
    r2 = (Zs * Zs).sum(-1)[:, None] + sq.reshape(1, N * S) - 2.0 * Zs @ A.reshape(N * S, E).T  # [M, N·S]
    return (base.variance() * base.K_r2(r2.clamp_min(0.0) * factor)).reshape(-1, N, S)


def _kff_stationary(base: Stationary, orbit: OrbitSample, P: int | None) -> torch.Tensor:
    A, sq, factor = _geometry(base, orbit)
    r2 = sq[:, :, None] + sq[:, None, :] - 2.0 * A @ A.transpose(1, 2)  # [N, S, S]
    return pair_kff(base.variance() * base.K_r2(r2.clamp_min(0.0) * factor), P)


@Kuf.register(InterDomainPoints, InvariantKernel)
def _kuf_invariant(inducing, kernel, X):
    """Per-sample cross-covariances k_g(z_m, x_n^(s)): [M, N, S]."""
    orbit = sample_orbit(kernel, X)
    N, S, E = orbit.points.shape  # [N, S, E]
    if E != inducing.Z.shape[1]:
        raise ShapeError(f"inducing points have {inducing.Z.shape[1]} dimensions but the augmented inputs have {E}")
    if isinstance(kernel.base, Stationary):
        return _kuf_stationary(inducing.Z, kernel.base, orbit)
    return kernel.base.K(inducing.Z, orbit.points.reshape(N * S, E)).reshape(-1, N, S)


@Kff_diag.register(InterDomainPoints, InvariantKernel)
def _kff_diag_invariant(inducing, kernel, X):
    """Unbiased estimate of k_f(x_n, x_n) from the same samples: [N]."""
    orbit = sample_orbit(kernel, X)
    if isinstance(kernel.base, Stationary):
        return _kff_stationary(kernel.base, orbit, orbit.orbit_size)
    return estimate_kff(kernel.base, orbit.points, orbit.orbit_size)

