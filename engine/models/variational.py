"""q(u) = N(m, S), S = LLᵀ, one Gaussian per output sharing the inducing inputs, and its KL to the prior.

The distribution may be whitened (u = L_uu v, prior p(v) = N(0, I)) or not (prior p(u) = N(0, K_uu)). Three forms
of the factor L, one class each (van der Wilk, Rasmussen & Hensman 2017 app. C for the block form):

- `VariationalDistribution` (full):  L [L, M, M] lower-triangular, posterior correlations between all of u;
- `DiagonalVariational`:             L = diag(d), d [L, M], independent inducing outputs;
- `BlockVariational`:                L = blockdiag(L_1, …, L_B), one [L, M_b, M_b] factor per block of K_uu
                                     (independent blocks: conv vs RBF, or one per colour channel).

Each form gives what q(u) → q(f) (`conditionals`) and the KL need of L — the product Lᵀ A, the rows of L that
meet one block of the prior, ‖L‖²_F and log|S| — so neither branches on the form. With K_uu = blockdiag(L_b L_bᵀ)
(one block: all of K_uu, eq. C.25–C.26 of van der Wilk, Rasmussen & Hensman 2017 otherwise), summed over the L outputs,

    KL = ½ [tr(K_uu⁻¹ S) + mᵀ K_uu⁻¹ m − M L + L log|K_uu| − log|S|],
    tr(K_uu⁻¹ S) = Σ_b ‖L_b⁻¹ L[rows of b]‖²_F,    mᵀ K_uu⁻¹ m = ‖L_uu⁻¹ m‖²,

and against the whitened prior N(0, I): ½ [‖L‖²_F + ‖m‖² − M L − log|S|].
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..errors import ConfigError
from ..linalg import BlockFactors

Q_COVARIANCES = ("full", "mean-field", "diagonal")  # mean-field: independent blocks (as full with one block)


class InducingGaussian(nn.Module):
    """What every form of q(u) shares: the mean m [M, L] (`q_mu`) and the KL; subclasses hold the factor L."""

    q_mu: nn.Parameter
    mean_field = False  # True for the diagonal form (independent inducing outputs)

    @property
    def num_inducing(self) -> int:
        """M, the number of inducing outputs."""
        return self.q_mu.shape[0]

    @property
    def num_latent(self) -> int:
        """L, the number of latent functions."""
        return self.q_mu.shape[1]

    # -- what each form gives -----------------------------------------------------------------------------------------
    def sqrt(self) -> torch.Tensor:  # pragma: no cover - abstract
        """L as a dense [L, M, M] lower-triangular matrix (for inspection and `set`; the model never needs it)."""
        raise NotImplementedError

    def sqrt_diag(self) -> torch.Tensor:  # pragma: no cover - abstract
        """The diagonal of L: [L, M]."""
        raise NotImplementedError

    def t_matmul(self, A: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        """Lᵀ A for A [M, K] → [L, M, K] (the conditional's quadratic term is ‖Lᵀ A‖² over M)."""
        raise NotImplementedError

    def rows(self, a: int, b: int) -> torch.Tensor:  # pragma: no cover - abstract
        """Rows a:b of L (a:b one block of the prior) with the columns that can be non-zero there: [L, b − a, ·]."""
        raise NotImplementedError

    def sq_norm(self) -> torch.Tensor:  # pragma: no cover - abstract
        """‖L‖²_F summed over outputs = tr(S)."""
        raise NotImplementedError

    def set(self, q_mu: torch.Tensor, q_sqrt: torch.Tensor) -> None:  # pragma: no cover - abstract
        """Set the mean `q_mu` [M, L] and the covariance factor `q_sqrt` of q(u)."""
        raise NotImplementedError

    # -- shared -------------------------------------------------------------------------------------------------------
    def logdet(self) -> torch.Tensor:
        """Σ_l log|S_l|."""
        return torch.log(self.sqrt_diag() ** 2).sum()

    def kl(self, prior: torch.Tensor | BlockFactors | None = None) -> torch.Tensor:
        """KL(q(u) ‖ p(u)) summed over outputs; p = N(0, I) when `prior` is None (whitened), else N(0, K_uu) with
        `prior` the Cholesky factor of K_uu (a plain [M, M] factor or its blocks' factors)."""
        M, L = self.num_inducing, self.num_latent
        if prior is None:
            return 0.5 * (self.sq_norm() + (self.q_mu ** 2).sum() - M * L - self.logdet())
        prior = BlockFactors.of(prior)
        trace, a = 0.0, 0
        for Lb in prior:
            b = a + Lb.shape[0]
            trace = trace + (torch.linalg.solve_triangular(Lb, self.rows(a, b), upper=False) ** 2).sum()
            a = b
        mahal = (prior.solve(self.q_mu) ** 2).sum()
        return 0.5 * (trace + mahal - M * L + prior.logdet() * L - self.logdet())


def _mean(M: int, L: int) -> nn.Parameter:
    return nn.Parameter(torch.zeros(M, L, dtype=torch.float64))


class VariationalDistribution(InducingGaussian):
    """Full q(u): m [M, L]; L [L, M, M] lower-triangular (only the lower triangle of the raw parameter is used)."""

    def __init__(self, num_inducing: int, num_latent: int, *, init_sqrt: torch.Tensor | None = None):
        super().__init__()
        M, L = num_inducing, num_latent
        self.q_mu = _mean(M, L)
        init = torch.eye(M) if init_sqrt is None else init_sqrt
        self.q_sqrt_raw = nn.Parameter(torch.as_tensor(init, dtype=torch.float64).expand(L, M, M).clone())

    def sqrt(self) -> torch.Tensor:
        """The lower-triangular factors L_l of S_l = L_l L_lᵀ [L, M, M]."""
        return torch.tril(self.q_sqrt_raw)

    def sqrt_diag(self) -> torch.Tensor:
        """The diagonals of the factors [L, M]."""
        return self.q_sqrt_raw.diagonal(dim1=-2, dim2=-1)

    def t_matmul(self, A: torch.Tensor) -> torch.Tensor:
        """Lᵀ A for each latent function: A [M, K] → [L, M, K]."""
        return self.sqrt().transpose(-1, -2) @ A  # [L, M, K]

    def rows(self, a: int, b: int) -> torch.Tensor:
        """Rows a..b of each factor [L, b − a, M]."""
        return self.sqrt()[:, a:b, :]  # [L, b − a, M]

    def sq_norm(self) -> torch.Tensor:
        """Σ_l ‖L_l‖²_F = Σ_l tr(S_l), the trace term of the KL."""
        return (self.sqrt() ** 2).sum()

    @torch.no_grad()
    def set(self, q_mu: torch.Tensor, q_sqrt: torch.Tensor) -> None:
        """Set m [M, L] and L [L, M, M] (e.g. to the optimal q(u) in closed form)."""
        self.q_mu.copy_(q_mu.reshape(self.q_mu.shape))
        self.q_sqrt_raw.copy_(torch.tril(q_sqrt).expand_as(self.q_sqrt_raw))


class DiagonalVariational(InducingGaussian):
    """Diagonal q(u) (independent inducing outputs): m [M, L]; L = diag(d), d [L, M]."""

    mean_field = True

    def __init__(self, num_inducing: int, num_latent: int, *, init_sqrt: torch.Tensor | None = None):
        super().__init__()
        M, L = num_inducing, num_latent
        self.q_mu = _mean(M, L)
        diag = torch.ones(L, M, dtype=torch.float64) if init_sqrt is None else init_sqrt.diagonal().expand(L, M).clone()
        self.q_sqrt_diag = nn.Parameter(diag)

    def sqrt(self) -> torch.Tensor:
        """The diagonal factors as dense matrices [L, M, M]."""
        return torch.diag_embed(self.q_sqrt_diag)

    def sqrt_diag(self) -> torch.Tensor:
        """The factors' diagonals, the standard deviations of the inducing outputs [L, M]."""
        return self.q_sqrt_diag

    def t_matmul(self, A: torch.Tensor) -> torch.Tensor:
        """Lᵀ A for the diagonal factors: A [M, K] → [L, M, K]."""
        return self.q_sqrt_diag[:, :, None] * A  # [L, M, K]

    def rows(self, a: int, b: int) -> torch.Tensor:
        """Rows a..b of the diagonal factor, as their own diagonal block [L, b − a, b − a]."""
        return torch.diag_embed(self.q_sqrt_diag[:, a:b])  # [L, b − a, b − a]

    def sq_norm(self) -> torch.Tensor:
        """Σ_l ‖L_l‖²_F = Σ_l tr(S_l), the trace term of the KL."""
        return (self.q_sqrt_diag ** 2).sum()

    @torch.no_grad()
    def set(self, q_mu: torch.Tensor, q_sqrt: torch.Tensor) -> None:
        """Set m [M, L] and the diagonal of L [L, M, M]."""
        self.q_mu.copy_(q_mu.reshape(self.q_mu.shape))
        self.q_sqrt_diag.copy_(q_sqrt.diagonal(dim1=-2, dim2=-1).reshape(self.q_sqrt_diag.shape))


class BlockVariational(InducingGaussian):
    """q(u) = Π_b N(u_b | m_b, L_b L_bᵀ): independent blocks (van der Wilk, Rasmussen & Hensman 2017 app. C,
    "mean-field").

    m: [Σ M_b, L] (stacked like K_uf's rows); one lower-triangular [L, M_b, M_b] factor per block.
    """

    def __init__(self, sizes, num_latent: int, init_sqrt: list[torch.Tensor] | None = None):
        super().__init__()
        self.sizes = tuple(int(s) for s in sizes)
        self.q_mu = _mean(sum(self.sizes), num_latent)
        inits = init_sqrt or [torch.eye(s, dtype=torch.float64) for s in self.sizes]
        self.q_sqrt_blocks = nn.ParameterList([nn.Parameter(torch.as_tensor(L, dtype=torch.float64).expand(
            num_latent, s, s).clone()) for L, s in zip(inits, self.sizes)])
        self._starts = np.cumsum((0,) + self.sizes)

    def block_sqrts(self) -> list[torch.Tensor]:
        """Each block's lower-triangular factor [L, M_b, M_b], in order."""
        return [torch.tril(p) for p in self.q_sqrt_blocks]  # each [L, M_b, M_b]

    def sqrt(self) -> torch.Tensor:
        """The block-diagonal factor as one dense matrix [L, ΣM_b, ΣM_b]."""
        out = self.q_mu.new_zeros(self.num_latent, self.num_inducing, self.num_inducing)
        for Lb, a, b in zip(self.block_sqrts(), self._starts[:-1], self._starts[1:]):
            out[:, a:b, a:b] = Lb
        return out

    def sqrt_diag(self) -> torch.Tensor:  # [L, ΣM_b]
        """The factors' diagonals, blocks concatenated [L, ΣM_b]."""
        return torch.cat([p.diagonal(dim1=-2, dim2=-1) for p in self.q_sqrt_blocks], -1)

    def t_matmul(self, A: torch.Tensor) -> torch.Tensor:
        """Lᵀ A block by block: A [ΣM_b, K] → [L, ΣM_b, K]."""
        return torch.cat([Lb.transpose(-1, -2) @ A[a:b] for Lb, a, b in
                          zip(self.block_sqrts(), self._starts[:-1], self._starts[1:])], 1)  # [L, ΣM_b, K]

    def rows(self, a: int, b: int) -> torch.Tensor:
        """The factor of the block starting at row `a` [L, M_b, M_b] (blocks are independent, so its rows
        are its own)."""
        return self.block_sqrts()[int(np.searchsorted(self._starts, a))]  # the block's own factor [L, M_b, M_b]

    def sq_norm(self) -> torch.Tensor:
        """Σ over blocks and latent functions of ‖L_b‖²_F, the trace term of the KL."""
        return sum((Lb ** 2).sum() for Lb in self.block_sqrts())

    @torch.no_grad()
    def set(self, q_mu: torch.Tensor, q_sqrt: torch.Tensor) -> None:
        """Set m [ΣM_b, L] and the diagonal blocks of a factor L [L, ΣM_b, ΣM_b]."""
        self.q_mu.copy_(q_mu.reshape(self.q_mu.shape))
        for p, a, b in zip(self.q_sqrt_blocks, self._starts[:-1], self._starts[1:]):
            p.copy_(torch.tril(q_sqrt[..., a:b, a:b]).expand_as(p))


def build_variational(q_covariance: str, sizes: tuple[int, ...], num_latent: int,
                      init: BlockFactors | None = None) -> InducingGaussian:
    """The q(u) a `q_covariance` names for inducing blocks of `sizes`, starting at the prior's factor `init`
    (unwhitened: S = K_uu) or at N(0, I) (None). "mean-field" with one block is the full form."""
    if q_covariance not in Q_COVARIANCES:
        raise ConfigError(f"q_covariance={q_covariance!r}; choose one of {', '.join(Q_COVARIANCES)}")
    M = sum(sizes)
    if q_covariance == "mean-field" and len(sizes) > 1:
        return BlockVariational(sizes, num_latent, None if init is None else list(init))
    dense = None if init is None else init.dense()
    if q_covariance == "diagonal":
        return DiagonalVariational(M, num_latent, init_sqrt=dense)
    return VariationalDistribution(M, num_latent, init_sqrt=dense)
