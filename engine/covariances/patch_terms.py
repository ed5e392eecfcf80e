"""The patches a convolutional kernel sums over for a batch of images: identical patches of an image counted once
(`distinct_patches`, exact) and the last batch's patches kept for the next covariance of the same batch (K_uf and
k_ff of one step share them). See `invlab.covariances.patches`.
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import torch

from ..kernels.convolutional import MultiChannelConvolutional

# -- identical patches of an image, counted once ---------------------------------------------------------------------
DEDUPLICATE_DEVICES = {"cpu"}  # where patches are deduplicated (elsewhere the count of distinct patches would sync)
DEDUPLICATE_BELOW = 0.75  # use the distinct patches when an image has at most this share of P of them


@dataclass
class DistinctPatches:
    """The distinct patches of each image: V [B, Q, E] (zero-padded past an image's own count) and, for each of
    the B×P patches, the index of its distinct patch, `inverse` [B, P]."""

    V: torch.Tensor
    inverse: torch.Tensor

    def weights(self, w: torch.Tensor) -> torch.Tensor:
        """[B, P] weights of the patches → [B, Q] summed weights of the distinct ones (0 on padding)."""
        return w.new_zeros(self.V.shape[:2]).scatter_add(1, self.inverse, w.expand(self.inverse.shape))


def distinct_patches(U: torch.Tensor) -> DistinctPatches | None:
    """Group the identical patches of each of B images, U [B, P, E]; None when that would not pay.

    Patches are sorted by a random projection, and neighbours with the same projection form a group; the groups
    are then checked to hold identical patches (exact, no tolerance: rebuilding U from the groups must give U
    bit for bit), else None."""
    B, P, E = U.shape
    if U.device.type not in DEDUPLICATE_DEVICES or U.requires_grad or B == 0 or P < 2:
        return None
    r = torch.rand(E, generator=torch.Generator().manual_seed(20170601), dtype=U.dtype).to(U.device) + 0.5
    h = torch.matmul(r, U.transpose(1, 2))  # [B, P]: equal patches, equal projections
    hs, order = torch.sort(h, dim=1)
    new = torch.ones_like(hs, dtype=torch.bool)
    new[:, 1:] = hs[:, 1:] != hs[:, :-1]
    group = new.cumsum(1) - 1  # [B, P], in sorted order
    Q = int(group[:, -1].max()) + 1
    if Q > DEDUPLICATE_BELOW * P:
        return None
    inverse = torch.empty_like(group).scatter_(1, order, group)  # [B, P]: each patch's group, original order
    member = torch.zeros(B, Q, dtype=torch.long, device=U.device).scatter_(1, group, order)  # a patch of each group
    flat = U.reshape(B * P, E)
    V = flat.index_select(0, (member + torch.arange(B, device=U.device)[:, None] * P).reshape(-1))  # [B·Q, E]
    rebuilt = V.index_select(0, (inverse + torch.arange(B, device=U.device)[:, None] * Q).reshape(-1))  # [B·P, E]
    if not torch.equal(rebuilt, flat):  # two different patches with one projection: rare, but then no grouping
        return None
    return DistinctPatches(V.reshape(B, Q, E), inverse)


class _LastPatches(threading.local):
    """The patches (and their distinct ones) of the last images asked for: K_uf and k_ff of one batch share them.

    Keyed by the image tensor itself (a weak reference, its in-place version counter) and the patch geometry, so
    a new batch — even one allocated where the last one was — is never mistaken for the last one. One per thread
    (a server trains several sessions at once)."""

    def __init__(self):
        self._key, self._ref, self._value = None, None, None

    def get(self, X: torch.Tensor, geometry: tuple, make):
        key = (X._version, X.shape, X.dtype, X.device, geometry)
        if self._ref is not None and self._ref() is X and self._key == key:
            return self._value
        value = make()
        try:
            self._ref = weakref.ref(X)
        except TypeError:  # not weakly referable: no caching
            return value
        self._key, self._value = key, value
        return value


_LAST = _LastPatches()


def _patch_terms(kernel, X: torch.Tensor, channels: bool = False):
    """(U, distinct) for X: U [B, P, E] the patches (each channel's as its own rows when `channels`), `distinct` the
    grouping of U's identical patches or None. Cached for the last X (it does not depend on any parameter)."""
    geometry = (type(kernel), kernel.image_shape, kernel.patch_size, kernel.stride,
                getattr(kernel, "colour_patches", None), channels)

    def make():
        if channels:
            U = kernel.channel_patches(X)  # [N, C, P, E]
            U = U.reshape(-1, U.shape[2], U.shape[3])  # [N·C, P, E]
        else:
            U = kernel.patches(X)  # [N, P, E]
        return U, distinct_patches(U)

    if X.requires_grad:
        return make()
    return _LAST.get(X, geometry, make)


def _terms(kernel, X):
    """(patches, weights) to sum over: the distinct patches with summed weights where that pays, else all of them.
    A multi-channel kernel's rows are (image, channel) pairs, n·C + c, each with its channel's patch weights."""
    channels = isinstance(kernel, MultiChannelConvolutional)
    U, distinct = _patch_terms(kernel, X, channels)
    if channels:
        N, C, w = X.shape[0], kernel.num_channels, kernel.patch_weights()  # w [C, P]
        w = w.expand(N, C, w.shape[1]).reshape(N * C, -1)  # [N·C, P]
    else:
        w = kernel.orbit_weights(U, U.shape[1])  # [N, P]
    if distinct is None:
        return U, w
    return distinct.V, distinct.weights(w)


__all__ = ["DistinctPatches", "distinct_patches", "DEDUPLICATE_BELOW", "DEDUPLICATE_DEVICES"]
