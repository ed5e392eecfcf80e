"""Local deformations with learnable strength (van der Wilk et al. 2018 sec. 5, "Local deformations").

Van der Wilk et al. 2018 uses the infinite-MNIST deformations (Loosli et al. 2007; Simard et al. 2000): a smooth
random vector field moves pixels locally, followed by small local rotations and scalings. The
reference code has no such sampler; this one is differentiable in its three strengths:

1. a smooth displacement field: white noise [2, H, W] convolved with a Gaussian of width `smoothness`
   pixels, rescaled to unit root-mean-square and multiplied by `strength` (pixels);
2. a local affine jitter: a rotation by U[−rotation, rotation] degrees and a scaling by
   exp(U[−scale, scale]) about a random centre c (uniform over the middle half of the image), faded
   out with a Gaussian window of width `window`·(image side) around c, so only a neighbourhood of c turns.

The sampling location of output pixel p is p + d(p), d the sum of both displacements (a backward
warp), resampled bilinearly with zeros outside, like the affine augmentation. With all three strengths
at zero every sample is the input itself. Each strength is a `SymmetricRange` half-width (a `Bounded`
value), so it can be set and frozen from the dashboard; its sign does not matter.
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from ..errors import ConfigError
from .affine import inverse_affine_matrices, sample_grids
from .base import Augmentation, SymmetricRange, normal, range_summary, uniform

DEFORMATION_PARAMETERS = {  # name: (limit, unit)
    "strength": (10.0, "pixels"),
    "rotation": (90.0, "degrees"),
    "scale": (1.0, "log factor"),
}


def blur_matrix(n: int, sigma: float, like: torch.Tensor) -> torch.Tensor:
    """[n, n] matrix of a 1-D Gaussian blur (weights normalised over the full kernel, zeros outside the image)."""
    t = torch.arange(n, dtype=like.dtype, device=like.device)
    d = t[:, None] - t[None, :]
    radius = max(1, int(math.ceil(3.0 * sigma)))
    offsets = torch.arange(-radius, radius + 1, dtype=like.dtype, device=like.device)
    norm = torch.exp(-0.5 * (offsets / sigma) ** 2).sum()
    return torch.where(d.abs() <= radius, torch.exp(-0.5 * (d / sigma) ** 2), torch.zeros_like(d)) / norm


def gaussian_smooth(field: torch.Tensor, sigma: float) -> torch.Tensor:
    """Separable Gaussian blur of [..., H, W] maps (zeros outside), σ in pixels, on the input's device/dtype.

    Two small matrix products (G_H · field · G_Wᵀ): the same result as a zero-padded convolution, and much
    faster than `conv2d` in float64 on the CPU."""
    H, W = field.shape[-2:]
    return blur_matrix(H, sigma, field) @ field @ blur_matrix(W, sigma, field).T


class LocalDeformation(Augmentation):
    """A local elastic deformation: a smooth random displacement field plus small rotation and scaling, with learnable
    strengths (van der Wilk, Bauer, John & Hensman, "Learning invariances using the marginal likelihood", 2018, sec. 5,
    after the infinite-MNIST deformations of Loosli et al., 2007)."""
    def __init__(self, strength: float = 0.5, rotation: float = 5.0, scale: float = 0.05, *, smoothness: float = 3.0,
                 window: float = 0.3):
        super().__init__()
        if not smoothness > 0 or not window > 0:
            raise ConfigError(f"smoothness and window must be positive, got {smoothness} and {window}")
        init = {"strength": strength, "rotation": rotation, "scale": scale}
        ranges = {}
        for name, (limit, unit) in DEFORMATION_PARAMETERS.items():
            if not abs(init[name]) < limit:
                raise ConfigError(f"local deformation {name} {init[name]} must lie in (−{limit}, {limit})")
            ranges[name] = SymmetricRange(init[name], limit, name=name, unit=unit)
        self.ranges = nn.ModuleDict(ranges)
        self.smoothness, self.window = float(smoothness), float(window)

    def displacement(self, B: int, H: int, W: int, like: torch.Tensor, generator=None) -> torch.Tensor:
        """Backward displacements d(p) in pixels, [B, H, W, 2] (x, y), reparameterised in the three strengths."""
        # 1. smooth random field with unit RMS, times the strength
        noise = gaussian_smooth(normal((B, 2, H, W), like, generator), self.smoothness)  # [B, 2, H, W]
        rms = noise.pow(2).mean(dim=(1, 2, 3), keepdim=True).sqrt().clamp_min(1e-12)
        eps = uniform((B, 4), like, generator)
        field = self.ranges["strength"].half_width() * noise / rms  # the sign of the strength does not matter
        # 2. local affine jitter about a random centre c (pixels from the image centre)
        angle = self.ranges["rotation"](eps[:, 0])
        log_scale = self.ranges["scale"](eps[:, 1])
        # a 1×1 "image" makes normalised and pixel units agree: T⁻¹ in pixels, [B, 2, 2]
        Minv = inverse_affine_matrices({"rotation": angle, "scale_x": log_scale, "scale_y": log_scale}, 1, 1)[:, :, :2]
        cx = (eps[:, 2] - 0.5) * (W / 2.0)
        cy = (eps[:, 3] - 0.5) * (H / 2.0)
        ys = torch.arange(H, dtype=like.dtype, device=like.device) - (H - 1) / 2.0
        xs = torch.arange(W, dtype=like.dtype, device=like.device) - (W - 1) / 2.0
        px = xs.reshape(1, 1, W) - cx.reshape(B, 1, 1)  # [B, 1, W]: p − c
        py = ys.reshape(1, H, 1) - cy.reshape(B, 1, 1)  # [B, H, 1]
        rel = torch.stack(torch.broadcast_tensors(px, py), -1)  # [B, H, W, 2]
        moved = torch.einsum("bij,bhwj->bhwi", Minv, rel)  # T⁻¹ about c
        fade = torch.exp(-0.5 * (rel ** 2).sum(-1, keepdim=True) / (self.window * max(H, W)) ** 2)  # [B, H, W, 1]
        jitter = fade * (moved - rel)
        return field.permute(0, 2, 3, 1) + jitter  # [B, H, W, 2]

    def sample(self, X, S, generator=None):
        """S deformed copies of each image, X [N, C, H, W] → [N, S, C, H, W], resampled through the displaced grid
        (reparameterised)."""
        self.check_input(X)
        N, C, H, W = X.shape
        B = N * S
        d = self.displacement(B, H, W, X, generator)  # pixels
        identity = torch.eye(2, 3, dtype=X.dtype, device=X.device)[None]
        grid = F.affine_grid(identity, [1, C, H, W], align_corners=False)  # [1, H, W, 2] normalised pixel centres
        scale = torch.tensor([2.0 / W, 2.0 / H], dtype=X.dtype, device=X.device)
        return sample_grids(X, (grid + d * scale).reshape(N, S, H, W, 2))

    def range_values(self):
        """The current strengths by name, as tensors."""
        return range_summary(dict(self.ranges))
