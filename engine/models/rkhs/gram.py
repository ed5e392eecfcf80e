"""The representer Gram matrix of eq. 4 as an operator, and the fast product of eq. 11 (Zhang, Lee & Teh 2013, sec. 3
and 5).

The solution is f = Σ_b α_b z_b over the representers of every functional in the objective (eq. 3), so the
values of all those functionals at f are one product with the Gram matrix, F = K α, and the penalty is
½ αᵀ K α = ½ α·F. `RepresenterGram` holds the blocks of functionals (labelled evaluations first, then the
invariances) and computes K α:

- dense: every block pair materialised once and cached (the kernel's hyper-parameters are fixed, not learnt:
  eq. 4 is not an evidence, and minimising it over ℓ would be meaningless);
- fast: for partial derivatives at points under a stationary kernel with closed-form derivatives, the
  (PD, PD) block N (P·D × P·D) is never formed. Eq. 11 (for the Gaussian kernel),

      G = σ⁻⁴ [σ² A K + X Q − X ∘ (1_n ⊗ 1_lᵀ Q)],   Q_ij = K_ij (Λ_ji − Λ_ii),   Λ = Xᵀ A,

  gives N α in O(P² D) time and O(P² + P D) memory instead of O(P² D²). `fast_gradient` is eq. 11 verbatim
  (paper layout: X, A, G are [D, P]); `partials_partials_matmul` is the same identity for any profile
  s² φ(r²) (RBF, Matérn 5/2), ARD and several outputs, in the engine's [P, D] layout, and the (evaluation,
  PD) cross blocks get the analogous O(L P D) products.

All products are plain differentiable torch ops, so autograd gives the gradient of the objective through them.
"""
from __future__ import annotations

import torch
from torch import nn

from ...errors import ConfigError
from ...kernels import Kernel, square_distance
from .functionals import Evaluation, Functionals, PartialDerivatives, check_norms, inner, profile_of, scaled


# -- eq. 11 verbatim -------------------------------------------------------------------------------------------------
def fast_gradient(X: torch.Tensor, A: torch.Tensor, K: torch.Tensor, sigma: float) -> torch.Tensor:
    """G = N α for partial-derivative functionals at all l points under κ_σ, in the paper's layout (eq. 11).

    X: [n, l] the points as columns; A: [n, l] the coefficients α_{i,d} as columns; K: [l, l] = κ_σ(x_i, x_j).
    Returns G [n, l] with G_{d,i} = Σ_{j,d'} ⟨z_{i,d}, z_{j,d'}⟩ α_{j,d'}. O(l² n) time.
    """
    Lam = X.T @ A  # Λ = X'A  [l, l]
    Q = K * (Lam.T - torch.diagonal(Lam)[:, None])  # Q_ij = K_ij (Λ_ji − Λ_ii)
    return (sigma**2 * A @ K + X @ Q - X * Q.sum(0)[None, :]) / sigma**4


def dense_partials_gram(X: torch.Tensor, sigma: float) -> torch.Tensor:
    """The materialised N [(i,d), (j,d')] = κ_ij/σ⁴ [σ² δ_dd' − (x_i − x_j)_d (x_i − x_j)_d'] (eq. 8) for X [l, n],
    as an (l·n × l·n) matrix: O(l² n²) memory — the vanilla implementation eq. 11 avoids."""
    l, n = X.shape
    R = X[:, None, :] - X[None, :, :]  # [l, l, n]
    K = torch.exp(-0.5 * (R**2).sum(-1) / sigma**2)
    eye = torch.eye(n, dtype=X.dtype, device=X.device)
    N = K[:, :, None, None] * (sigma**2 * eye - R[:, :, :, None] * R[:, :, None, :]) / sigma**4  # [i, j, d, d']
    return N.permute(0, 2, 1, 3).reshape(l * n, l * n)


# -- the same identities for any profile, engine layout --------------------------------------------------------------
def _ell(kernel) -> torch.Tensor:
    return kernel.lengthscale()


def eval_partials_matmul(s2, d1, Xa, Pb, ell, alpha):
    """Σ_{j,d} ⟨k(x_i,·), z_{j,d}⟩ α_{j,d,c} = −2s² Σ_j φ'_ij (x̃_i − p̃_j)·α̃_jc with α̃ = α/ℓ.

    d1 = φ'(r̃²) [Ma, P]; Xa [Ma, D], Pb [P, D] scaled; alpha [P, D, C] → [Ma, C]. O(Ma P D C)."""
    P, D, C = alpha.shape
    at = alpha / ell.reshape(-1, 1) if ell.dim() else alpha / ell  # α̃ [P, D, C]
    mixed = (d1 @ at.reshape(P, D * C)).reshape(-1, D, C)  # Σ_j φ'_ij α̃_jdc  [Ma, D, C]
    first = torch.einsum("id,idc->ic", Xa, mixed)
    second = d1 @ torch.einsum("jd,jdc->jc", Pb, at)
    return -2.0 * s2 * (first - second)


def partials_eval_matmul(s2, d1, Xa, Pb, ell, beta):
    """The transpose: Σ_i ⟨z_{j,d}, k(x_i,·)⟩ β_ic = −2s²/ℓ_d Σ_i φ'_ij (x̃_i − p̃_j)_d β_ic → [P, D, C]."""
    Ma, D = Xa.shape
    C = beta.shape[1]
    xb = (d1.T @ (Xa[:, :, None] * beta[:, None, :]).reshape(Ma, D * C)).reshape(-1, D, C)  # Σ_i φ'_ij x̃_id β_ic
    pb = Pb[:, :, None] * (d1.T @ beta)[:, None, :]  # p̃_jd Σ_i φ'_ij β_ic
    out = -2.0 * s2 * (xb - pb)
    return out / ell.reshape(1, -1, 1) if ell.dim() else out / ell


def partials_partials_matmul(s2, d1, d2, Pa, Pb, ell, alpha):
    """Σ_{j,d'} ⟨z_{i,d}, z_{j,d'}⟩ α_{j,d',c} for PD at Pa [Ma, D] and Pb [Mb, D] (scaled), alpha [Mb, D, C].

    ⟨z_{i,d}, z_{j,d'}⟩ = −2s²/(ℓ_d ℓ_d') [2φ''_ij r̃^d r̃^d' + φ'_ij δ_dd'], r̃ = p̃_i − q̃_j, so with Λ_ijc = p̃_i·α̃_jc
    (the paper's Λ = X'A) and W_ijc = φ''_ij (Λ_ijc − Λ_jjc):
      out_idc = −2s²/ℓ_d [2 (p̃_id Σ_j W_ijc − Σ_j W_ijc q̃_jd) + Σ_j φ'_ij α̃_jdc].
    For the RBF (φ' = −φ/2, φ'' = φ/4) this is eq. 11. O(Ma Mb D C) time, O(Ma Mb C) memory."""
    Mb, D, C = alpha.shape
    at = alpha / ell.reshape(-1, 1) if ell.dim() else alpha / ell
    Lam = torch.einsum("id,jdc->ijc", Pa, at)  # [Ma, Mb, C]
    mu = torch.einsum("jd,jdc->jc", Pb, at)  # Λ_jj for the second set  [Mb, C]
    W = d2[:, :, None] * (Lam - mu[None, :, :])
    radial = Pa[:, :, None] * W.sum(1)[:, None, :] - torch.einsum("ijc,jd->idc", W, Pb)
    direct = (d1 @ at.reshape(Mb, D * C)).reshape(-1, D, C)
    out = -2.0 * s2 * (2.0 * radial + direct)
    return out / ell.reshape(1, -1, 1) if ell.dim() else out / ell


# -- the operator ----------------------------------------------------------------------------------------------------
class RepresenterGram(nn.Module):
    """K over blocks of functionals: `matmul(α) = K α`, `dense()`, and `values(X, α)` = f(X) for f = Σ α_b z_b."""

    def __init__(self, kernel: Kernel, blocks: list[Functionals], fast: bool = True, max_dense: int = 8000):
        super().__init__()
        if not blocks:
            raise ConfigError("the representer expansion needs at least one functional")
        self.kernel = kernel
        self.blocks = nn.ModuleList(blocks)
        self.sizes = [len(b) for b in blocks]
        self.offsets = [0]
        for s in self.sizes:
            self.offsets.append(self.offsets[-1] + s)
        structurable = profile_of(kernel) is not None
        self.fast = bool(fast and structurable and any(isinstance(b, PartialDerivatives) for b in blocks))
        dense_size = sum(0 if (self.fast and isinstance(b, PartialDerivatives)) else s
                         for b, s in zip(blocks, self.sizes))
        if dense_size > max_dense:
            raise ConfigError(
                f"the representer expansion has {dense_size} functionals to materialise (Gram matrix {dense_size}², "
                f"{dense_size**2 * 8 / 2**30:.1f} GiB in float64), above max_dense = {max_dense}. Use fewer labelled "
                "or unlabelled points (labelled, max_unlabelled), fewer transformations, or partial derivatives with "
                "an RBF/Matérn kernel and fast_gradient (eq. 11 never materialises their block).")
        self._cache: dict | None = None
        self._key = None

    @property
    def size(self) -> int:
        """B, the number of representers: labelled evaluations plus invariance functionals."""
        return self.offsets[-1]

    def split(self, alpha: torch.Tensor) -> list[torch.Tensor]:
        """The coefficients α [B, C] split into one piece per block of functionals."""
        return [alpha[a:b] for a, b in zip(self.offsets[:-1], self.offsets[1:])]

    # -- cached pieces -----------------------------------------------------------------------------------------------
    def state_key(self):
        """Changes when the kernel's values or the inputs' device / dtype do: what the cached pieces depend on."""
        ref = self.blocks[0].X
        # the kernel's values are fixed buffers (see model.py); `assign` bumps their version, so a value set from
        # the dashboard rebuilds the cache, and nothing else does
        tensors = self.kernel.state_dict(keep_vars=True).values()
        return (ref.device, ref.dtype) + tuple((t.data_ptr(), t._version) for t in tensors)

    def _structured(self, A, B) -> bool:
        kinds = (Evaluation, PartialDerivatives)
        return self.fast and isinstance(A, kinds) and isinstance(B, kinds) and not (
            isinstance(A, Evaluation) and isinstance(B, Evaluation))

    @torch.no_grad()
    def _refresh(self) -> dict:
        key = self.state_key()
        if self._cache is not None and self._key == key:
            return self._cache
        cache = {}
        profile = profile_of(self.kernel)
        for i, A in enumerate(self.blocks):
            for j, B in enumerate(self.blocks):
                if j < i:
                    continue
                if self._structured(A, B):
                    _, d1, d2 = profile(square_distance(scaled(self.kernel, A.X), scaled(self.kernel, B.X)))
                    cache[i, j] = ("structured", d1, d2)
                else:
                    Kij = inner(self.kernel, A, B)
                    if i == j:
                        Kij = 0.5 * (Kij + Kij.T)
                        check_norms(Kij, f"{A.kind} functionals")
                    cache[i, j] = ("dense", Kij)
        if self.fast:
            cache["scaled"] = [scaled(self.kernel, b.X) for b in self.blocks]
        self._cache, self._key = cache, key
        return cache

    def invalidate(self) -> None:
        """Drop the cached pieces (after the kernel or inputs changed)."""
        self._cache = None

    # -- products ----------------------------------------------------------------------------------------------------
    def _pair_matmul(self, cache, i, j, alpha_j):
        """Block (i, j) of K times alpha_j [size_j, C] → [size_i, C]."""
        A, B = self.blocks[i], self.blocks[j]
        entry = cache[(i, j)] if i <= j else cache[(j, i)]
        if entry[0] == "dense":
            Kij = entry[1] if i <= j else entry[1].T
            return Kij @ alpha_j
        _, d1, d2 = entry
        if i > j:
            d1, d2 = d1.T, d2.T
        s2, ell = self.kernel.variance().detach(), _ell(self.kernel).detach()
        Xa, Xb = cache["scaled"][i], cache["scaled"][j]
        C = alpha_j.shape[1]
        if isinstance(A, Evaluation):  # (E, PD)
            return eval_partials_matmul(s2, d1, Xa, Xb, ell, alpha_j.reshape(B.num_points, -1, C))
        if isinstance(B, Evaluation):  # (PD, E)
            return partials_eval_matmul(s2, d1.T, Xb, Xa, ell, alpha_j).reshape(-1, C)
        out = partials_partials_matmul(s2, d1, d2, Xa, Xb, ell, alpha_j.reshape(B.num_points, -1, C))
        return out.reshape(-1, C)

    def matmul(self, alpha: torch.Tensor) -> torch.Tensor:
        """K α for α [B, C] → [B, C]: the value of every functional at f = Σ α_b z_b."""
        cache = self._refresh()
        parts = self.split(alpha)
        return torch.cat([sum(self._pair_matmul(cache, i, j, parts[j]) for j in range(len(self.blocks)))
                          for i in range(len(self.blocks))], 0)

    def values(self, X: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
        """f(X) = Σ_b z_b(X) α_b for X [N, D] → [N, C] (the cross block with evaluations at X)."""
        E = Evaluation(X)
        parts = self.split(alpha)
        out = 0.0
        for B, a in zip(self.blocks, parts):
            if self._structured(E, B):
                profile = profile_of(self.kernel)
                with torch.no_grad():
                    Xs, Ps = scaled(self.kernel, X), scaled(self.kernel, B.X)
                    _, d1, _ = profile(square_distance(Xs, Ps))
                s2, ell = self.kernel.variance().detach(), _ell(self.kernel).detach()
                out = out + eval_partials_matmul(s2, d1, Xs, Ps, ell, a.reshape(B.num_points, -1, a.shape[1]))
            else:
                with torch.no_grad():
                    Z = inner(self.kernel, E, B)
                out = out + Z @ a
        return out

    @torch.no_grad()
    def full(self) -> torch.Tensor:
        """The materialised K [B, B], from the cached blocks where they are dense."""
        cache = self._refresh()
        n = len(self.blocks)
        rows = []
        for i in range(n):
            row = []
            for j in range(n):
                entry = cache[(i, j)] if i <= j else cache[(j, i)]
                if entry[0] == "dense":
                    row.append(entry[1] if i <= j else entry[1].T)
                else:
                    row.append(inner(self.kernel, self.blocks[i], self.blocks[j]))
            rows.append(torch.cat(row, 1))
        K = torch.cat(rows, 0)
        return 0.5 * (K + K.T)

    @torch.no_grad()
    def dense(self, index: torch.Tensor | None = None) -> torch.Tensor:
        """The materialised K [B, B] (or its principal submatrix over `index`), whatever the mode."""
        if index is None:
            return torch.cat([torch.cat([inner(self.kernel, A, B) for B in self.blocks], 1) for A in self.blocks], 0)
        picked = []
        for b, (lo, hi) in zip(self.blocks, zip(self.offsets[:-1], self.offsets[1:])):
            sel = index[(index >= lo) & (index < hi)] - lo
            if sel.numel():
                picked.append(b.subset(sel))
        return torch.cat([torch.cat([inner(self.kernel, A, B) for B in picked], 1) for A in picked], 0)
