"""Covariances between inducing variables and function values, chosen by the (inducing, kernel) pair.

- `Kuu(inducing, kernel)` → `[M, M]` (no jitter; the model adds it),
- `Kuf(inducing, kernel, X)` → `[M, N]` (or `[M, N, S]` per-sample for sampled orbits),
- `Kff_diag(inducing, kernel, X)` → `[N]`, the prior variance of f at X,
- `Kuu_blocks(inducing, kernel)` → the diagonal blocks of K_uu, `[[M_1, M_1], …]` (one block: `[K_uu]`).

The dispatchers live in `dispatch.py`; each family registers its pairs (points, orbits, patches, blocks, sampled
orbits) in its own module, imported here.
"""
from .dispatch import Kff_diag, Kuf, Kuu, Kuu_blocks, PairDispatcher  # noqa: I001  (before the modules that register pairs)
from . import blocks, invariant, orbits, patches, points  # noqa: F401  (register their pairs)

__all__ = ["Kuu", "Kuf", "Kff_diag", "Kuu_blocks", "PairDispatcher"]
