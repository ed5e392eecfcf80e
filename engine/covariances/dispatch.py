"""A two-argument type dispatcher: `fn(inducing, kernel, ...)` picked by the pair of types, and the
covariances that every module of this package registers its pairs with.

Resolution walks both classes' MROs (inducing first), so a registration for a base class serves its
subclasses unless a more specific pair is registered.
"""
from __future__ import annotations

from typing import Callable

from ..registry import table


class PairDispatcher:
    """A table of covariance functions keyed by (inducing variable type, kernel type), GPflow's multiple dispatch for
    `Kuu` / `Kuf`: the most specific registered pair along both types' MROs wins."""
    def __init__(self, name: str):
        self.name = name
        self._table: dict[tuple[type, type], Callable] = table({})  # rolled back with a failed plugin

    def register(self, inducing_type: type, kernel_type: type):
        """Decorator registering `fn` as this covariance for (`inducing_type`, `kernel_type`) and its subclasses."""
        def decorator(fn: Callable) -> Callable:
            self._table[(inducing_type, kernel_type)] = fn
            return fn

        return decorator

    def resolve(self, inducing_type: type, kernel_type: type) -> Callable:
        """The function registered for the most specific pair of base classes of (`inducing_type`, `kernel_type`);
        raises NotImplementedError naming both when none is."""
        for a in inducing_type.__mro__:
            for b in kernel_type.__mro__:
                fn = self._table.get((a, b))
                if fn is not None:
                    return fn
        raise NotImplementedError(
            f"{self.name} is not defined for inducing variable {inducing_type.__name__} "
            f"with kernel {kernel_type.__name__}"
        )

    def __call__(self, inducing, kernel, *args, **kwargs):
        return self.resolve(type(inducing), type(kernel))(inducing, kernel, *args, **kwargs)


Kuu = PairDispatcher("Kuu")  # [M, M], no jitter (the model adds it)
Kuf = PairDispatcher("Kuf")  # [M, N] (or [M, N, S] per sample for sampled orbits)
Kff_diag = PairDispatcher("Kff_diag")  # [N], the prior variance of f at X
Kuu_blocks = PairDispatcher("Kuu_blocks")  # the diagonal blocks of K_uu, [[M_1, M_1], …] (one block: [K_uu])
