"""Covariances between inducing variables and function values, chosen by the (inducing, kernel) pair.

- `Kuu(inducing, kernel)` → `[M, M]` (no jitter; the model adds it),
- `Kuf(inducing, kernel, X)` → `[M, N]` (or `[M, N, S]` per-sample for sampled orbits),
- `Kff_diag(inducing, kernel, X)` → `[N]`, the prior variance of f at X,
- `Kuu_blocks(inducing, kernel)` → the diagonal blocks of K_uu, `[[M_1, M_1], …]` (one block: `[K_uu]`).

Later families register their pairs (patches, orbits, blocks) in their own modules.
"""
from .dispatch import PairDispatcher

Kuu = PairDispatcher("Kuu")
Kuf = PairDispatcher("Kuf")
Kff_diag = PairDispatcher("Kff_diag")
Kuu_blocks = PairDispatcher("Kuu_blocks")

from . import invariant, orbits, patches, points  # noqa: E402,F401  (register their pairs)

__all__ = ["Kuu", "Kuf", "Kff_diag", "Kuu_blocks", "PairDispatcher"]
