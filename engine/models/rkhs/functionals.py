"""Bounded linear functionals on an RKHS and the inner products of their representers (Zhang, Lee &
Teh 2013, "Learning with invariance via linear functionals on reproducing kernel Hilbert space", sec. 2–4).

A bounded linear functional L has a representer z ∈ H with L(f) = ⟨z, f⟩ (Riesz, Thm 1), and z(x) =
L(k(x, ·)) (Example 2). The solver needs only the inner products ⟨z_a, z_b⟩ = L_b(z_a) between the
representers of the functionals in the objective (the Gram matrix of eq. 4). The kinds here:

- `Evaluation`            L(f) = f(x)                                          (Example 1)
- `DirectionalDerivative` L(f) = v·∇f(x): a partial derivative when v = e_d (sec. 4.1, eq. 6–8); the
                          derivative along a transformation when v is its tangent vector (Thm 5, eq. 9,
                          whose double sum over pixels is exactly vᵀ ∂x∂y k w)
- `PartialDerivatives`    all D partial derivatives at each of P points (P·D functionals, ordered point
                          by point), the structure behind the fast product of eq. 11 (`gram.py`)
- `LocalAverage`          L(f) = ∫ f(τ) p(x − τ) dτ − f(x) with a Gaussian density p of width θ (eq. 10)

`inner(kernel, A, B) -> [len(A), len(B)]` dispatches on (kind of A, kind of B, kernel type):

- closed forms for stationary kernels written as s²·φ(r²) with r² = Σ_d (x_d − y_d)²/ℓ_d² (RBF — eq. 8 is
  its isotropic case — and Matérn 5/2), through φ' and φ'' as the kernel gives them (`K_r2_derivatives`):
      ⟨k(x,·), z_{p,v}⟩    = −2s² φ'(r²) ṽ·(x̃ − p̃)
      ⟨z_{p,v}, z_{q,w}⟩   = −2s² [2φ''(r²)(ṽ·r̃)(w̃·r̃) + φ'(r²) ṽ·w̃],   r̃ = p̃ − q̃, x̃ = x/ℓ, ṽ = v/ℓ;
- closed forms for the polynomial kernel (s² x·y + c)^r (eq. 7 is s² = c = 1);
- the Gaussian local average (sec. 4.3; derivation in the docstring of `_local_average_terms`);
- any other kernel through forward-mode autograd: d/dt K(X + tV, Y) is, entry by entry, v_i·∇_x k(x_i, y_j)
  because row i depends on x_i only, so two nested `jvp`s give the whole mixed block at once.

The autograd path is exact for kernels that are twice differentiable *as implemented*; a kernel whose code
is not (e.g. a clamp at r = 0) gives wrong representer norms, which `inner` refuses when it sees a negative
one on the diagonal.
"""
from __future__ import annotations

import math
from typing import Callable

import torch
from torch import nn

from ...errors import ConfigError, ShapeError
from ...kernels import RBF, Kernel, Polynomial, Stationary, square_distance
from ...kernels.base import flatten
from ...registry import table


# -- the functionals -------------------------------------------------------------------------------------------------
class Functionals(nn.Module):
    """A batch of M functionals of one kind. Locations are buffers, so `.to(device, dtype)` moves them."""

    kind = "functional"

    def __len__(self) -> int:
        return int(self.X.shape[0])

    @property
    def input_dim(self) -> int:
        """D, the dimension of the points the functionals act at."""
        return int(self.X.shape[1])

    def subset(self, index: torch.Tensor) -> "Functionals":  # pragma: no cover - abstract
        """The functionals at rows `index` only, as a new set of the same kind."""
        raise NotImplementedError


class Evaluation(Functionals):
    """L_i(f) = f(x_i) for X [M, D]."""

    kind = "evaluation"

    def __init__(self, X: torch.Tensor):
        super().__init__()
        self.register_buffer("X", flatten(torch.as_tensor(X)))

    def subset(self, index):
        """The evaluations at rows `index` only."""
        return Evaluation(self.X[index])


class DirectionalDerivative(Functionals):
    """L_i(f) = v_i·∇f(x_i) for points X [M, D] and directions V [M, D]."""

    kind = "directional derivative"

    def __init__(self, X: torch.Tensor, V: torch.Tensor):
        super().__init__()
        X, V = flatten(torch.as_tensor(X)), flatten(torch.as_tensor(V))
        if X.shape != V.shape:
            raise ShapeError(f"directional derivatives need one direction per point: X {tuple(X.shape)} vs "
                             f"V {tuple(V.shape)}")
        self.register_buffer("X", X)
        self.register_buffer("V", V)

    def subset(self, index):
        """The directional derivatives at rows `index` only."""
        return DirectionalDerivative(self.X[index], self.V[index])


class PartialDerivatives(Functionals):
    """All D partial derivatives ∂f/∂x^d at each of P points X [P, D]: P·D functionals, index p·D + d."""

    kind = "partial derivatives"

    def __init__(self, X: torch.Tensor):
        super().__init__()
        self.register_buffer("X", flatten(torch.as_tensor(X)))

    def __len__(self) -> int:
        return int(self.X.shape[0] * self.X.shape[1])

    @property
    def num_points(self) -> int:
        """P, the number of points at which all D partial derivatives are taken."""
        return int(self.X.shape[0])

    def expanded(self, index: torch.Tensor | None = None) -> DirectionalDerivative:
        """The same functionals as explicit (point, unit direction) pairs [P·D, D] (or a subset of them)."""
        P, D = self.X.shape
        if index is None:
            index = torch.arange(P * D, device=self.X.device)
        eye = torch.eye(D, dtype=self.X.dtype, device=self.X.device)
        return DirectionalDerivative(self.X[index // D], eye[index % D])

    def subset(self, index):
        """The functionals with flat indices `index` (p·D + d), as explicit directional derivatives."""
        return self.expanded(index)


class LocalAverage(Functionals):
    """L_i(f) = ∫ f(τ) N(τ; x_i, θ²I) dτ − f(x_i) (eq. 10 with a Gaussian density of width θ)."""

    kind = "local average"

    def __init__(self, X: torch.Tensor, width: float):
        super().__init__()
        if not (width > 0 and math.isfinite(width)):
            raise ConfigError(f"local averaging needs a positive width θ, got {width}")
        self.register_buffer("X", flatten(torch.as_tensor(X)))
        self.width = float(width)

    def subset(self, index):
        """The local averages at rows `index` only."""
        return LocalAverage(self.X[index], self.width)


def canonical(F: Functionals) -> Functionals:
    """PartialDerivatives are computed as explicit directional derivatives outside the fast path."""
    return F.expanded() if isinstance(F, PartialDerivatives) else F


# -- stationary profiles: k = s² φ(r²), with φ' and φ'' from the kernel -------------------------------------------
def profile_of(kernel: Kernel) -> Callable | None:
    """r² ↦ (φ, φ', φ'') of a stationary kernel with closed-form derivatives (`K_r2_derivatives`), or None.

    r² is formed by `square_distance`'s inner-product expansion (memory Ma·Mb, not Ma·Mb·D); it enters only through
    the smooth profile, so its rounding error near r = 0 is harmless."""
    return kernel.K_r2_derivatives if isinstance(kernel, Stationary) else None


def scaled(kernel: Stationary, X: torch.Tensor) -> torch.Tensor:
    """x̃ = x / ℓ (per dimension for ARD)."""
    return X / kernel.lengthscale()


# -- the dispatcher --------------------------------------------------------------------------------------------------
_TABLE: dict[tuple[type, type, type], Callable] = table({})  # rolled back with a failed plugin


def register(kind_a: type, kind_b: type, kernel_type: type):
    """Decorator registering `fn` as the Gram block ⟨L_a, L_b⟩ between functionals of kinds `kind_a`, `kind_b` under a
    kernel of `kernel_type` (Zhang, Lee & Teh, "Learning with invariance via linear functionals on reproducing kernel
    Hilbert space", 2013, Thm 2)."""
    def decorator(fn):
        _TABLE[(kind_a, kind_b, kernel_type)] = fn
        return fn

    return decorator


def _resolve(a: type, b: type, k: type) -> tuple[Callable, bool] | None:
    for kt in k.__mro__:
        for ta in a.__mro__:
            for tb in b.__mro__:
                if (ta, tb, kt) in _TABLE:
                    return _TABLE[(ta, tb, kt)], False
                if (tb, ta, kt) in _TABLE:
                    return _TABLE[(tb, ta, kt)], True
    return None


def inner(kernel: Kernel, A: Functionals, B: Functionals) -> torch.Tensor:
    """⟨z_a, z_b⟩ for every a in A and b in B: [len(A), len(B)]."""
    A, B = canonical(A), canonical(B)
    if A.input_dim != B.input_dim:
        raise ShapeError(f"functionals live on inputs of different dimension: {A.input_dim} vs {B.input_dim}")
    found = _resolve(type(A), type(B), type(kernel))
    if found is None:
        raise ConfigError(f"no representer inner product for a {A.kind} with a {B.kind} under the "
                          f"{type(kernel).__name__} kernel; local averaging has a closed form for the RBF kernel only")
    fn, swap = found
    return fn(kernel, B, A).transpose(0, 1) if swap else fn(kernel, A, B)


def representer_values(kernel: Kernel, F: Functionals, X: torch.Tensor) -> torch.Tensor:
    """z_b(x) for points X [N, D] and every functional b in F: [N, len(F)] (Example 2: z(x) = L(k(x, ·)))."""
    return inner(kernel, Evaluation(X), F)


def check_norms(K: torch.Tensor, what: str) -> None:
    """A squared representer norm ⟨z, z⟩ below zero means the kernel's derivatives are wrong as implemented."""
    d = torch.diagonal(K)
    tol = 1e-8 * d.abs().max().clamp_min(1.0)
    if bool((d < -tol).any()):
        raise ConfigError(f"{what}: some squared representer norms ⟨z, z⟩ are negative (min {float(d.min()):.3g}); the "
                          "kernel is not twice differentiable as implemented (e.g. a clamp at r = 0). Use a kernel "
                          "with closed-form derivatives (rbf, matern52, polynomial) or one that is smooth in its code.")


# -- general path: forward-mode autograd -----------------------------------------------------------------------------
@register(Evaluation, Evaluation, Kernel)
def _eval_eval(kernel, A, B):
    return kernel.K(A.X, B.X)


@register(Evaluation, DirectionalDerivative, Kernel)
def _eval_deriv_autograd(kernel, A, B):
    _, out = torch.func.jvp(lambda Y: kernel.K(A.X, Y), (B.X,), (B.V,))
    return out  # [Ma, Mb]: w_j·∇_y k(x_i, y)|_{y = q_j}


@register(DirectionalDerivative, DirectionalDerivative, Kernel)
def _deriv_deriv_autograd(kernel, A, B):
    def d_y(X):
        return torch.func.jvp(lambda Y: kernel.K(X, Y), (B.X,), (B.V,))[1]

    _, out = torch.func.jvp(d_y, (A.X,), (A.V,))
    return out  # v_i·∇_x w_j·∇_y k(x, y) at (p_i, q_j)


# -- stationary kernels with a profile (RBF, Matérn 5/2) -------------------------------------------------------------
@register(Evaluation, DirectionalDerivative, Stationary)
def _eval_deriv_stationary(kernel, A, B):
    profile = profile_of(kernel)
    if profile is None:
        return _eval_deriv_autograd(kernel, A, B)
    s2 = kernel.variance()
    Xa, Pb, Vb = scaled(kernel, A.X), scaled(kernel, B.X), scaled(kernel, B.V)
    _, d1, _ = profile(square_distance(Xa, Pb))
    vx = Xa @ Vb.T - (Pb * Vb).sum(-1)[None, :]  # ṽ_j·(x̃_i − p̃_j)  [Ma, Mb]
    return -2.0 * s2 * d1 * vx


@register(DirectionalDerivative, DirectionalDerivative, Stationary)
def _deriv_deriv_stationary(kernel, A, B):
    profile = profile_of(kernel)
    if profile is None:
        return _deriv_deriv_autograd(kernel, A, B)
    s2 = kernel.variance()
    Pa, Va = scaled(kernel, A.X), scaled(kernel, A.V)
    Pb, Vb = scaled(kernel, B.X), scaled(kernel, B.V)
    _, d1, d2 = profile(square_distance(Pa, Pb))
    vr = (Pa * Va).sum(-1)[:, None] - Va @ Pb.T  # ṽ_i·(p̃_i − q̃_j)  [Ma, Mb]
    wr = Pa @ Vb.T - (Pb * Vb).sum(-1)[None, :]  # w̃_j·(p̃_i − q̃_j)
    return -2.0 * s2 * (2.0 * d2 * vr * wr + d1 * (Va @ Vb.T))


# -- polynomial kernel (s² x·y + c)^r: eq. 7 -------------------------------------------------------------------------
def _poly_parts(kernel, Xa, Xb):
    r, s2, c = kernel.degree, kernel.variance(), kernel.offset()
    u = s2 * (Xa @ Xb.T) + c
    return r, s2, u


@register(Evaluation, DirectionalDerivative, Polynomial)
def _eval_deriv_poly(kernel, A, B):
    r, s2, u = _poly_parts(kernel, A.X, B.X)
    return r * u ** (r - 1) * s2 * (A.X @ B.V.T)  # ∂_y (s² x·y + c)^r along w_j


@register(DirectionalDerivative, DirectionalDerivative, Polynomial)
def _deriv_deriv_poly(kernel, A, B):
    r, s2, u = _poly_parts(kernel, A.X, B.X)
    cross = r * u ** (r - 1) * s2 * (A.V @ B.V.T)
    if r == 1:  # the second-order term vanishes; r(r−1)u^{r−2} would be 0·∞ where u = 0
        return cross
    return r * (r - 1) * u ** (r - 2) * s2 * s2 * (A.V @ B.X.T) * (A.X @ B.V.T) + cross


# -- Gaussian local averaging (sec. 4.3) -----------------------------------------------------------------------------
def _local_average_terms(kernel, t: float, Xa, Xb):
    """c_t κ_t(a, b) with κ_t = exp(−‖a − b‖²/(2(ℓ² + t²))) and c_t = (ℓ²/(ℓ² + t²))^{D/2}.

    ∫ κ_0(τ, b) N(τ; a, t²I) dτ = c_t κ_t(a, b) (a Gaussian convolved with a Gaussian), so with θ the width of p:
      z_p(x)        = s² [c_θ κ_θ(x, p) − κ_0(x, p)]
      ⟨z_p, z_q⟩    = s² [κ_0 − 2 c_θ κ_θ + c_{√2θ} κ_{√2θ}](p, q).
    The paper prints the last as κ_σ + (1 + 2θ/σ)^{−n} κ_{σ+2θ} − 2(1 + θ/σ)^{−n} κ_{σ+θ}, which is this formula
    when σ and θ there stand for the variances ℓ² and θ² and the exponent is −n/2; the form here is checked
    against numerical integration in the tests.
    """
    ell2 = kernel.lengthscale() ** 2
    gamma = ell2 + t * t
    D = Xa.shape[1]
    return (ell2 / gamma) ** (D / 2.0) * torch.exp(-0.5 * square_distance(Xa, Xb) / gamma), gamma


def _require_isotropic_rbf(kernel):
    if not isinstance(kernel, RBF) or kernel.ard:
        raise ConfigError("local averaging has a closed form for the isotropic RBF (Gaussian) kernel only; "
                          "choose kernel='rbf' without ARD, or another invariance")


@register(Evaluation, LocalAverage, Kernel)
def _eval_average(kernel, A, B):
    _require_isotropic_rbf(kernel)
    s2 = kernel.variance()
    smoothed, _ = _local_average_terms(kernel, B.width, A.X, B.X)
    plain, _ = _local_average_terms(kernel, 0.0, A.X, B.X)
    return s2 * (smoothed - plain)


@register(DirectionalDerivative, LocalAverage, Kernel)
def _deriv_average(kernel, A, B):
    _require_isotropic_rbf(kernel)
    s2 = kernel.variance()
    vr = (A.X * A.V).sum(-1)[:, None] - A.V @ B.X.T  # v_i·(q_i − p_j)
    smoothed, g_t = _local_average_terms(kernel, B.width, A.X, B.X)
    plain, g_0 = _local_average_terms(kernel, 0.0, A.X, B.X)
    return s2 * (-smoothed / g_t + plain / g_0) * vr  # v·∇_x z_p(x) at x = q_i


@register(LocalAverage, LocalAverage, Kernel)
def _average_average(kernel, A, B):
    _require_isotropic_rbf(kernel)
    if A.width != B.width:
        raise ConfigError("local averages of different widths are not supported together")
    s2, t = kernel.variance(), A.width
    k0, _ = _local_average_terms(kernel, 0.0, A.X, B.X)
    k1, _ = _local_average_terms(kernel, t, A.X, B.X)
    k2, _ = _local_average_terms(kernel, math.sqrt(2.0) * t, A.X, B.X)
    return s2 * (k0 - 2.0 * k1 + k2)


def gram(kernel: Kernel, blocks: list[Functionals]) -> torch.Tensor:
    """The dense representer Gram matrix over a list of functional blocks: [Σ len, Σ len] (eq. 4's K)."""
    rows = [torch.cat([inner(kernel, A, B) for B in blocks], 1) for A in blocks]
    K = torch.cat(rows, 0)
    return 0.5 * (K + K.T)
