"""Covariances of `InducingBlocks` with a `Sum` kernel (block-diagonal K_uu, K_uf stacked by block, k_ff summed: e.g.
the convolutional + RBF model of van der Wilk, Rasmussen & Hensman 2017, sec. 4), and `Kuu_blocks`, the diagonal
blocks of K_uu that a model factorises one at a time (app. C.2)."""
from __future__ import annotations

import torch

from ..inducing import InducingBlocks, InducingVariables, SharedInducingPatches
from ..kernels import Kernel
from ..kernels.combinators import Sum
from ..kernels.convolutional import MultiChannelConvolutional
from .dispatch import Kff_diag, Kuf, Kuu, Kuu_blocks


@Kuu.register(InducingBlocks, Sum)
def _kuu_blocks(inducing, kernel):
    return torch.block_diag(*Kuu_blocks(inducing, kernel))


def _pairs(inducing: InducingBlocks, kernel: Sum):
    if len(inducing.blocks) != len(kernel.parts):
        raise NotImplementedError(f"InducingBlocks has {len(inducing.blocks)} blocks but the Sum kernel has "
                                  f"{len(kernel.parts)} parts; they pair one to one")
    return zip(inducing.blocks, kernel.parts)


@Kuf.register(InducingBlocks, Sum)
def _kuf_blocks(inducing, kernel, X):
    return torch.cat([Kuf(b, k, X) for b, k in _pairs(inducing, kernel)], 0)  # [Σ M_b, N]


@Kff_diag.register(InducingBlocks, Sum)
def _kff_diag_blocks(inducing, kernel, X):
    return sum(Kff_diag(b, k, X) for b, k in _pairs(inducing, kernel))


# -- the diagonal blocks of K_uu -------------------------------------------------------------------------------------
@Kuu_blocks.register(InducingVariables, Kernel)
def _kuu_one_block(inducing, kernel):
    return [Kuu(inducing, kernel)]


@Kuu_blocks.register(SharedInducingPatches, MultiChannelConvolutional)
def _kuu_shared_blocks(inducing, kernel):
    K = kernel.base.K(inducing.Z)  # [M, M]: every channel's block is the same k_g(Z, Z)
    return [K] * inducing.num_outputs


@Kuu_blocks.register(InducingBlocks, Sum)
def _kuu_sum_blocks(inducing, kernel):
    return [K for b, k in _pairs(inducing, kernel) for K in Kuu_blocks(b, k)]
