"""Covariances and unbiased estimators for invariant kernels (paper 000 sec. 4.3–4.4, appendix B).

Inducing points live in the space of g (eq. 13): K_uu = k_g(Z, Z). Everything that involves f uses the
*same* S augmented samples {x_n^(s)} of each input:

    K_uf[m, n, s] = k_g(z_m, x_n^(s))                               [M, N, S]   (eq. 17, per sample)
    μ̂_n   = (1/S) Σ_s h_ns,   h_ns = k_g(Z, x_n^(s))ᵀ K_uu⁻¹ m                   (eq. 16)
    μ²̂_n  = Î[r(s, s') = h_ns h_ns']                                            (eq. 18 with eq. 21)
    σ²̂_n  = k̂_f(x_n, x_n) − Î[r = a_sᵀ (K_uu − S_q) a_s'],  a_s = K_uu⁻¹ k_g(Z, x_n^(s))   (eq. 19)
    k̂_f   = Î[r = k_g(x_n^(s), x_n^(s'))]                                      (eq. 21)

with one pair estimator Î for all of them, for the orbit *average* I = E_a E_b r(a, b):

    Î = c_off Σ_{s≠s'} r(s, s') + c_diag Σ_s r(s, s)
    density (i.i.d. samples, eq. 21 / B eq. 15):      c_off = 1 / (S(S−1)),        c_diag = 0
    finite orbit of P, S drawn without replacement    c_off = (P−1) / (P·S(S−1)),  c_diag = 1 / (P·S)
      (appendix B eq. 8 divided by P², since the engine averages over the orbit rather than sums)

For S = P the finite-orbit weights are both 1/P²: the exact double sum. Each double sum is formed as
‖Σ_s v_s‖² − Σ_s ‖v_s‖² from per-sample vectors, so no [S, S] matrix is built except for k_g among
the samples themselves. The estimates plug linearly into the Gaussian (and Pólya-Gamma) expected
log-likelihood, so the ELBO estimate is unbiased; σ²̂ can come out negative for a single draw.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..errors import ConfigError, ShapeError
from ..inducing import InterDomainPoints
from ..kernels.base import Kernel, Stationary
from ..kernels.invariant import InvariantKernel, gram_blocks
from . import Kff_diag, Kuf, Kuu


@dataclass
class OrbitSample:
    """S augmented copies per input, shared by every estimated quantity. points: [N, S, E]."""

    points: torch.Tensor
    orbit_size: int | None  # P (finite orbit, sampled without replacement) or None (density)
    cache: dict = field(default_factory=dict, repr=False)  # per-sample quantities K_uf and k̂_f both need

    @property
    def num_samples(self) -> int:
        return self.points.shape[1]


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


def sample_orbit(kernel: InvariantKernel, X) -> OrbitSample:
    """X is either inputs [N, ...] (then `kernel.num_samples` are drawn) or an `OrbitSample` already drawn."""
    if isinstance(X, OrbitSample):
        return X
    return OrbitSample(kernel.sample_orbit(X), kernel.orbit_size)


def estimate_kff(base: Kernel, A: torch.Tensor, P: int | None) -> torch.Tensor:
    """k̂_f(x_n, x_n) from the samples A [N, S, E] of each input (eq. 21 / appendix B eq. 8). [N]"""
    return _pair_kff(gram_blocks(base, A), P)


def _pair_kff(blocks: torch.Tensor, P: int | None) -> torch.Tensor:
    return pair_estimate(blocks.sum((1, 2)), blocks.diagonal(dim1=1, dim2=2).sum(1), blocks.shape[1], P)


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
    return _pair_kff(base.variance() * base.K_r2(r2.clamp_min(0.0) * factor), P)


@Kuu.register(InterDomainPoints, InvariantKernel)
def _kuu_invariant(inducing, kernel):
    return kernel.base.K(inducing.Z)  # [M, M] = k_g(Z, Z)


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


def sampled_moments(Kuf: torch.Tensor, Luu: torch.Tensor, kff: torch.Tensor, q_mu: torch.Tensor,
                    q_sqrt: torch.Tensor, whiten: bool, P: int | None):
    """Unbiased μ̂, μ²̂, σ²̂ of q(f(x_n)) from per-sample K_uf [M, N, S], chol(K_uu) [M, M], k̂_f [N],
    q_mu [M, L], q_sqrt [L, M, M] (or its diagonals [L, M]). Returns three [N, L] tensors."""
    M, N, S = Kuf.shape
    W = torch.linalg.solve_triangular(Luu, Kuf.reshape(M, N * S), upper=False)  # [M, N·S] = L_uu⁻¹ k_g(Z, x^(s))
    A = W if whiten else torch.linalg.solve_triangular(Luu.T, W, upper=True)  # [M, N·S]
    return moments_from_solves(W.reshape(M, N, S), A.reshape(M, N, S), kff, q_mu, q_sqrt, P)


def moments_from_solves(W: torch.Tensor, A: torch.Tensor, kff: torch.Tensor, q_mu: torch.Tensor, q_sqrt: torch.Tensor,
                        P: int | None):
    """μ̂, μ²̂, σ²̂ [N, L] from W = L_uu⁻¹ K_uf and A (= W whitened, K_uu⁻¹ K_uf otherwise), both [M, N, S]."""
    M, N, S = W.shape
    L = q_mu.shape[1]
    h = (A.reshape(M, N * S).T @ q_mu).reshape(N, S, L)  # per-sample means
    mu = h.mean(1)  # [N, L]
    mu2 = pair_estimate(h.sum(1) ** 2, (h ** 2).sum(1), S, P)  # [N, L]
    prior_term = pair_estimate((W.sum(2) ** 2).sum(0), (W ** 2).sum((0, 2)), S, P)  # [N]: k_fu K_uu⁻¹ k_uf
    if q_sqrt.dim() == 2:  # mean-field diagonals [L, M]
        LtA = q_sqrt[:, :, None, None] * A  # [L, M, N, S]
    else:
        LtA = (q_sqrt.transpose(-1, -2) @ A.reshape(M, N * S)).reshape(L, M, N, S)
    q_term = pair_estimate((LtA.sum(3) ** 2).sum(1), (LtA ** 2).sum((1, 3)), S, P)  # [L, N]: k_fu K⁻¹ S K⁻¹ k_uf
    var = kff[:, None] - prior_term[:, None] + q_term.T  # [N, L]
    return mu, mu2, var
