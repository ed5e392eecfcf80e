"""Fast covariances of inducing patches with convolutional kernels (van der Wilk, Rasmussen & Hensman 2017, sec. 3 and
appendix A.2).

For a stationary patch kernel k_g(z, z') = σ² κ(‖z − z'‖² / ℓ²) the two expensive pieces are

    K_uf[m, n]   = σ² Σ_p w_np κ(r²(z_m, x_n[p]))                          (eq. 15, 19)   N·M·P terms
    k_ff[n]      = σ² Σ_p Σ_q w_np w_nq κ(r²(x_n[p], x_n[q]))              (eq. 14, 18)   N·P² terms

and both only need inner products, expanded as in eq. A.5: r² = γ(‖a‖² + ‖b‖² − 2 a·b), γ = 1/ℓ². The inner
products of all patches with all inducing patches are one batched matrix product of the `unfold`ed patches (eq. A.5
is a convolution; measured on CPU, `conv2d` and `unfold` + GEMM take the same time — 41 vs 39 ms for 64 MNIST
images against 256 5×5 inducing patches — and the GEMM form shares its code with the backward pass, so it is used
on every device). The norms ride along in the same product by augmenting both operands with two columns.

What decides the speed is memory traffic, not flops: a plain autograd transcription materialises, and keeps for
the backward pass, several [N, M, P] and [N, P, P] tensors. Here both are `torch.autograd.Function`s that work in
chunks of images (and, for k_ff, in tiles of each image's patch Gram matrix), so every intermediate is small and
stays in cache, and memory is bounded whatever N and P are. Nothing of size [N, P, M, E] is ever built.
- k_ff uses the symmetry of the patch Gram: only tiles on and above the diagonal are formed, those above it
  counted twice. Each output is one image's scalar, so its derivatives do not depend on the incoming gradient:
  the forward pass forms them while each tile is in cache, and the backward pass only scales them.
- K_uf keeps only its inputs and recomputes each chunk in the backward pass; for the RBF (dκ/dt = κ) the
  gradients factor through κ ⊙ w, so dL/dt is never formed (3 passes over a chunk instead of 8).
- Gradients that are not needed (e.g. for the data patches) are not formed.
- Identical patches of one image are summed before any kernel is evaluated (`distinct_patches`): Σ_p w_p k(·, u_p)
  = Σ_a W_a k(·, v_a) with v_a the image's distinct patches and W_a the summed weights of their copies. Exact (only
  the order of a floating-point sum changes), and for images with large blank or repeated areas it is what makes
  the difference: a 28×28 `rectangles` outline has 27 distinct 3×3 patches of its 676, so k_ff, which costs P² per
  image, does about 600× less work. Done on the CPU only (counting the distinct patches is a host sync).

Registered pairs (the brute-force orbit sums — `orbits.orbit_cross`, and `channel_cross` here for shared inducing
patches — serve kernels the fast path does not handle and stay the reference for tests):
- `InducingPatches` × `Convolutional` (translation invariant and weighted, grey or colour patches, any
  stationary k_g or the channel-additive k_g of eq. 25);
- `SharedInducingPatches` × `MultiChannelConvolutional` (block-diagonal K_uu, K_uf stacked by channel);
- `InducingBlocks` × `Sum` (block-diagonal K_uu, K_uf stacked by block, k_ff summed), e.g. conv + RBF.
`Kuu_blocks` (`invlab.covariances.blocks`, with the `InducingBlocks` × `Sum` pairs) returns the diagonal blocks of K_uu
so that a model can factorise them one at a time (app. C.2).
"""
from __future__ import annotations

import torch

from ..inducing import InducingPatches, InterDomainPoints, SharedInducingPatches
from ..kernels import Kernel
from ..kernels.convolutional import Convolutional, MultiChannelConvolutional
from .dispatch import Kff_diag, Kuf, Kuu, Kuu_blocks
from .orbits import orbit_cross
from .patch_kernels import (
    CHUNK_ELEMENTS,
    GRAM_TILE,
    PatchCross,
    PatchGramQuad,
    _Profile,
    _stationary_parts,
    patch_cross,
    patch_gram_quad,
)
from .patch_terms import DistinctPatches, _terms, distinct_patches


# -- registrations ---------------------------------------------------------------------------------------------------
@Kuf.register(InducingPatches, Convolutional)
def _kuf_patches(inducing, kernel, X):
    if _stationary_parts(kernel.base) is None:
        return orbit_cross(kernel, inducing.Z, X)
    U, w = _terms(kernel, X)  # [N, P or Q, E], [N, P or Q]
    return patch_cross(kernel.base, inducing.Z, U, w)  # [M, N]


@Kff_diag.register(InducingPatches, Convolutional)
def _kff_diag_patches(inducing, kernel, X):
    if _stationary_parts(kernel.base) is None:
        return kernel.K_diag(X)
    U, w = _terms(kernel, X)
    return patch_gram_quad(kernel.base, U, w)  # [N]


def channel_cross(kernel: MultiChannelConvolutional, Z: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """K_uf of inducing patches shared by the channels, brute force: block c is Σ_p w_pc k_g(z_m, x_n[pc]), the
    covariance of g_c(z_m) with f(x_n) (eq. 23). Z [M, E], X [N, C, H, W] → [C·M, N], channel blocks stacked."""
    A = kernel.channel_patches(X)  # [N, C, P, E]
    w = kernel.patch_weights()  # [C, P]
    blocks = []
    for c in range(kernel.num_channels):
        Kg = kernel.base.K(Z, A[:, c].reshape(-1, A.shape[-1])).reshape(Z.shape[0], A.shape[0], A.shape[2])
        blocks.append((Kg * w[c]).sum(-1))  # [M, N]
    return torch.cat(blocks, 0)  # [C·M, N]


@Kuu.register(SharedInducingPatches, MultiChannelConvolutional)
def _kuu_shared(inducing, kernel):
    return torch.block_diag(*Kuu_blocks(inducing, kernel))  # [C·M, C·M]


@Kuf.register(SharedInducingPatches, MultiChannelConvolutional)
def _kuf_shared(inducing, kernel, X):
    if _stationary_parts(kernel.base) is None:
        return channel_cross(kernel, inducing.Z, X)
    N, C = X.shape[0], kernel.num_channels
    U, W = _terms(kernel, X)  # rows n·C + c
    K = patch_cross(kernel.base, inducing.Z, U, W)  # [M, N·C]
    return K.reshape(-1, N, C).permute(2, 0, 1).reshape(C * inducing.num_patches, N)  # [C·M, N], channel blocks


@Kff_diag.register(SharedInducingPatches, MultiChannelConvolutional)
def _kff_diag_shared(inducing, kernel, X):
    if _stationary_parts(kernel.base) is None:
        return kernel.K_diag(X)
    U, W = _terms(kernel, X)  # rows n·C + c
    return patch_gram_quad(kernel.base, U, W).reshape(X.shape[0], kernel.num_channels).sum(1)


def _refuse(what):
    def fn(inducing, kernel, *args):
        raise NotImplementedError(what.format(i=type(inducing).__name__, k=type(kernel).__name__))

    return fn


_MULTI = "{k} has one inducing output per channel: use SharedInducingPatches (num_outputs = channels), not {i}"
_MULTI_POINTS = ("{k} has one inducing output per channel: use SharedInducingPatches (num_outputs = channels); "
                 "{i} would give one inducing output for all channels")
_SHARED = "SharedInducingPatches belong with MultiChannelConvolutional, not with {k}"
for _fn in (Kuu, Kuf, Kff_diag):
    _fn.register(InducingPatches, MultiChannelConvolutional)(_refuse(_MULTI))
    _fn.register(InterDomainPoints, MultiChannelConvolutional)(_refuse(_MULTI_POINTS))
    _fn.register(SharedInducingPatches, Kernel)(_refuse(_SHARED))


__all__ = ["Kuu_blocks", "PatchCross", "PatchGramQuad", "patch_cross", "patch_gram_quad", "channel_cross",
           "distinct_patches", "DistinctPatches", "CHUNK_ELEMENTS", "GRAM_TILE", "_Profile"]
