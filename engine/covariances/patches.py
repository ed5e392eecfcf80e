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
`Kuu_blocks` returns the diagonal blocks of K_uu so that a model can factorise them one at a time (app. C.2).
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import torch
from torch.autograd.function import once_differentiable

from ..inducing import InducingBlocks, InducingPatches, InducingVariables, InterDomainPoints, SharedInducingPatches
from ..kernels import RBF, Kernel, Stationary
from ..kernels.combinators import ChannelAdditive, Sum
from ..kernels.convolutional import Convolutional, MultiChannelConvolutional
from .dispatch import Kff_diag, Kuf, Kuu, Kuu_blocks
from .orbits import orbit_cross

# Chunk budgets: elements of one intermediate ([n, M, P] or [n, s, s]); small on CPU (cache), large on GPU.
CHUNK_ELEMENTS = {"cpu": 1 << 17, "cuda": 1 << 25}
GRAM_TILE = 96  # side of the tiles of a patch Gram matrix (k_ff); only tiles on/above the diagonal are formed


def chunk_elements(device: torch.device) -> int:
    """How many elements one chunk of a patch covariance may hold on `device` (bounds the memory of the [n, M, P]
    blocks)."""
    return CHUNK_ELEMENTS.get(device.type, CHUNK_ELEMENTS["cuda"])


# -- the profile κ of a stationary kernel, as a function of t = c·d² -----------------------------------------------
class _Profile:
    """A kernel's κ (`K_r2`) and slope (`K_r2_derivatives`), evaluated at t = c·d² (d² the unscaled squared
    distance): c = rate·γ for the RBF, whose κ(r²) = exp(rate·r²), so κ = exp(t) in one in-place pass and dκ/dt = κ;
    c = γ otherwise (t = r²), with the slope in closed form where the kernel has it, else by autograd on the chunk."""

    def __init__(self, kernel: Stationary):
        self.rbf = isinstance(kernel, RBF)
        self.rate = kernel.rate if self.rbf else None
        self.K_r2, self.derivatives = kernel.K_r2, kernel.K_r2_derivatives

    def scale(self, gamma: torch.Tensor) -> torch.Tensor:
        return self.rate * gamma if self.rbf else gamma

    def value_(self, t: torch.Tensor) -> torch.Tensor:
        """κ(t), overwriting t where possible. (Rounding may leave t a hair above 0 for the RBF: exp is fine there.)"""
        if self.rbf:
            return t.exp_()
        return self.K_r2(t.clamp_min_(0.0))

    def value_and_slope(self, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """κ(t) and dκ/dt (t is left untouched)."""
        if self.rbf:
            k = torch.exp(t)
            return k, k
        if self.derivatives is not None:
            k, slope, _ = self.derivatives(t.clamp_min(0.0))
            return k, slope
        with torch.enable_grad():
            r2 = t.clamp_min(0.0).requires_grad_()
            k = self.K_r2(r2)
            (slope,) = torch.autograd.grad(k.sum(), r2)
        return k.detach(), slope


def _left(U: torch.Tensor) -> torch.Tensor:
    """[.., E+2] = [u, 1, ‖u‖²]; with `_right`, left(a) · right(b) = c‖a − b‖² in one matrix product."""
    sq = (U * U).sum(-1, keepdim=True)
    return torch.cat([U, torch.ones_like(sq), sq], -1)


def _right(U: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """[.., E+2] = [−2c u, c‖u‖², c]."""
    sq = (U * U).sum(-1, keepdim=True)
    return torch.cat([-2.0 * c * U, c * sq, c * torch.ones_like(sq)], -1)


def _augment(U: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return _left(U), _right(U, c)


def _ranges(total: int, step: int):
    step = max(1, int(step))
    return [(a, min(a + step, total)) for a in range(0, total, step)]


# -- K_uf: Σ_p w_np κ(c‖z_m − u_np‖²) --------------------------------------------------------------------------
class PatchCross(torch.autograd.Function):
    """Z [M, E], U [N, P, E], w [N, P], γ [] → [M, N] with entries Σ_p w_np κ(γ‖z_m − u_np‖²) (unit variance)."""

    @staticmethod
    def forward(ctx, Z, U, w, gamma, profile: _Profile, chunk: int):
        """K_uf of a convolutional kernel for inducing patches `Z` [M, E] and input patches `U` [N, P, E] with patch
        weights `w` [P] and inverse squared lengthscale `gamma`: the weighted sum over patches of κ(γ·‖z − u_p‖²)
        (van der Wilk et al., "Convolutional Gaussian Processes", 2017, eq. 13), chunked over N; returns [M, N]."""
        M, (N, P, _) = Z.shape[0], U.shape
        Zr, Ul = _right(Z, profile.scale(gamma)), _left(U)  # [M, E+2], [N, P, E+2]
        out = torch.empty(N, M, dtype=Z.dtype, device=Z.device)
        n = max(1, chunk // max(M * P, 1))
        for a, b in _ranges(N, n):
            k = profile.value_(torch.matmul(Zr, Ul[a:b].transpose(1, 2)))  # [n, M, P]
            out[a:b] = torch.bmm(k, w[a:b, :, None])[..., 0]  # [n, M]
        ctx.save_for_backward(Z, U, w, gamma)
        ctx.profile, ctx.n, ctx.out = profile, n, out
        return out.T

    @staticmethod
    @once_differentiable
    def backward(ctx, gout):  # gout [M, N]
        """Gradients of `PatchCross.forward` with respect to Z, U, w and γ from `gout` [M, N], recomputed chunk by chunk
        instead of kept from the forward pass."""
        Z, U, w, gamma = ctx.saved_tensors
        need_Z, need_U, need_w, need_g = ctx.needs_input_grad[:4]
        if ctx.profile.rbf and not need_U:
            return PatchCross._backward_rbf(ctx, gout, Z, U, w, gamma) + (None, None)
        profile, n = ctx.profile, ctx.n
        c = profile.scale(gamma)
        Zr, Ul = _right(Z, c), _left(U)
        gT = gout.T.contiguous()  # [N, M]
        gZ = torch.zeros_like(Z) if need_Z else None
        gU = torch.empty_like(U) if need_U else None
        gw = torch.empty_like(w) if need_w else None
        gt = Z.new_zeros(()) if need_g else None  # Σ (dL/dt) t
        for a, b in _ranges(U.shape[0], n):
            t = torch.matmul(Zr, Ul[a:b].transpose(1, 2))  # [n, M, P], recomputed: cheaper than keeping it
            k, slope = profile.value_and_slope(t)
            if need_w:
                gw[a:b] = torch.bmm(gT[a:b, None, :], k)[:, 0]  # Σ_m g_mn κ_mnp
            if need_Z or need_U or need_g:  # k is no longer needed: dL/dt overwrites the slope (= k for the RBF)
                Q = slope.mul_(gT[a:b, :, None]).mul_(w[a:b, None, :])  # dL/dt [n, M, P]
                if need_g:
                    gt = gt + torch.dot(Q.reshape(-1), t.reshape(-1))
                if need_Z:  # t = c‖z_m − u_np‖²: ∂t/∂z_m = 2c (z_m − u_np)
                    gZ += 2.0 * c * (Q.sum((0, 2))[:, None] * Z - torch.bmm(Q, U[a:b]).sum(0))
                if need_U:
                    gU[a:b] = 2.0 * c * (Q.sum(1)[..., None] * U[a:b] - torch.matmul(Q.transpose(1, 2), Z))
        ggamma = gt / gamma if need_g else None  # t ∝ γ
        return gZ, gU, gw, ggamma, None, None

    @staticmethod
    def _backward_rbf(ctx, gout, Z, U, w, gamma):
        """The RBF without gradients for U: dL/dt = g_mn w_np κ_mnp is never formed; each reduction of it
        factors through κ ⊙ w or through g·κ (3 passes over each [n, M, P] chunk instead of 8)."""
        need_Z, _, need_w, need_g = ctx.needs_input_grad[:4]
        c, n = ctx.profile.scale(gamma), ctx.n
        Zr, Ul = _right(Z, c), _left(U)
        gT = gout.T.contiguous()  # [N, M]
        gk = torch.empty_like(w) if (need_w or need_g) else None  # Σ_m g_mn κ_mnp [N, P]
        QU = torch.zeros_like(Z) if (need_Z or need_g) else None  # Σ_np (dL/dt)_mnp u_np [M, E]
        for a, b in _ranges(U.shape[0], n):
            k = torch.matmul(Zr, Ul[a:b].transpose(1, 2)).exp_()  # [n, M, P], recomputed: cheaper than keeping it
            if gk is not None:
                gk[a:b] = torch.bmm(gT[a:b, None, :], k)[:, 0]
            if QU is not None:
                QU += (gT[a:b, :, None] * torch.bmm(k.mul_(w[a:b, None, :]), U[a:b])).sum(0)
        rows = (gT * ctx.out).sum(0)  # Σ_np dL/dt = Σ_n g_mn K_uf[m, n]  [M]
        gZ = 2.0 * c * (rows[:, None] * Z - QU) if need_Z else None  # ∂t/∂z_m = 2c (z_m − u_np)
        ggamma = None
        if need_g:  # Σ dL/dt · t = c Σ dL/dt ‖z − u‖², expanded; t ∝ γ
            d2 = (rows * (Z * Z).sum(1)).sum() + (w * gk * (U * U).sum(2)).sum() - 2.0 * (Z * QU).sum()
            ggamma = c * d2 / gamma
        return gZ, None, gk if need_w else None, ggamma


# -- k_ff: Σ_pq w_np w_nq κ(c‖u_np − u_nq‖²), by symmetric tiles ----------------------------------------------------
class PatchGramQuad(torch.autograd.Function):
    """U [N, P, E], w [N, P], γ [] → [N] with entries Σ_p Σ_q w_np w_nq κ(γ‖u_np − u_nq‖²) (unit variance).

    Each output is one image's scalar, so its derivatives with respect to that image's U, w and γ do not depend
    on the incoming gradient: the forward pass forms them tile by tile while the tile is in cache ([N, P, E],
    [N, P] and [N]: the size of the inputs), and the backward pass only scales them. No Gram tile is computed
    twice and none is kept.
    """

    @staticmethod
    def forward(ctx, U, w, gamma, profile: _Profile, chunk: int, tile: int):
        """The diagonal of K_ff of a convolutional kernel: for each input, Σ_p Σ_q w_p w_q κ(γ·‖u_p − u_q‖²) over its
        patches `U` [N, P, E] (van der Wilk et al., 2017, eq. 11), tiled over P; returns [N]."""
        N, P, E = U.shape
        need_U, need_w, need_g = ctx.needs_input_grad[:3]
        grads = need_U or need_w or need_g
        c = profile.scale(gamma)
        L, R = _augment(U, c)
        tiles = _ranges(P, tile)
        s = tiles[0][1] - tiles[0][0]
        n = max(1, chunk // (s * s))
        out = U.new_zeros(N)
        dU = torch.zeros_like(U) if need_U else None
        dw = torch.zeros_like(w) if need_w else None
        dt = U.new_zeros(N) if need_g else None  # Σ (∂out/∂t) t per image
        for a, b in _ranges(N, n):
            for i, (i0, i1) in enumerate(tiles):
                for j0, j1 in tiles[i:]:
                    f = 1.0 if j0 == i0 else 2.0  # a tile above the diagonal stands for its mirror image too
                    wi, wj = w[a:b, i0:i1], w[a:b, j0:j1]
                    t = torch.bmm(L[a:b, i0:i1], R[a:b, j0:j1].transpose(1, 2))  # [n, s, s']
                    if not grads:
                        k = profile.value_(t)
                    else:
                        k, slope = profile.value_and_slope(t)
                    kwj = torch.bmm(k, wj[..., None])[..., 0]  # [n, s]
                    out[a:b] += f * (wi * kwj).sum(1)
                    if need_w and j0 == i0:  # k is symmetric on the diagonal: both sides give k·w
                        dw[a:b, i0:i1] += 2.0 * kwj
                    elif need_w:
                        dw[a:b, i0:i1] += f * kwj
                        dw[a:b, j0:j1] += f * torch.bmm(wi[:, None, :], k)[:, 0]
                    if need_U:
                        Q = slope * (f * wi[:, :, None] * wj[:, None, :])  # ∂out/∂t [n, s, s']
                        if need_g:
                            dt[a:b] += (Q * t).sum((1, 2))
                        Ui, Uj = U[a:b, i0:i1], U[a:b, j0:j1]  # t = c‖u_p − u_q‖²: ∂t/∂u_p = 2c (u_p − u_q)
                        dU[a:b, i0:i1] += 2.0 * c * (Q.sum(2)[..., None] * Ui - torch.bmm(Q, Uj))
                        dU[a:b, j0:j1] += 2.0 * c * (Q.sum(1)[..., None] * Uj - torch.bmm(Q.transpose(1, 2), Ui))
                    elif need_g:  # the same sum as a weighted quadratic form of slope ⊙ t
                        st = t.mul_(slope) if profile.rbf else slope * t
                        dt[a:b] += f * (wi * torch.bmm(st, wj[..., None])[..., 0]).sum(1)
        ctx.save_for_backward(dU, dw, dt, gamma)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, gout):  # gout [N]
        """Gradients of `PatchGramQuad.forward` with respect to U, w and γ from `gout` [N], from the derivatives saved
        in the forward pass."""
        dU, dw, dt, gamma = ctx.saved_tensors
        need_U, need_w, need_g = ctx.needs_input_grad[:3]
        gU = gout[:, None, None] * dU if need_U else None
        gw = gout[:, None] * dw if need_w else None
        ggamma = (gout * dt).sum() / gamma if need_g else None  # t ∝ γ
        return gU, gw, ggamma, None, None, None


# -- from kernels to the functions above -------------------------------------------------------------------------------
def _stationary_parts(base: Kernel):
    """The stationary kernels (one, or one per channel slice) of a k_g the fast path handles, else None."""
    if isinstance(base, Stationary):
        return [base]
    if isinstance(base, ChannelAdditive) and all(isinstance(k, Stationary) for k in base.parts):
        return list(base.parts)
    return None


def _scaled(k: Stationary, *tensors):
    """Isotropic: the tensors as they are and γ = 1/ℓ² (its gradient is one reduction). ARD: tensors / ℓ, γ = 1."""
    ell = k.lengthscale()
    if k.ard:
        return [x / ell for x in tensors] + [torch.ones((), dtype=ell.dtype, device=ell.device)]
    return list(tensors) + [ell.reshape(()) ** -2]


def _slices(base, E):
    return base.slices(E) if isinstance(base, ChannelAdditive) else [slice(None)]


def patch_cross(base: Kernel, Z: torch.Tensor, U: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Σ_p w_np k_g(z_m, u_np) for Z [M, E], U [N, P, E], w [N, P] → [M, N] (a stationary or channel-additive k_g)."""
    out = 0.0
    chunk = chunk_elements(U.device)
    parts = _stationary_parts(base)
    for k, s in zip(parts, _slices(base, U.shape[-1])):
        Zs, Us, gamma = _scaled(k, Z[:, s], U[..., s])
        out = out + k.variance() * PatchCross.apply(Zs, Us, w, gamma, _Profile(k), chunk)
    return out


def patch_gram_quad(base: Kernel, U: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Σ_pq w_np w_nq k_g(u_np, u_nq) for U [N, P, E], w [N, P] → [N]."""
    out = 0.0
    chunk = chunk_elements(U.device)
    parts = _stationary_parts(base)
    for k, s in zip(parts, _slices(base, U.shape[-1])):
        Us, gamma = _scaled(k, U[..., s])
        out = out + k.variance() * PatchGramQuad.apply(Us, w, gamma, _Profile(k), chunk, GRAM_TILE)
    return out


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


__all__ = ["Kuu_blocks", "PatchCross", "PatchGramQuad", "patch_cross", "patch_gram_quad", "channel_cross",
           "distinct_patches", "DistinctPatches", "CHUNK_ELEMENTS", "GRAM_TILE"]
