"""Linear algebra with the failure handling GP code needs: Cholesky with escalating jitter."""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch

from . import settings
from .errors import NumericalError


@dataclass
class CholeskyResult:
    """A Cholesky factor L and how it was obtained: the jitter actually added to the diagonal and whether it had to be
    escalated."""
    L: torch.Tensor
    jitter: float  # the jitter actually added (≥ the requested one)
    escalated: bool


def robust_cholesky(K: torch.Tensor, jitter: float | None = None, *, what: str = "K_uu") -> CholeskyResult:
    """Cholesky of K + jitter·I, multiplying the jitter by 10 on failure up to `settings.MAX_JITTER`.

    The success check reads one flag back from the device: Cholesky needs it anyway (a failed
    factorisation must not flow silently into the loss), and torch's own error check costs the same.
    """
    requested = settings.default_jitter() if jitter is None else float(jitter)
    j = requested
    eye = torch.eye(K.shape[-1], dtype=K.dtype, device=K.device)
    while True:
        L, info = torch.linalg.cholesky_ex(K + j * eye if j > 0 else K)
        if not bool((info != 0).any()) and bool(torch.isfinite(L).all()):
            if j > requested:
                warnings.warn(f"{what} was not positive definite with jitter {requested:g}; used {j:g}", RuntimeWarning,
                              stacklevel=2)
            return CholeskyResult(L, j, j > requested)
        if not bool(torch.isfinite(K).all()):
            raise NumericalError(f"{what} contains NaN or inf (the hyper-parameters have diverged); "
                                 "lower the learning rate or reset the run")
        if j >= settings.MAX_JITTER:
            raise NumericalError(f"Cholesky of {what} failed even with jitter {j:g}; the kernel matrix is far from "
                                 "positive definite: check the kernel hyper-parameters, or use fewer or more distinct "
                                 "inducing points")
        j = max(j * 10.0, 1e-10 * float(K.diagonal(dim1=-2, dim2=-1).abs().mean()) or 1e-10)


class _WhitenedSolve(torch.autograd.Function):
    """W = L⁻¹B with L = chol(K), differentiable in K and B, with a hand-written backward.

    Autograd would differentiate the triangular solve (producing L̄) and then the Cholesky factorisation
    separately; fused, the backward is two triangular solves and one product:
        B̄ = L⁻ᵀ Ḡ,    K̄ = −L⁻ᵀ sym(Φ(Ḡ Wᵀ)) L⁻¹,
    where Φ keeps the lower triangle and halves the diagonal (dW = −Φ(L⁻¹ dK L⁻ᵀ) W for symmetric dK).
    """

    @staticmethod
    def forward(ctx, K, B, L):
        W = torch.linalg.solve_triangular(L, B, upper=False)
        ctx.save_for_backward(L, W)
        return W

    @staticmethod
    def backward(ctx, G):
        L, W = ctx.saved_tensors
        Lt = L.transpose(-1, -2)
        B_bar = torch.linalg.solve_triangular(Lt, G, upper=True) if ctx.needs_input_grad[1] else None
        K_bar = None
        if ctx.needs_input_grad[0]:
            P = torch.tril(G @ W.transpose(-1, -2))
            P.diagonal(dim1=-2, dim2=-1).mul_(0.5)
            P = 0.5 * (P + P.transpose(-1, -2))
            Y = torch.linalg.solve_triangular(Lt, P, upper=True)  # L⁻ᵀ P
            K_bar = -torch.linalg.solve_triangular(Lt, Y.transpose(-1, -2), upper=True).transpose(-1, -2)  # · L⁻¹
        return K_bar, B_bar, None


def whitened_solve(K: torch.Tensor, B: torch.Tensor, jitter: float | None = None, *, what: str = "K_uu"):
    """(W = L⁻¹B, the jitter used) for L = chol(K + jitter·I), escalating the jitter as `robust_cholesky` does."""
    with torch.no_grad():
        result = robust_cholesky(K.detach(), jitter, what=what)
    if result.jitter > 0:
        K = K + result.jitter * torch.eye(K.shape[-1], dtype=K.dtype, device=K.device)
    return _WhitenedSolve.apply(K, B, result.L), result.jitter


@dataclass
class BlockFactors:
    """L = blockdiag(L_1, …, L_B), the Cholesky factor of a block-diagonal K_uu, kept block by block.

    One block is the plain Cholesky factor of K_uu. Blocks that are the same matrix (the multi-channel kernel's,
    one per channel) are the same factor object and are solved together in one batched call.
    """

    factors: list[torch.Tensor]  # L_b [M_b, M_b], lower-triangular
    jitter: float = 0.0  # the largest jitter any block needed

    @classmethod
    def of(cls, L: "torch.Tensor | BlockFactors") -> "BlockFactors":
        """`L` itself, or a plain factor [M, M] as one block."""
        return L if isinstance(L, BlockFactors) else cls([L])

    def __len__(self) -> int:
        return len(self.factors)

    def __iter__(self):
        return iter(self.factors)

    def __getitem__(self, b: int) -> torch.Tensor:
        return self.factors[b]

    @property
    def sizes(self) -> tuple[int, ...]:
        """The sizes M_b of the diagonal blocks, in order."""
        return tuple(Lb.shape[-1] for Lb in self.factors)

    def dense(self) -> torch.Tensor:
        """L as one [ΣM_b, ΣM_b] matrix (for inspection and tests; the models never form it with several blocks)."""
        return self.factors[0] if len(self.factors) == 1 else torch.block_diag(*self.factors)

    def _by_block(self, fn, B: torch.Tensor) -> torch.Tensor:
        """fn(L_b, rows of B for block b), stacked back: B [ΣM_b, ...] → [ΣM_b, ...]."""
        first = self.factors[0]
        if len(self.factors) == 1:
            return fn(first, B)
        if all(Lb is first for Lb in self.factors):  # one factor for every block: one batched call
            nb, Mb = len(self.factors), first.shape[0]
            return fn(first, B.reshape(nb, Mb, *B.shape[1:])).reshape(B.shape)
        out, a = [], 0
        for Lb in self.factors:
            out.append(fn(Lb, B[a:a + Lb.shape[0]]))
            a += Lb.shape[0]
        return torch.cat(out)

    def solve(self, B: torch.Tensor) -> torch.Tensor:
        """L⁻¹ B for B [ΣM_b, K]."""
        return self._by_block(lambda Lb, Bb: torch.linalg.solve_triangular(Lb, Bb, upper=False), B)

    def solve_t(self, B: torch.Tensor) -> torch.Tensor:
        """L⁻ᵀ B for B [ΣM_b, K]."""
        return self._by_block(lambda Lb, Bb: torch.linalg.solve_triangular(Lb.transpose(-1, -2), Bb, upper=True), B)

    def matmul(self, B: torch.Tensor) -> torch.Tensor:
        """L B for B [ΣM_b, K]."""
        return self._by_block(lambda Lb, Bb: Lb @ Bb, B)

    def logdet(self) -> torch.Tensor:
        """log |K_uu| = Σ_b 2 Σ log diag L_b."""
        return sum(2.0 * torch.log(Lb.diagonal()).sum() for Lb in self.factors)


def block_cholesky(blocks: list[torch.Tensor], jitter: float | None = None, *, what: str = "K_uu") -> BlockFactors:
    """`robust_cholesky` of each diagonal block of K_uu; a block shared by several outputs (the same matrix object)
    is factored once and its factor shared."""
    done: dict[int, CholeskyResult] = {}
    for K in blocks:
        if id(K) not in done:
            done[id(K)] = robust_cholesky(K, jitter, what=what)
    return BlockFactors([done[id(K)].L for K in blocks], max(r.jitter for r in done.values()))
