"""Wishart and inverse Wishart distributions for deep kernel processes (Aitchison, Yang & Ober 2021, sec. 3, 5, app.
H–I).

- `Wishart(V, ν)`: S = Σ_λ x_λ x_λᵀ, x_λ ~ N(0, V), mean νV (eq. 1–3);
- `InverseWishart(Ψ, ν)`: X⁻¹ ~ W(Ψ⁻¹, ν), mean Ψ / (ν − P − 1).

Both sample by the Bartlett decomposition (Ober & Aitchison 2020, as the paper says in sec. 5.3):
a standard Wishart W(I, ν) is A Aᵀ with A lower-triangular, A_jj² ~ χ²(ν − j) (j = 0..P−1) and
A_jk ~ N(0, 1) below the diagonal. χ² draws go through `torch.distributions.Gamma.rsample` (or its sampler
with a `generator` of the caller's), whose implicit reparameterisation gives gradients in ν, so learned degrees
of freedom (δ, γ) train by ordinary back-propagation. Then W = L A Aᵀ Lᵀ ~ W(LLᵀ, ν) and X = L (A Aᵀ)⁻¹ Lᵀ ~ IW(LLᵀ, ν).

An inverse Wishart sample is returned with a factor B, X⁻¹ = B Bᵀ (B = L⁻ᵀ A), and its log-determinant,
so log densities under *other* inverse Wisharts (the prior, while sampling from the approximate
posterior) cost one triangular solve and no factorisation of X: tr(Ψ' X⁻¹) = ‖L'ᵀ B‖²_F.

`inverse_wishart_conditional` samples one train/test point's Gram entries given the inducing block
(eq. 31–34 reduced to a single point, app. I eq. 105–107), the step that makes inference
doubly stochastic and O(Pi³ + Pi²·Pt). `residual_wishart` is app. H's ResW(N, α) (eq. 102–103).

Shapes: P the matrix size, S sample dimensions in front ([S, P, P]); ν (df) a scalar tensor or float.
"""
from __future__ import annotations

import math

import torch

from ...errors import ConfigError, ShapeError

LOG2 = math.log(2.0)


def _as_df(df, like: torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(df, dtype=like.dtype, device=like.device)


def _logdet_tril(L: torch.Tensor) -> torch.Tensor:
    """log|L Lᵀ| from a Cholesky factor. [..., P, P] → [...]"""
    return 2.0 * torch.log(L.diagonal(dim1=-2, dim2=-1)).sum(-1)


def _check_square(M: torch.Tensor, what: str) -> int:
    if M.dim() < 2 or M.shape[-1] != M.shape[-2]:
        raise ShapeError(f"{what} must be a square matrix [..., P, P]; got shape {tuple(M.shape)}")
    return M.shape[-1]


def bartlett(P: int, df, sample_shape=torch.Size(), *, dtype=torch.float64, device=None,
             generator: torch.Generator | None = None) -> torch.Tensor:
    """A with A Aᵀ ~ W(I_P, ν): lower-triangular, A_jj = √χ²(ν − j), N(0, 1) below the diagonal. [*batch, P, P]

    batch = sample_shape broadcast with ν's shape. Differentiable in ν (a tensor that requires grad) through
    the Gamma sampler's implicit gradients. Draws come from `generator` if given (the same draws as torch's global
    stream seeded alike), else from the global stream.
    """
    df = torch.as_tensor(df, dtype=dtype, device=device)
    if not bool((df > P - 1).all()):
        raise ConfigError(f"Bartlett sampling of a {P}×{P} Wishart needs ν > P − 1 = {P - 1}; got ν = {df.tolist()}")
    shape = torch.broadcast_shapes(tuple(sample_shape), df.shape)  # a batch of ν gives one draw per ν
    lower = torch.tril(torch.randn(shape + (P, P), dtype=dtype, device=device, generator=generator), diagonal=-1)
    conc = ((df[..., None] - torch.arange(P, dtype=dtype, device=device)) / 2.0).expand(shape + (P,))  # (ν − j)/2
    if generator is None:
        chi2 = torch.distributions.Gamma(conc, torch.full_like(conc, 0.5)).rsample()
    else:  # Gamma(ν/2, rate 1/2).rsample() with its draws from `generator`: the same sampler and implicit gradient
        gamma = torch._standard_gamma(conc.contiguous(), generator=generator)
        chi2 = 2.0 * gamma.clamp_min(torch.finfo(gamma.dtype).tiny)
    return lower + torch.diag_embed(chi2.sqrt())


class Wishart:
    """W(V, ν) with V = L Lᵀ given by its Cholesky factor `scale_tril` [..., P, P] (or `scale`)."""

    def __init__(self, df, *, scale: torch.Tensor | None = None, scale_tril: torch.Tensor | None = None):
        if (scale is None) == (scale_tril is None):
            raise ConfigError("give exactly one of scale (V) or scale_tril (its Cholesky factor)")
        self.scale_tril = torch.linalg.cholesky(scale) if scale_tril is None else scale_tril
        self.P = _check_square(self.scale_tril, "the Wishart scale")
        self.df = _as_df(df, self.scale_tril)

    @property
    def mean(self) -> torch.Tensor:
        """E[X] = ν L Lᵀ [..., P, P]."""
        return self.df * self.scale_tril @ self.scale_tril.transpose(-1, -2)

    def rsample(self, sample_shape=torch.Size(), generator: torch.Generator | None = None) -> torch.Tensor:
        """L A Aᵀ Lᵀ by Bartlett when ν > P − 1; for an integer ν ≤ P − 1 (singular) the sum of ν outer products.
        Draws from `generator` if given, else from torch's global stream."""
        L = self.scale_tril
        if bool((self.df > self.P - 1).all()):
            A = bartlett(self.P, self.df, tuple(sample_shape) + L.shape[:-2], dtype=L.dtype, device=L.device,
                         generator=generator)
            LA = L @ A
            return LA @ LA.transpose(-1, -2)
        n = float(self.df)
        if n != int(n) or n < 1:
            raise ConfigError(f"a singular Wishart (ν ≤ P − 1 = {self.P - 1}) needs an integer ν ≥ 1; got ν = {n}")
        F = L @ torch.randn(tuple(sample_shape) + L.shape[:-2] + (self.P, int(n)), dtype=L.dtype, device=L.device,
                            generator=generator)
        return F @ F.transpose(-1, -2)

    def log_prob(self, X: torch.Tensor) -> torch.Tensor:
        """log W(X; V, ν) = (ν−P−1)/2 log|X| − tr(V⁻¹X)/2 − νP/2 log 2 − ν/2 log|V| − log Γ_P(ν/2)."""
        P, nu, L = self.P, self.df, self.scale_tril
        _check_square(X, "X")
        LX = torch.linalg.cholesky(X)
        trace = (torch.linalg.solve_triangular(L, LX, upper=False) ** 2).sum((-2, -1))  # tr(V⁻¹ X)
        return (0.5 * (nu - P - 1) * _logdet_tril(LX) - 0.5 * trace - 0.5 * nu * P * LOG2
                - 0.5 * nu * _logdet_tril(L) - torch.special.multigammaln(0.5 * nu, P))


class InverseWishartSample:
    """A draw X ~ IW with X⁻¹ = B Bᵀ and log|X| kept from the sampler (no factorisation of X needed later)."""

    def __init__(self, value: torch.Tensor, inv_factor: torch.Tensor, logdet: torch.Tensor):
        self.value, self.inv_factor, self.logdet = value, inv_factor, logdet


class InverseWishart:
    """IW(Ψ, ν), Ψ = L Lᵀ given by `scale_tril` [..., P, P] (or `scale`); defined for ν > P − 1, mean Ψ/(ν − P − 1)."""

    def __init__(self, df, *, scale: torch.Tensor | None = None, scale_tril: torch.Tensor | None = None):
        if (scale is None) == (scale_tril is None):
            raise ConfigError("give exactly one of scale (Ψ) or scale_tril (its Cholesky factor)")
        self.scale_tril = torch.linalg.cholesky(scale) if scale_tril is None else scale_tril
        self.P = _check_square(self.scale_tril, "the inverse Wishart scale")
        self.df = _as_df(df, self.scale_tril)
        if not bool((self.df > self.P - 1).all()):
            raise ConfigError(f"an inverse Wishart on {self.P}×{self.P} matrices needs ν > P − 1 = {self.P - 1}; "
                              f"got ν = {self.df.tolist()}")

    @property
    def mean(self) -> torch.Tensor:
        """E[X] = Ψ / (ν − P − 1) with Ψ = L Lᵀ [..., P, P] (defined for ν > P + 1)."""
        return self.scale_tril @ self.scale_tril.transpose(-1, -2) / (self.df - self.P - 1)

    def rsample_with_factor(self, sample_shape=torch.Size(),
                            generator: torch.Generator | None = None) -> InverseWishartSample:
        """X = L (A Aᵀ)⁻¹ Lᵀ = C Cᵀ with C = L A⁻ᵀ; also B = L⁻ᵀ A (X⁻¹ = B Bᵀ) and log|X| = 2 log|L| − 2 log|A|.
        Draws from `generator` if given, else from torch's global stream."""
        L = self.scale_tril
        A = bartlett(self.P, self.df, tuple(sample_shape) + L.shape[:-2], dtype=L.dtype, device=L.device,
                     generator=generator)  # [*S, P, P]
        Lb = L.expand(A.shape)
        C = torch.linalg.solve_triangular(A.transpose(-1, -2), Lb, upper=True, left=False)  # L A⁻ᵀ
        X = C @ C.transpose(-1, -2)
        B = torch.linalg.solve_triangular(Lb.transpose(-1, -2), A, upper=True)  # L⁻ᵀ A
        logdet = _logdet_tril(Lb) - _logdet_tril(A)
        return InverseWishartSample(0.5 * (X + X.transpose(-1, -2)), B, logdet)

    def rsample(self, sample_shape=torch.Size(), generator: torch.Generator | None = None) -> torch.Tensor:
        """A reparameterised sample X ~ IW(Ψ, ν) [*sample_shape, ..., P, P] by Bartlett's decomposition (draws from
        `generator` if given, else from torch's global stream)."""
        return self.rsample_with_factor(sample_shape, generator).value

    def log_prob(self, X) -> torch.Tensor:
        """log IW(X; Ψ, ν) = ν/2 log|Ψ| − νP/2 log 2 − log Γ_P(ν/2) − (ν+P+1)/2 log|X| − tr(Ψ X⁻¹)/2.

        X is a matrix [..., P, P] or an `InverseWishartSample` (then no factorisation of X is done).
        """
        P, nu, L = self.P, self.df, self.scale_tril
        if isinstance(X, InverseWishartSample):
            logdet_X = X.logdet
            trace = ((L.transpose(-1, -2) @ X.inv_factor) ** 2).sum((-2, -1))  # ‖Lᵀ B‖² = tr(Ψ X⁻¹)
        else:
            _check_square(X, "X")
            LX = torch.linalg.cholesky(X)
            logdet_X = _logdet_tril(LX)
            trace = (torch.linalg.solve_triangular(LX, L, upper=False) ** 2).sum((-2, -1))  # ‖LX⁻¹ L‖² = tr(X⁻¹Ψ)
        return (0.5 * nu * _logdet_tril(L) - 0.5 * nu * P * LOG2 - torch.special.multigammaln(0.5 * nu, P)
                - 0.5 * (nu + P + 1) * logdet_X - 0.5 * trace)


def multivariate_digamma(a: torch.Tensor, P: int) -> torch.Tensor:
    """ψ_P(a) = Σ_{j=0}^{P−1} ψ(a − j/2), the derivative of log Γ_P(a)."""
    j = torch.arange(P, dtype=a.dtype, device=a.device)
    return torch.special.digamma(a[..., None] - j / 2.0).sum(-1)


def inverse_wishart_kl(q: InverseWishart, p: InverseWishart) -> torch.Tensor:
    """KL(q ‖ p) between inverse Wisharts in closed form. [...]

    X ~ IW(Ψ, ν) exactly when X⁻¹ ~ W(Ψ⁻¹, ν), and a KL divergence is unchanged by the bijection X ↦ X⁻¹, so
    with q = IW(Ψ_q, ν_q), p = IW(Ψ_p, ν_p):
      KL = ν_p/2 (log|Ψ_q| − log|Ψ_p|) + ν_q/2 (tr(Ψ_p Ψ_q⁻¹) − P) + log Γ_P(ν_p/2) − log Γ_P(ν_q/2)
           + (ν_q − ν_p)/2 ψ_P(ν_q/2),
    the Wishart KL of W(Ψ_q⁻¹, ν_q) from W(Ψ_p⁻¹, ν_p).
    """
    P = q.P
    if p.P != P:
        raise ShapeError(f"KL between inverse Wisharts of different sizes: {P} and {p.P}")
    nq, np_ = q.df, p.df
    trace = (torch.linalg.solve_triangular(q.scale_tril, p.scale_tril, upper=False) ** 2).sum((-2, -1))  # tr(Ψ_q⁻¹Ψ_p)
    return (0.5 * np_ * (_logdet_tril(q.scale_tril) - _logdet_tril(p.scale_tril)) + 0.5 * nq * (trace - P)
            + torch.special.multigammaln(0.5 * np_, P) - torch.special.multigammaln(0.5 * nq, P)
            + 0.5 * (nq - np_) * multivariate_digamma(0.5 * nq, P))


def inverse_wishart_conditional(G_ii: torch.Tensor, psi_chol: torch.Tensor, psi_it: torch.Tensor, psi_tt: torch.Tensor,
                                delta) -> tuple[torch.Tensor, torch.Tensor]:
    """Each train/test point's (g_it, g_tt) given the inducing block G_ii, under G ~ IW(Ψ, δ + P + 1) (app. I).

    G_ii [..., Pi, Pi] (a sample of the inducing block), psi_chol = chol(Ψ_ii) [..., Pi, Pi], psi_it [..., Pi, Pt],
    psi_tt [..., Pt] (the diagonal only: points are sampled independently, the doubly-stochastic trick).
    Returns g_it [..., Pi, Pt] and g_tt [..., Pt]. Cost O(Pi²·Pt) given the factor.

    For one point the joint matrix is (Pi + 1)-square with ν = δ + Pi + 2 degrees of freedom, so
      g_tt·i ~ InvGamma((δ + Pi + 2)/2, ψ_tt·i/2)                      (eq. 106 with Pt = 1),
      G_ii⁻¹ g_it | g_tt·i ~ N(Ψ_ii⁻¹ ψ_it, g_tt·i Ψ_ii⁻¹)             (eq. 107),
    and g_it = G_ii (G_ii⁻¹ g_it), g_tt = g_tt·i + g_itᵀ G_ii⁻¹ g_it. Eq. 106's shape (δ + Pt + Pi + 1)/2 is read
    with Pt = 1, the single point app. I conditions on: a diagonal entry of the Pt-point Schur complement has
    shape (δ + Pi + 2)/2 whatever Pt is. Reading Pt as the minibatch size (as the reference code does) would
    make a point's distribution depend on how many others share its batch; a test shows joint samples tell
    the two apart.
    """
    Pi = psi_chol.shape[-1]
    if psi_it.shape[-2] != Pi or psi_tt.shape[-1] != psi_it.shape[-1]:
        raise ShapeError(f"conditional blocks disagree: Ψ_ii is {Pi}×{Pi}, ψ_it {tuple(psi_it.shape)}, "
                         f"ψ_tt {tuple(psi_tt.shape)}")
    delta = torch.as_tensor(delta, dtype=psi_it.dtype, device=psi_it.device)
    a = torch.cholesky_solve(psi_it, psi_chol)  # Ψ_ii⁻¹ ψ_it  [..., Pi, Pt]
    tiny = torch.finfo(psi_it.dtype).tiny
    psi_tti = (psi_tt - (psi_it * a).sum(-2)).clamp_min(tiny ** 0.5)  # [..., Pt], Schur complement (eq. 105)
    conc = (delta + Pi + 2.0) / 2.0
    g_tti = torch.distributions.Gamma(conc.expand(psi_tti.shape), psi_tti / 2.0).rsample().clamp_min(tiny).reciprocal()
    noise = torch.linalg.solve_triangular(psi_chol.transpose(-1, -2), torch.randn_like(a), upper=True)  # ~ N(0, Ψ_ii⁻¹)
    h = a + noise * g_tti.sqrt()[..., None, :]  # G_ii⁻¹ g_it  [..., Pi, Pt]
    g_it = G_ii @ h
    g_tt = g_tti + (g_it * h).sum(-2)
    return g_it, g_tt


def residual_wishart(N: int, alpha: float, sample_shape=torch.Size(), *, dtype=torch.float64, device=None,
                     generator: torch.Generator | None = None) -> torch.Tensor:
    """Ω'' = W Wᵀ with W = (ξ/√N + αI)/√(1 + α²), ξ_ij ~ N(0, 1) [N, N] (app. H eq. 102–103); E[Ω''] = I."""
    if alpha < 0:
        raise ConfigError(f"the identity weight α must be ≥ 0, got {alpha}")
    xi = torch.randn(tuple(sample_shape) + (N, N), dtype=dtype, device=device, generator=generator)
    W = (xi / math.sqrt(N) + alpha * torch.eye(N, dtype=dtype, device=device)) / math.sqrt(1.0 + alpha ** 2)
    return W @ W.transpose(-1, -2)


__all__ = ["bartlett", "Wishart", "InverseWishart", "InverseWishartSample", "inverse_wishart_conditional",
           "inverse_wishart_kl", "multivariate_digamma", "residual_wishart"]
