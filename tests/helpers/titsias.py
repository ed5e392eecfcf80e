"""Titsias (2009): the optimal q(u) of a sparse GP with a Gaussian likelihood, its collapsed bound, and the exact
log marginal likelihood — computed from K_uu, K_uf and k_ff alone, independently of any model code.

For y = f + ε, ε ~ N(0, σ²I), and inducing variables u with prior N(0, K_uu):

    q*(u) = N(m, S),  S = K_uu (K_uu + K_uf K_fu / σ²)⁻¹ K_uu,  m = S K_uu⁻¹ K_uf y / σ²
    ELBO(q*) = log N(y; 0, Q_ff + σ²I) − tr(K_ff − Q_ff) / (2σ²),   Q_ff = K_fu K_uu⁻¹ K_uf   (the collapsed bound)

and when u determines f (K_ff = Q_ff, e.g. inducing points at the data) the bound is the exact log N(y; 0, K_ff + σ²I).
A model whose q(u) is whitened (u = L v, L = chol K_uu) takes N(L⁻¹m, L⁻¹ S L⁻ᵀ).
"""
from __future__ import annotations

import copy
import math

import torch


def optimal_q_moments(Kuu: torch.Tensor, Kuf: torch.Tensor, y: torch.Tensor, noise: float):
    """(m [M], S [M, M]) of q*(u) for one output y [N]."""
    S = Kuu @ torch.linalg.solve(Kuu + Kuf @ Kuf.T / noise, Kuu)
    m = S @ torch.linalg.solve(Kuu, Kuf @ y) / noise
    return m, 0.5 * (S + S.T)


def whiten(m: torch.Tensor, S: torch.Tensor, L: torch.Tensor):
    """N(m, S) in the coordinates v = L⁻¹u."""
    m = torch.linalg.solve_triangular(L, m[:, None], upper=False)[:, 0]
    LiS = torch.linalg.solve_triangular(L, S, upper=False)
    S = torch.linalg.solve_triangular(L, LiS.T, upper=False)
    return m, 0.5 * (S + S.T)


def optimal_q(model, X: torch.Tensor, y: torch.Tensor, noise: float, *, Kuu=None, Kuf=None, jitter=None):
    """q*(u) in the model's own (whitened or not) coordinates: (q_mu [M, 1], q_sqrt [1, M, M]) for `model.q.set`.

    Everything is computed in float64 on the CPU, whatever the model's device and dtype (`q.set` copies into them).
    K_uu and K_uf default to the engine's covariances for a float64 CPU copy of the model's (inducing, kernel) pair;
    pass them to use independently computed ones. The prior is K_uu + jitter·I with the model's jitter (0 when it
    has none)."""
    from invlab.covariances import Kuf as _Kuf
    from invlab.covariances import Kuu as _Kuu

    as64 = lambda t: t.detach().to("cpu", torch.float64)  # noqa: E731
    y = as64(y).reshape(-1)
    with torch.no_grad():
        if Kuu is None or Kuf is None:
            inducing = copy.deepcopy(model.inducing).to("cpu", torch.float64)
            kernel = copy.deepcopy(model.kernel).to("cpu", torch.float64)
            Kuu = _Kuu(inducing, kernel) if Kuu is None else Kuu
            Kuf = _Kuf(inducing, kernel, as64(X)) if Kuf is None else Kuf
        Kuu, Kuf = as64(Kuu), as64(Kuf)
        j = float(getattr(model, "jitter", None) or 0.0) if jitter is None else float(jitter)
        if j:
            Kuu = Kuu + j * torch.eye(Kuu.shape[0], dtype=Kuu.dtype)
        m, S = optimal_q_moments(Kuu, Kuf, y, noise)
        if model.whiten:
            m, S = whiten(m, S, torch.linalg.cholesky(Kuu))
        return m[:, None], torch.linalg.cholesky(S)[None]


def set_optimal_q(model, X: torch.Tensor, y: torch.Tensor, noise: float, **kwargs) -> None:
    """Set the model's q(u) to q*(u) (see `optimal_q`)."""
    with torch.no_grad():
        model.q.set(*optimal_q(model, X, y, noise, **kwargs))


def exact_log_marginal(Kff: torch.Tensor, y: torch.Tensor, noise: float) -> torch.Tensor:
    """log N(y; 0, K_ff + σ²I) by Cholesky."""
    y = y.reshape(-1)
    L = torch.linalg.cholesky(Kff + noise * torch.eye(Kff.shape[0], dtype=Kff.dtype, device=Kff.device))
    a = torch.linalg.solve_triangular(L, y[:, None], upper=False)[:, 0]
    return -0.5 * (a @ a) - L.diagonal().log().sum() - 0.5 * y.shape[0] * math.log(2 * math.pi)


def collapsed_bound(Kuu: torch.Tensor, Kuf: torch.Tensor, kff: torch.Tensor, y: torch.Tensor, noise: float
                    ) -> torch.Tensor:
    """Titsias' collapsed bound log N(y; 0, Q_ff + σ²I) − tr(K_ff − Q_ff) / 2σ² (eq. 9 of Titsias 2009)."""
    Luu = torch.linalg.cholesky(Kuu)
    W = torch.linalg.solve_triangular(Luu, Kuf, upper=False)  # [M, N]
    Qff = W.T @ W
    return exact_log_marginal(Qff, y, noise) - (kff - Qff.diagonal()).sum() / (2.0 * noise)
