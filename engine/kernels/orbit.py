"""Kernels of functions summed over an orbit: the shared idea of convolutional and invariant GPs.

f(x) = Σ_a w_a g(x_a), where {x_a} is the orbit of x — its patches (van der Wilk, Rasmussen & Hensman 2017), the
elements of a finite group acting on it, or samples from an augmentation distribution (van der Wilk et al. 2018) — and g
~ GP(0, k_g). Then

    k_f(x, x') = Σ_a Σ_b w_a w_b k_g(x_a, x'_b).

Leaf classes define `orbit(X) -> [N, P, E]` and, if not uniform, `orbit_weights(X) -> [N, P]` (the default
is w_a = 1/P, the orbit average of van der Wilk et al. 2018; van der Wilk, Rasmussen & Hensman 2017's sum is w_a = 1).
This class gives the brute-force `K` and `K_diag`, which are exact but materialise the orbit. Covariances with inducing
variables live in `invlab.covariances`: the brute-force K_uf = Σ_a w_a k_g(z, x_a) of inducing points in the space of g
in `orbits.py`, and the fast paths registered for specific pairs, which are tested against these.
"""
from __future__ import annotations

import torch

from .base import Kernel


class OrbitKernel(Kernel):
    """Base of kernels of a function summed over an orbit, f(x) = Σ_p w_p g(x_p) with g ~ GP(0, k_g): k(x, x') = Σ_p Σ_q
    w_p w'_q k_g(x_p, x'_q). Subclasses give the orbit (patches, augmentations) and its weights."""
    def __init__(self, base: Kernel):
        super().__init__()
        self.base = base  # k_g, on orbit elements of dimension E

    def orbit(self, X: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        """[N, ...] → [N, P, E]: the orbit elements of each input, flattened."""
        raise NotImplementedError

    def orbit_weights(self, X: torch.Tensor, P: int) -> torch.Tensor:
        """[N, P] weights w_a; uniform 1/P by default."""
        return torch.full((X.shape[0], P), 1.0 / P, dtype=X.dtype, device=X.device)

    # Orbit kernels see the raw input (images keep their shape), so bypass the base class flattening.
    def K(self, X, X2=None):
        """k(X, X2) [N, N2] by the double sum over both inputs' orbit elements."""
        X2 = X if X2 is None else X2
        return self._K(X, X2)

    def K_diag(self, X):
        """k(x, x) [N] by the double sum over each input's own orbit elements."""
        return self._K_diag(X)

    def _K(self, X, X2):
        A, B = self.orbit(X), self.orbit(X2)  # [N, P, E], [N2, Q, E]
        wa, wb = self.orbit_weights(X, A.shape[1]), self.orbit_weights(X2, B.shape[1])
        Kg = self.base.K(A.reshape(-1, A.shape[-1]), B.reshape(-1, B.shape[-1]))  # [N·P, N2·Q]
        Kg = Kg.reshape(A.shape[0], A.shape[1], B.shape[0], B.shape[1])
        return torch.einsum("ip,ipjq,jq->ij", wa, Kg, wb)

    def _K_diag(self, X):
        A = self.orbit(X)  # [N, P, E]
        w = self.orbit_weights(X, A.shape[1])
        return torch.stack([w[n] @ self.base.K(A[n]) @ w[n] for n in range(A.shape[0])])
