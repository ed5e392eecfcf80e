"""Convolutional kernels (van der Wilk, Rasmussen & Hensman 2017, "Convolutional Gaussian Processes", van der Wilk,
Rasmussen & Hensman 2017).

A convolutional GP sums one patch-response function g ~ GP(0, k_g) over the patches of an image, so it is an
`OrbitKernel` whose orbit is the set of patches and whose orbit weights are the patch weights:

- `Convolutional`: f(x) = w Σ_p g(x[p]) with one fixed weight w (eq. 13–14; the paper's sum is w = 1),
  translation invariant;
- `WeightedConvolutional`: f(x) = Σ_p w_p g(x[p]) with learnable patch weights (eq. 17–19);
- `MultiChannelConvolutional`: f(x) = Σ_p Σ_c w_pc g_c(x[pc]) with independent g_c that share k_g (eq. 22–23).

The additive patch kernel of the colour-additive variant (eq. 24–25, `ChannelAdditive`) and the sum of independent
GPs used for weighted convolutional + RBF (sec. 3.3, `Sum`) are general combinators, in `combinators.py`.

Colour images `[N, C, H, W]`: with `colour_patches=True` a patch holds all C channels (E = C·h·w, the
"colour-patch" variant); with `colour_patches=False` every channel of every position is its own patch
(E = h·w, P = C·H'·W'), the paper's grey "weighted" baseline for colour images. Patches are ordered
channel-major, then row-major over positions, so weights reshape to `[C, H', W']` images.

The kernels give brute-force `K` / `K_diag` (exact, materialising all patches); the covariances with inducing
patches — brute force and fast — are in `invlab.covariances.patches` and are tested against brute-force sums.
"""
from __future__ import annotations

import torch
from torch.nn import functional as F

from ..errors import ShapeError
from ..parameters import Unconstrained, positive_init
from . import build_kernel
from .base import Kernel
from .combinators import ChannelAdditive
from .orbit import OrbitKernel


def _pair(v, name: str) -> tuple[int, int]:
    a, b = (v, v) if isinstance(v, int) else tuple(v)
    if a < 1 or b < 1:
        raise ShapeError(f"{name} must be at least 1, got {v}")
    return int(a), int(b)


def extract_patches(X: torch.Tensor, patch_size: tuple[int, int], stride: tuple[int, int]) -> torch.Tensor:
    """[N, C, H, W] → [N, P, C·h·w]: every patch with all its channels (P = H'·W', row-major positions)."""
    return F.unfold(X, patch_size, stride=stride).transpose(1, 2)


class PatchKernel(OrbitKernel):
    """Image geometry shared by the convolutional kernels: image shape, patch size, stride, positions."""

    def __init__(self, base: Kernel, image_shape, patch_size=3, stride=1):
        super().__init__(base)
        if len(image_shape) != 3:
            raise ShapeError(f"image_shape must be (C, H, W), got {tuple(image_shape)}")
        self.image_shape = tuple(int(s) for s in image_shape)
        C, H, W = self.image_shape
        self.patch_size, self.stride = _pair(patch_size, "patch_size"), _pair(stride, "stride")
        h, w = self.patch_size
        if h > H or w > W:
            raise ShapeError(f"patch_size {self.patch_size} is larger than the {H}×{W} images")
        self.grid = ((H - h) // self.stride[0] + 1, (W - w) // self.stride[1] + 1)  # H', W'
        self.num_positions = self.grid[0] * self.grid[1]

    @property
    def num_channels(self) -> int:
        """C, the number of image channels."""
        return self.image_shape[0]

    def images(self, X: torch.Tensor) -> torch.Tensor:
        """[N, C, H, W] (flattened [N, C·H·W] inputs are reshaped); anything else is refused."""
        C, H, W = self.image_shape
        if X.dim() == 2 and X.shape[1] == C * H * W:
            return X.reshape(-1, C, H, W)
        if X.dim() != 4 or tuple(X.shape[1:]) != self.image_shape:
            raise ShapeError(f"this convolutional kernel takes images [N, {C}, {H}, {W}]; got {tuple(X.shape)}")
        return X

    def channel_patches(self, X: torch.Tensor) -> torch.Tensor:
        """[N, C, H, W] → [N, C, H'·W', h·w]: each channel's patches separately."""
        X = self.images(X)
        N, C, H, W = X.shape
        U = extract_patches(X.reshape(N * C, 1, H, W), self.patch_size, self.stride)  # [N·C, P, h·w]
        return U.reshape(N, C, U.shape[1], U.shape[2])


class Convolutional(PatchKernel):
    """Translation-invariant convolutional kernel: k_f(x, x') = s² Σ_p Σ_q k_g(x[p], x'[q]) (eq. 14).

    `weight` s is a fixed scale of f (the paper's sum is s = 1). Models use s = 1/P, as GPflow 2's `Convolutional`
    does: f is then the mean of the patch responses, its prior variance stays near that of g, and the learnable
    patch weights of the subclasses stay of order one, where a step of Adam has the right size.
    """

    def __init__(self, base: Kernel, image_shape, patch_size=3, stride=1, *, colour_patches: bool = True,
                 weight: float = 1.0):
        super().__init__(base, image_shape, patch_size, stride)
        self.colour_patches = bool(colour_patches) or self.num_channels == 1
        h, w = self.patch_size
        C = self.num_channels
        self.patch_shape = (C, h, w) if self.colour_patches else (1, h, w)  # of one patch (and inducing patch)
        self.num_patches = self.num_positions * (1 if self.colour_patches else C)  # P
        self.patch_dim = self.patch_shape[0] * h * w  # E
        self.weight = float(weight)

    @property
    def weight_shape(self) -> tuple[int, int, int]:
        """Patch weights as images over positions: [C_w, H', W'] with C_w = 1 (colour patches) or C."""
        return (1 if self.colour_patches else self.num_channels,) + self.grid

    def patches(self, X: torch.Tensor) -> torch.Tensor:
        """[N, C, H, W] → [N, P, E]."""
        if self.colour_patches:
            return extract_patches(self.images(X), self.patch_size, self.stride)
        U = self.channel_patches(X)  # [N, C, P', h·w]
        return U.reshape(U.shape[0], -1, U.shape[-1])

    def orbit(self, X):
        """The orbit of an image under this kernel: its P patches, flattened [N, P, h·w·C] (van der Wilk et al.,
        "Convolutional Gaussian Processes", 2017, eq. 8)."""
        return self.patches(X)

    def patch_weights(self) -> torch.Tensor | None:
        """[P] learnable weights (times the scale), or None for the fixed uniform weight."""
        return None

    def orbit_weights(self, X, P):
        """The weight of each patch [N, P]: the learned patch weights (eq. 21) or the fixed uniform weight."""
        w = self.patch_weights()
        if w is None:
            return torch.full((X.shape[0], P), self.weight, dtype=X.dtype, device=X.device)
        return w.expand(X.shape[0], P)


class WeightedConvolutional(Convolutional):
    """Weighted convolutional kernel: k_f(x, x') = Σ_p Σ_q w_p w_q k_g(x[p], x'[q]) (eq. 18), w ∈ R^P learnable.

    w_p = s·v_p with the fixed scale s = `weight` and learnable v (`weights`, starting at 1), so all v_p = 1 is the
    translation-invariant kernel of the same scale.
    """

    def __init__(self, base: Kernel, image_shape, patch_size=3, stride=1, *, colour_patches: bool = True,
                 weight: float = 1.0):
        super().__init__(base, image_shape, patch_size, stride, colour_patches=colour_patches, weight=weight)
        self.weights = Unconstrained(torch.ones(self.num_patches, dtype=torch.float64), name="patch weights")

    def patch_weights(self):
        """The learned patch weights w_p times the kernel's scale [P] (van der Wilk et al., "Convolutional Gaussian
        Processes", 2017, eq. 21)."""
        return self.weight * self.weights()


class MultiChannelConvolutional(PatchKernel):
    """Multi-channel convolutional kernel (eq. 22–23): f(x) = Σ_c Σ_p w_pc g_c(x[pc]), g_c iid GP(0, k_g).

    k_f(x, x') = Σ_c Σ_p Σ_q w_pc w_qc k_g(x[pc], x'[qc]): no terms across channels, since the g_c are
    independent. Inducing patches are shared by the channels, inducing outputs are not: K_uf is the C blocks
    stacked, channel by channel ([C·M, N], `invlab.covariances.patches`). As for `WeightedConvolutional`, w = s·v with a
    fixed scale s = `weight` and learnable v starting at 1.
    """

    def __init__(self, base: Kernel, image_shape, patch_size=3, stride=1, *, weight: float = 1.0):
        super().__init__(base, image_shape, patch_size, stride)
        h, w = self.patch_size
        self.patch_shape = (1, h, w)
        self.patch_dim = h * w
        self.num_patches = self.num_channels * self.num_positions  # all (p, c) pairs
        self.weight = float(weight)
        self.weights = Unconstrained(torch.ones(self.num_channels, self.num_positions, dtype=torch.float64),
                                     name="patch weights")

    @property
    def weight_shape(self):
        """The shape of the weights: one per channel and patch position, (C, P_h, P_w)."""
        return (self.num_channels,) + self.grid

    def patch_weights(self) -> torch.Tensor:
        """The weights w_pc per channel and patch position, times the scale [C, P'] (eq. 22–23)."""
        return self.weight * self.weights()  # [C, P']

    def orbit(self, X):
        """Each image's single-channel patches over all channels, flattened [N, C·P', h·w]."""
        U = self.channel_patches(X)
        return U.reshape(U.shape[0], -1, U.shape[-1])  # [N, C·P', h·w]

    def orbit_weights(self, X, P):
        """The weight of each channel patch [N, C·P'], the same for every image."""
        return self.patch_weights().reshape(1, -1).expand(X.shape[0], P)

    def _K(self, X, X2):
        A, B = self.channel_patches(X), self.channel_patches(X2)  # [N, C, P, E], [N2, C, P, E]
        w = self.patch_weights()
        out = 0.0
        for c in range(self.num_channels):
            Kg = self.base.K(A[:, c].reshape(-1, A.shape[-1]), B[:, c].reshape(-1, B.shape[-1]))
            Kg = Kg.reshape(A.shape[0], A.shape[2], B.shape[0], B.shape[2])
            out = out + torch.einsum("p,ipjq,q->ij", w[c], Kg, w[c])
        return out

    def _K_diag(self, X):
        return torch.stack([self._K(X[n:n + 1], X[n:n + 1])[0, 0] for n in range(X.shape[0])])


def build_patch_kernel(name: str, patch_dim: int, *, lengthscale: float = 1.0, variance: float = 1.0,
                       ard: bool = False, channels: int = 1) -> Kernel:
    """k_g on patches: 'rbf' or 'matern52' (with `channels > 1`: one per channel, summed: `ChannelAdditive`)."""
    positive_init(lengthscale, "lengthscale")
    if channels > 1:
        e = patch_dim // channels
        return ChannelAdditive([build_kernel(name, e, lengthscale=lengthscale, variance=variance / channels, ard=ard)
                                for _ in range(channels)])
    return build_kernel(name, patch_dim, lengthscale=lengthscale, variance=variance, ard=ard)


__all__ = ["PatchKernel", "Convolutional", "WeightedConvolutional", "MultiChannelConvolutional", "extract_patches",
           "build_patch_kernel"]
