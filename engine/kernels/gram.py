"""Kernels on Gram matrices, for deep kernel processes (Aitchison, Yang & Ober 2021, sec. 4.1).

A deep kernel process never holds features, only Gram matrices G = F Fᵀ / N, so its kernels must be
functions of G (eq. 13). Both kernels here are *elementwise* in the sense that K_ij depends only on
G_ij, G_ii and G_jj:

- squared exponential through squared distances R_ij = G_ii − 2 G_ij + G_jj (eq. 16–17),
  K_ij = σ² exp(−R_ij / (2ℓ²));
- the ReLU arc-cosine kernel (Cho & Saul 2009), the NNGP kernel of an infinitely wide ReLU layer,
  K_ij = σ²/π · √(G_ii G_jj) · (sin θ + (π − θ) cos θ),  cos θ = G_ij / √(G_ii G_jj),
  normalised so that K_ii = σ² G_ii (a He-initialised layer keeps the scale).

Because of that, a kernel maps any rectangular block from the cross entries and the two diagonals
(`cross(G12, d1, d2)`), which is all the doubly-stochastic scheme (eq. 31–34, app. I) needs: the
inducing block [Pi, Pi], the inducing–train block [Pi, Pt] and the train diagonal [Pt]
(`blocks(G_ii, G_it, g_tt)`), never the [Pt, Pt] block.

The input layer sees the data through a learned scale and bias per input feature (`InputAffine`,
sec. 7: "a learned bias and scale for each input feature") and the linear Gram X̃X̃ᵀ/N0 (eq. 5a).
`NNGPKernel` composes all of this into an ordinary `Kernel` on inputs — the δ → ∞ limit of the deep
inverse Wishart process — so the plain SVGP core can use it as a baseline with the same kernel.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from ..errors import ConfigError, ShapeError
from ..parameters import Positive, positive_init
from ..registry import Registry
from .base import Kernel, flatten
from .stationary import RBF


class GramKernel(nn.Module):
    """K(G): a kernel that reads features only through their Gram matrix. Subclasses implement `cross` and `diag`."""

    def cross(self, G12: torch.Tensor, d1: torch.Tensor, d2: torch.Tensor) -> torch.Tensor:
        """K for a block: G12 [..., P1, P2] cross Gram entries, d1 [..., P1] and d2 [..., P2] the diagonals."""
        raise NotImplementedError  # pragma: no cover - abstract

    def diag(self, d: torch.Tensor) -> torch.Tensor:
        """K_ii from G_ii, elementwise: [..., P] → [..., P]."""
        raise NotImplementedError  # pragma: no cover - abstract

    def K(self, G: torch.Tensor) -> torch.Tensor:
        """K(G) for a full square Gram matrix [..., P, P]; the diagonal is exactly `diag(G_ii)`."""
        if G.dim() < 2 or G.shape[-1] != G.shape[-2]:
            raise ShapeError(f"a Gram matrix must be square [..., P, P]; got shape {tuple(G.shape)}")
        d = G.diagonal(dim1=-2, dim2=-1)
        K = self.cross(G, d, d)
        # the exact diagonal (cross() clamps angles near θ = 0, which would leave it off by O(eps))
        return K.diagonal_scatter(self.diag(d), dim1=-2, dim2=-1)

    def blocks(self, G_ii: torch.Tensor, G_it: torch.Tensor, g_tt: torch.Tensor):
        """(K_ii [..., Pi, Pi], K_it [..., Pi, Pt], k_tt [..., Pt]) from the same blocks of G."""
        d_i = G_ii.diagonal(dim1=-2, dim2=-1)
        return self.K(G_ii), self.cross(G_it, d_i, g_tt), self.diag(g_tt)

    def forward(self, G):
        """`kernel(G)` is `kernel.K(G)`: the next layer's kernel matrix from a Gram matrix G [..., P, P]."""
        return self.K(G)


class SquaredExponentialGram(GramKernel):
    """σ² exp(−R / 2ℓ²) with R_ij = G_ii − 2G_ij + G_jj (Aitchison, Yang & Ober 2021 eq. 16–17): the RBF's profile κ(R /
    ℓ²)."""

    def __init__(self, lengthscale: float = 1.0, variance: float = 1.0):
        super().__init__()
        self.lengthscale = Positive(positive_init(lengthscale, "lengthscale"), name="lengthscale")
        self.variance = Positive(positive_init(variance, "variance"), name="variance")

    def cross(self, G12, d1, d2):
        """The block K_12 [..., P1, P2] from the Gram block G12 and the diagonals d1, d2: σ² exp(−R / 2ℓ²) with R = d1 −
        2G12 + d2 (Aitchison, Yang & Ober, "Deep kernel processes", 2021, eq. 16–17)."""
        R = (d1[..., :, None] + d2[..., None, :] - 2.0 * G12).clamp_min(0.0)  # rounding can make R slightly negative
        return self.variance() * RBF.K_r2(R / self.lengthscale() ** 2)

    def diag(self, d):
        """The diagonal of K: σ² for every point [..., P]."""
        return self.variance() * torch.ones_like(d)


class ReluGram(GramKernel):
    """Arc-cosine kernel of order 1 (ReLU NNGP), K_ii = σ² G_ii: σ²/π √(d1 d2) (sin θ + (π − θ) cos θ)."""

    def __init__(self, variance: float = 1.0):
        super().__init__()
        self.variance = Positive(positive_init(variance, "variance"), name="variance")

    def cross(self, G12, d1, d2):
        """The block K_12 [..., P1, P2] of the arc-cosine kernel of order 1 from the Gram block G12 and the diagonals
        d1, d2: σ²/π √(d1 d2) (sin θ + (π − θ) cos θ), cos θ = G12 / √(d1 d2) (Cho & Saul, 2009)."""
        norms = torch.sqrt(d1[..., :, None].clamp_min(0.0) * d2[..., None, :].clamp_min(0.0)).clamp_min(1e-300)
        # keep cos θ strictly inside (−1, 1): acos and √(1 − cos²) have infinite derivatives at ±1
        eps = 1e-12 if G12.dtype == torch.float64 else 1e-6
        cos = (G12 / norms).clamp(-1.0 + eps, 1.0 - eps)
        theta = torch.acos(cos)
        J = torch.sqrt(1.0 - cos * cos) + (math.pi - theta) * cos
        return self.variance() / math.pi * norms * J

    def diag(self, d):
        """The diagonal of K: σ² G_ii [..., P]."""
        return self.variance() * d


# Kernels on Gram matrices, chosen by name by the deep kernel processes' `kernel` setting: a kind of its own (they
# act on the Gram matrix G, not on inputs). The contract: `lengthscale` and `variance` (a part ignores one it lacks);
# a part's own arguments become the families' settings, as a kernel's on inputs do.
GRAM_REGISTRY = Registry("Gram kernel", contract=("lengthscale", "variance"))


def register_gram_kernel(name: str, **how):
    """A decorator registering a Gram-matrix kernel factory `factory(lengthscale=1.0, variance=1.0, **own)` that
    returns a `GramKernel`, under `name`; the built-ins register through it. See `invlab.registry.Registry.register`."""
    return GRAM_REGISTRY.register(name, **how)


@register_gram_kernel("relu", builtin=True)
def _relu(lengthscale: float = 1.0, variance: float = 1.0) -> GramKernel:
    """The arc-cosine kernel of order 1 (a ReLU layer's NNGP); it has no lengthscale."""
    return ReluGram(variance)


@register_gram_kernel("sqexp", builtin=True)
def _sqexp(lengthscale: float = 1.0, variance: float = 1.0) -> GramKernel:
    """The squared exponential of the Gram matrix's implied distances."""
    return SquaredExponentialGram(lengthscale, variance)


GRAM_KERNELS = tuple(GRAM_REGISTRY.parts)  # the built-ins' names ("relu", "sqexp")


def gram_kernel_names() -> list[str]:
    """Every registered Gram kernel's name: the built-ins, then those of a user's code or a plugin."""
    return list(GRAM_REGISTRY.parts)


def build_gram_kernel(name: str, *, lengthscale: float = 1.0, variance: float = 1.0, **options) -> GramKernel:
    """The Gram-matrix kernel registered as `name` ('relu', 'sqexp' or a plugin's) with the given lengthscale and
    variance and those of `options` that are its own; an unknown name raises ConfigError listing the choices."""
    return GRAM_REGISTRY.build(name, lengthscale=lengthscale, variance=variance, **options)


class InputAffine(nn.Module):
    """x̃_d = s_d x_d + b_d: a learned scale (positive) and bias per input feature. `enabled=False` is the identity."""

    def __init__(self, input_dim: int, enabled: bool = True):
        super().__init__()
        if input_dim < 1:
            raise ShapeError(f"InputAffine needs input_dim ≥ 1, got {input_dim}")
        self.input_dim, self.enabled = int(input_dim), bool(enabled)
        if enabled:
            self.scale = Positive(torch.ones(input_dim, dtype=torch.float64), name="input_scale")
            self.bias = nn.Parameter(torch.zeros(input_dim, dtype=torch.float64))

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """X̃ = scale ⊙ X + bias on the flattened inputs [N, D] (identity when disabled); a mismatch in D raises
        ShapeError."""
        X = flatten(X)
        if X.shape[1] != self.input_dim:
            raise ShapeError(f"inputs have D={X.shape[1]} features but the model was built for D={self.input_dim}")
        return X * self.scale() + self.bias if self.enabled else X


def linear_gram(X1: torch.Tensor, X2: torch.Tensor) -> torch.Tensor:
    """K0 = X1 X2ᵀ / N0, the input layer's Gram matrix (Aitchison, Yang & Ober 2021 eq. 5a). [..., P1, P2]"""
    return X1 @ X2.transpose(-1, -2) / X1.shape[-1]


class NNGPKernel(Kernel):
    """k(x, x') = [K_L ∘ … ∘ K_1](X̃X̃ᵀ/N0): the deterministic kernel of the DIWP's δ → ∞ limit, as a plain kernel.

    `kernels` is the list of Gram kernels applied in turn (one per layer); each maps the cross entries and
    diagonals of one layer to the next, so K(X, X2) never forms the Gram matrix of X and X2 together.
    """

    def __init__(self, input_dim: int, kernels: list[GramKernel], input_scale_bias: bool = True):
        super().__init__()
        if not kernels:
            raise ConfigError("NNGPKernel needs at least one Gram kernel (num_layers ≥ 1)")
        self.affine = InputAffine(input_dim, input_scale_bias)
        self.kernels = nn.ModuleList(kernels)

    def _K(self, X, X2):
        A, B = self.affine(X), self.affine(X2)
        G, d1, d2 = linear_gram(A, B), (A * A).sum(-1) / A.shape[-1], (B * B).sum(-1) / B.shape[-1]
        for k in self.kernels:
            G, d1, d2 = k.cross(G, d1, d2), k.diag(d1), k.diag(d2)
        return G

    def K(self, X, X2=None):
        """The NNGP kernel between X [N, D] and X2 [N2, D]: the linear Gram matrix of the affine inputs passed through
        each layer's Gram kernel (the infinite-width limit of a deep kernel process, Aitchison, Yang & Ober, 2021);
        [N, N2]."""
        if X2 is None:  # exact diagonal on the square block
            A = self.affine(X)
            G = linear_gram(A, A)
            for k in self.kernels:
                G = k.K(G)
            return G
        return super().K(X, X2)

    def _K_diag(self, X):
        A = self.affine(X)
        d = (A * A).sum(-1) / A.shape[-1]
        for k in self.kernels:
            d = k.diag(d)
        return d


__all__ = ["GramKernel", "SquaredExponentialGram", "ReluGram", "GRAM_KERNELS", "GRAM_REGISTRY", "build_gram_kernel",
           "gram_kernel_names", "register_gram_kernel", "InputAffine", "linear_gram", "NNGPKernel"]
