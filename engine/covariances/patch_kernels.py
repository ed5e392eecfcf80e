"""The arithmetic of a convolutional kernel's two expensive pieces, K_uf and k_ff, over image patches (van der Wilk,
Rasmussen & Hensman 2017, sec. 3 and appendix A.2): `patch_cross` and `patch_gram_quad`, each a
`torch.autograd.Function` that works in chunks of images and tiles of each image's patch Gram matrix so that every
intermediate stays small. How and why is in `invlab.covariances.patches`, which registers them for the
(inducing, kernel) pairs they serve.
"""
from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from ..kernels import RBF, Kernel, Stationary
from ..kernels.combinators import ChannelAdditive

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


__all__ = ["PatchCross", "PatchGramQuad", "patch_cross", "patch_gram_quad", "chunk_elements", "CHUNK_ELEMENTS",
           "GRAM_TILE"]
