"""Brute-force covariances of orbit kernels: explicit loops over the patches / orbit elements with the base kernel.

An orbit kernel says f(x) = Σ_a w_a g_{c(a)}(x_a): each input is a list of terms (group c, weight w_a, element x_a),
with independent g_c ~ GP(0, k_g) per group (one group except for the multi-channel kernel). Then

    k_f(x, x') = Σ_a Σ_b [c(a) = c(b)] w_a w_b k_g(x_a, x'_b),     cov(g_c(z), f(x)) = Σ_{a: c(a)=c} w_a k_g(z, x_a).

The terms are built here by slicing (patches) or by explicit transforms (orbits), independently of `unfold`,
`orbit()` and the fast covariances in `invlab.covariances`, so every fast path can be checked against them.
"""
from __future__ import annotations

import torch

from invlab.kernels.convolutional import Convolutional, MultiChannelConvolutional
from invlab.kernels.invariant import InvariantKernel
from invlab.transforms import CyclicShiftOrbit, FlipOrbit, PermutationOrbit, Rot90Orbit


def explicit_patches(X: torch.Tensor, h: int, w: int, sh: int = 1, sw: int = 1) -> torch.Tensor:
    """[N, C, H, W] → [N, P, C, h, w] by slicing, positions row-major."""
    H, W = X.shape[-2:]
    return torch.stack([X[:, :, i:i + h, j:j + w] for i in range(0, H - h + 1, sh) for j in range(0, W - w + 1, sw)], 1)


def explicit_orbit(augmentation, x: torch.Tensor) -> list[torch.Tensor]:
    """Every element of the finite orbit of one input x, by its definition."""
    if isinstance(augmentation, Rot90Orbit):
        return [torch.rot90(x, k, dims=(-2, -1)) for k in range(4)]
    if isinstance(augmentation, FlipOrbit):
        flips = {"horizontal": [(), (-1,)], "vertical": [(), (-2,)], "both": [(), (-1,), (-2,), (-2, -1)]}
        return [x.flip(d) if d else x for d in flips[augmentation.axes]]
    if isinstance(augmentation, PermutationOrbit):
        return [x[list(p)] for p in augmentation.table]
    if isinstance(augmentation, CyclicShiftOrbit):
        return [torch.roll(x, (dy, dx), (-2, -1)) for dy in range(x.shape[-2]) for dx in range(x.shape[-1])]
    raise NotImplementedError(f"no explicit orbit for {type(augmentation).__name__}: add it here")


def terms(kernel, X: torch.Tensor) -> list[list[tuple[int, torch.Tensor, torch.Tensor]]]:
    """Per input, every (group, weight, element vector) that f(x) sums."""
    if isinstance(kernel, InvariantKernel):
        out = []
        for x in X:
            elements = explicit_orbit(kernel.augmentation, x)
            w = torch.tensor(1.0 / len(elements), dtype=X.dtype)
            out.append([(0, w, e.reshape(-1)) for e in elements])
        return out
    h, w = kernel.patch_size
    X = kernel.images(X)
    P = explicit_patches(X, h, w, *kernel.stride)  # [N, P', C, h, w]
    N, Pp, C = P.shape[:3]
    if isinstance(kernel, MultiChannelConvolutional):
        Wt = kernel.patch_weights()  # [C, P'] (differentiable: the weights are learnable)
        return [[(c, Wt[c, p], P[n, p, c].reshape(-1)) for c in range(C) for p in range(Pp)] for n in range(N)]
    assert isinstance(kernel, Convolutional), type(kernel)
    wts = kernel.patch_weights()
    wts = torch.full((kernel.num_patches,), kernel.weight, dtype=X.dtype) if wts is None else wts
    if kernel.colour_patches:  # one patch holds every channel
        return [[(0, wts[p], P[n, p].reshape(-1)) for p in range(Pp)] for n in range(N)]
    # grey patches of a colour image: channel-major, then positions
    return [[(0, wts[c * Pp + p], P[n, p, c].reshape(-1)) for c in range(C) for p in range(Pp)] for n in range(N)]


def num_groups(kernel) -> int:
    return kernel.num_channels if isinstance(kernel, MultiChannelConvolutional) else 1


def brute_K(kernel, X: torch.Tensor, X2: torch.Tensor | None = None) -> torch.Tensor:
    """k_f(X, X2) [N, N2] by the double sum over terms, one pair of terms at a time."""
    A, B = terms(kernel, X), terms(kernel, X if X2 is None else X2)
    out = torch.zeros(len(A), len(B), dtype=X.dtype)
    for i, ta in enumerate(A):
        for j, tb in enumerate(B):
            s = 0.0
            for ga, wa, va in ta:
                for gb, wb, vb in tb:
                    if ga == gb:
                        s = s + wa * wb * kernel.base.K(va[None], vb[None])[0, 0]
            out[i, j] = s
    return out


def brute_kff(kernel, X: torch.Tensor) -> torch.Tensor:
    """k_f(x_n, x_n) [N]."""
    return torch.stack([brute_K(kernel, X[n:n + 1])[0, 0] for n in range(X.shape[0])])


def brute_cross(kernel, Z: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """cov(g_c(z_m), f(x_n)) stacked by group: [G·M, N]."""
    G, M = num_groups(kernel), Z.shape[0]
    out = torch.zeros(G * M, X.shape[0], dtype=X.dtype)
    for n, tn in enumerate(terms(kernel, X)):
        for g, w, v in tn:
            out[g * M:(g + 1) * M, n] += w * kernel.base.K(Z, v[None])[:, 0]
    return out
