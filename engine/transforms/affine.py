"""Affine augmentation with learnable uniform ranges (van der Wilk et al. 2018 sec. 5, "Affine transformations").

A 2-D affine map has six parameters φ; each sample draws φ_i ~ U[lo_i, hi_i] by reparameterisation
(φ = lo + (hi − lo)·ε), builds the map and resamples the image with `affine_grid` / `grid_sample`
(bilinear, zeros outside, as `scipy.ndimage.rotate(order=1, mode='constant')`), so the bound's gradient
reaches every lo and hi. The six parameters are chosen to be readable on a slider:

    rotation      degrees, counter-clockwise as displayed (the data's convention: scipy.ndimage.rotate
                  with axes=(2, 1))
    scale_x/y     log of the scale factor along columns / rows (0 = unchanged)
    shear         tan of the shear angle: column offset per row below the centre
    translate_x/y shift as a fraction of the width / height (positive: right / down)

The forward map on pixel positions q (relative to the image centre, x right, y down) is
    T(q) = R(rotation) · Sh(shear) · diag(e^{scale_x}, e^{scale_y}) · q + t,
any affine map with positive determinant, and the output image is x_a(p) = x(T⁻¹(p)).

Presets: `rotation_only(α)` (one learnable α, range [−α, α]) and `all_affine(...)` (six two-sided
ranges: free ends U[lo, hi] as in the paper, or U[−a, b] around the identity with `around_identity=True`). Any range
can be frozen (`.frozen = True` on its Bounded values) or left out (held at 0).
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from ..errors import ConfigError
from .base import Augmentation, IdentityRange, SymmetricRange, UniformRange, range_summary, uniform

# name: (limit of the learnable values, unit)
AFFINE_PARAMETERS: dict[str, tuple[float, str]] = {
    "rotation": (180.0, "degrees"),
    "scale_x": (1.0, "log factor"),
    "scale_y": (1.0, "log factor"),
    "shear": (1.0, "tan of angle"),
    "translate_x": (0.5, "fraction of width"),
    "translate_y": (0.5, "fraction of height"),
}


def inverse_affine_matrices(phi: dict[str, torch.Tensor], height: int, width: int) -> torch.Tensor:
    """The `affine_grid` matrices [B, 2, 3] (output → input, normalised coordinates) for parameters φ [B].

    T⁻¹(p) = diag(e^{−sx}, e^{−sy}) · Sh(−shear) · R(−rotation) · (p − t), in pixel units; normalised
    coordinates (align_corners=False) are pixel offsets from the centre divided by (W/2, H/2).
    """
    zero = next(iter(phi.values())) * 0.0
    get = lambda k: phi.get(k, zero)  # noqa: E731
    a = get("rotation") * (math.pi / 180.0)
    c, s = torch.cos(a), torch.sin(a)
    # R(φ) counter-clockwise as displayed, in (x right, y down) coordinates: [[c, s], [−s, c]];
    # R(−φ) = [[c, −s], [s, c]]
    r00, r01, r10, r11 = c, -s, s, c
    sh = get("shear")
    # Sh(−shear) · R(−φ), Sh = [[1, shear], [0, 1]]
    m00, m01 = r00 - sh * r10, r01 - sh * r11
    m10, m11 = r10, r11
    ex, ey = torch.exp(-get("scale_x")), torch.exp(-get("scale_y"))
    m00, m01, m10, m11 = ex * m00, ex * m01, ey * m10, ey * m11  # diag(e^{−sx}, e^{−sy}) · …
    tx, ty = get("translate_x") * width, get("translate_y") * height  # pixels
    # into normalised coordinates: D⁻¹ · Minv · D with D = diag(W/2, H/2); offset −D⁻¹ · Minv · t
    hw, hh = width / 2.0, height / 2.0
    n00, n01, n10, n11 = m00, m01 * hh / hw, m10 * hw / hh, m11
    o0 = -(m00 * tx + m01 * ty) / hw
    o1 = -(m10 * tx + m11 * ty) / hh
    return torch.stack([torch.stack([n00, n01, o0], -1), torch.stack([n10, n11, o1], -1)], -2)  # [B, 2, 3]


def warp(X: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """Resample images X [B, C, H, W] through `affine_grid` matrices theta [B, 2, 3] (bilinear, zeros outside)."""
    grid = F.affine_grid(theta, list(X.shape), align_corners=False)  # [B, H, W, 2]
    return F.grid_sample(X, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def sample_grids(X: torch.Tensor, grids: torch.Tensor) -> torch.Tensor:
    """S resamplings of each image: X [N, C, H, W], sampling grids [N, S, H, W, 2] (normalised) → [N, S, C, H, W].

    The S grids of an image are stacked along the output height, so `grid_sample` reads each input image once
    instead of from S copies of it (the copies would be the largest tensor of a training step)."""
    N, S, H, W, _ = grids.shape
    out = F.grid_sample(X, grids.reshape(N, S * H, W, 2), mode="bilinear", padding_mode="zeros",
                        align_corners=False)  # [N, C, S·H, W]
    return out.reshape(N, X.shape[1], S, H, W).transpose(1, 2)


class AffineAugmentation(Augmentation):
    """x_a = Aff_φ(x) with φ_i ~ U(range_i); `ranges` holds a `UniformRange`, `SymmetricRange` or `IdentityRange`
    per parameter that is augmented (parameters not listed stay at 0: no change)."""

    def __init__(self, ranges: dict[str, nn.Module]):
        super().__init__()
        unknown = set(ranges) - set(AFFINE_PARAMETERS)
        if unknown:
            raise ConfigError(f"unknown affine parameter(s) {sorted(unknown)}; known: {', '.join(AFFINE_PARAMETERS)}")
        if not ranges:
            raise ConfigError("an affine augmentation needs at least one parameter range")
        self.ranges = nn.ModuleDict(ranges)

    def draw(self, N: int, S: int, like: torch.Tensor, generator=None) -> dict[str, torch.Tensor]:
        """φ for N·S samples: name → [N·S] (reparameterised; differentiable in the ranges)."""
        eps = uniform((N * S, len(self.ranges)), like, generator)
        return {name: r(eps[:, i]) for i, (name, r) in enumerate(self.ranges.items())}

    def sample(self, X, S, generator=None):
        """S affine transforms of each image, parameters drawn uniformly from the learned ranges (reparameterised): X
        [N, C, H, W] → [N, S, C, H, W] (van der Wilk, Bauer, John & Hensman, "Learning invariances using the marginal
        likelihood", 2018, sec. 5)."""
        self.check_input(X)
        N, C, H, W = X.shape
        theta = inverse_affine_matrices(self.draw(N, S, X, generator), H, W)  # [N·S, 2, 3]
        grids = F.affine_grid(theta, [N * S, C, H, W], align_corners=False)  # [N·S, H, W, 2]
        return sample_grids(X, grids.reshape(N, S, H, W, 2))

    def range_values(self):
        """The current ranges by name, as tensors, each in its unit of `AFFINE_PARAMETERS` (degrees for rotation)."""
        return range_summary(dict(self.ranges))


def rotation_only(alpha: float = 5.0) -> AffineAugmentation:
    """Rotations by U[−α, α] degrees with one learnable α (van der Wilk et al. 2018 sec. 5.1)."""
    limit, unit = AFFINE_PARAMETERS["rotation"]
    return AffineAugmentation({"rotation": SymmetricRange(alpha, limit, name="rotation", unit=unit)})


def all_affine(rotation: float = 5.0, other: float = 0.02, around_identity: bool = False) -> AffineAugmentation:
    """All six parameters, each with a learnable two-sided range started at [−init, init]
    (`rotation` in degrees for the angle, `other` for the rest, in their own units).

    `around_identity=False` learns both ends freely, U[lo, hi] (`UniformRange`, as van der Wilk et al. 2018 do), so a
    learned range may leave the identity out; `True` learns U[−a, b] with a, b ≥ 0 (`IdentityRange`), so every
    learned range holds the identity and is an invariance, never a fixed warp."""
    ranges = {}
    for name, (limit, unit) in AFFINE_PARAMETERS.items():
        init = rotation if name == "rotation" else other
        if not 0 <= init < limit:
            raise ConfigError(f"initial {name} range {init} must lie in [0, {limit})")
        ranges[name] = (IdentityRange(init, init, limit, name=name, unit=unit) if around_identity else
                        UniformRange(-init, init, limit, name=name, unit=unit))
    return AffineAugmentation(ranges)
