"""Tangent vectors of affine image transformations, for transformation invariance (Zhang, Lee & Teh 2013, sec. 4.2, Thm
5, eq. 9; tangents as in Simard et al., "Transformation invariance in pattern recognition", ref. [3]).

An image is a function g on the plane; a transformation t_α acts by T_α(g) = g ∘ t_α⁻¹, and I(g, α; S) samples
T_α(g) at the pixel centres S. The invariance functional of Thm 5 is L(f) = ∂/∂α f(I(g, α; S))|_{α=0} =
v·∇f(x) with the tangent vector v = ∂I/∂α|_{α=0}, i.e. a directional derivative (`DirectionalDerivative`),
whose representer inner products are eq. 9.

Coordinates are pixel units centred on the image (x to the right, y down the rows). The one-parameter
families and their generators u(s) = ∂t_α(s)/∂α at α = 0:

    tx: (x + α, y) → u = (1, 0)          rotation: R(α) s → u = (−y, x)     shear_x: (x + α y, y) → u = (y, 0)
    ty: (x, y + α) → u = (0, 1)          scale: (1 + α) s → u = (x, y)      shear_y: (x, y + α x) → u = (0, x)

Two ways to get v, both offered:
- differentiate the warp. The pixels are extended to a continuous image by Gaussian interpolation
  (g(p) = Σ_q I_q φ_β(p − q) / Σ_q φ_β(q), the paper's footnote 3 after Simard), so T_α(g)(s) is smooth in α and
  its derivative at α = 0 is v(s) = −∇g(s)·u(s) = β⁻² Σ_q I_q φ_β(s − q) (s − q)·u(s) / Σ φ_β: `method="analytic"`
  applies this chain rule as one [H·W, H·W] matrix; `method="autograd"` gets the same numbers by forward-mode
  autograd through `gaussian_warp` (torch.func, whose first use imports torch's compiler stack: seconds);
- `method="finite"`: central differences (T_δ(g) − T_−δ(g)) / 2 of the actual transformation, by default with
  bilinear resampling of the raw image at the paper's magnitudes (2-pixel shifts, ±10° rotations, ±0.1 scaling
  and shearing; sec. 6.3: "approximated with the difference that results from the above transformation").

Both are scaled to one "typical" transformation: the derivative methods return δ·∂I/∂α, finite differences
(I(δ) − I(−δ))/2, with δ the magnitude per transformation (`PAPER_MAGNITUDES` unless given), so the two agree
to O(δ²) and the invariance weight ν means the same for either. `virtual_samples` applies the same ±δ
transformations to make the virtual examples of the VirSVM baseline.
"""
from __future__ import annotations

import math

import torch
from torch.nn import functional as F

from ...errors import ConfigError, ShapeError

TRANSFORMATIONS = ("tx", "ty", "rotation", "scale", "shear_x", "shear_y")
PAPER_MAGNITUDES = {"tx": 2.0, "ty": 2.0, "rotation": math.radians(10.0), "scale": 0.1, "shear_x": 0.1, "shear_y": 0.1}
TANGENT_METHODS = ("analytic", "autograd", "finite")


def _check_names(names) -> list[str]:
    names = list(names)
    bad = [n for n in names if n not in TRANSFORMATIONS]
    if bad or not names:
        raise ConfigError(f"unknown transformation(s) {bad or names}; choose from {', '.join(TRANSFORMATIONS)}")
    return names


def pixel_coordinates(H: int, W: int, dtype=torch.float64, device=None) -> torch.Tensor:
    """Centres of the pixels, row-major, as (x, y) in pixel units about the image centre: [H·W, 2]."""
    y, x = torch.meshgrid(torch.arange(H, dtype=dtype, device=device) - (H - 1) / 2,
                          torch.arange(W, dtype=dtype, device=device) - (W - 1) / 2, indexing="ij")
    return torch.stack([x.reshape(-1), y.reshape(-1)], -1)


def generator(name: str, S: torch.Tensor) -> torch.Tensor:
    """u(s) = ∂t_α(s)/∂α at α = 0 for points S [P, 2] → [P, 2]."""
    x, y = S[:, 0], S[:, 1]
    zero, one = torch.zeros_like(x), torch.ones_like(x)
    table = {"tx": (one, zero), "ty": (zero, one), "rotation": (-y, x), "scale": (x, y), "shear_x": (y, zero),
             "shear_y": (zero, x)}
    if name not in table:
        raise ConfigError(f"unknown transformation {name!r}; choose from {', '.join(TRANSFORMATIONS)}")
    return torch.stack(table[name], -1)


def _lattice_norm(H: int, W: int, blur: float, dtype, device) -> torch.Tensor:
    k = torch.arange(-max(H, W), max(H, W) + 1, dtype=dtype, device=device)
    return torch.exp(-0.5 * k**2 / blur**2).sum() ** 2  # Σ_q φ(q) over the lattice: a constant image stays constant


def tangent_matrix(name: str, H: int, W: int, blur: float = 1.0, dtype=torch.float64, device=None) -> torch.Tensor:
    """M [H·W, H·W] with v = M I: the derivative at α = 0 of the Gaussian-interpolated warp, by the chain rule."""
    S = pixel_coordinates(H, W, dtype, device)
    diff = S[:, None, :] - S[None, :, :]  # s − q  [P_out, P_in, 2]
    phi = torch.exp(-0.5 * (diff**2).sum(-1) / blur**2)
    flow = (diff * generator(name, S)[:, None, :]).sum(-1)  # (s − q)·u(s)
    return phi * flow / (blur**2 * _lattice_norm(H, W, blur, dtype, device))


def inverse_map(name: str, alpha: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """t_α⁻¹(s) for points S [P, 2]; differentiable in the scalar tensor α."""
    x, y = S[:, 0], S[:, 1]
    if name == "tx":
        return torch.stack([x - alpha, y + 0 * alpha], -1)
    if name == "ty":
        return torch.stack([x + 0 * alpha, y - alpha], -1)
    if name == "rotation":
        c, s = torch.cos(alpha), torch.sin(alpha)
        return torch.stack([c * x + s * y, -s * x + c * y], -1)
    if name == "scale":
        return S / (1.0 + alpha)
    if name == "shear_x":
        return torch.stack([x - alpha * y, y + 0 * alpha], -1)
    if name == "shear_y":
        return torch.stack([x + 0 * alpha, y - alpha * x], -1)
    raise ConfigError(f"unknown transformation {name!r}; choose from {', '.join(TRANSFORMATIONS)}")


def _images(images: torch.Tensor) -> torch.Tensor:
    if images.dim() != 4:
        raise ShapeError(f"images must be [N, C, H, W], got shape {tuple(images.shape)}")
    return images


def gaussian_warp(images: torch.Tensor, name: str, alpha: torch.Tensor, blur: float = 1.0) -> torch.Tensor:
    """T_α(g) sampled at the pixel centres, g the Gaussian interpolation (width `blur` pixels) of the images.

    images [N, C, H, W] → [N, C, H, W]. The warp is one [H·W, H·W] matrix shared by all images (it acts on
    coordinates), smooth in α, so autograd differentiates it exactly."""
    N, C, H, W = _images(images).shape
    S = pixel_coordinates(H, W, images.dtype, images.device)
    src = inverse_map(name, alpha, S)  # where each output pixel reads from  [P, 2]
    d2 = ((src[:, None, :] - S[None, :, :]) ** 2).sum(-1)  # [P_out, P_in]
    Wmat = torch.exp(-0.5 * d2 / blur**2) / _lattice_norm(H, W, blur, images.dtype, images.device)
    return (images.reshape(N * C, H * W) @ Wmat.T).reshape(N, C, H, W)


def bilinear_warp(images: torch.Tensor, name: str, alpha: float) -> torch.Tensor:
    """T_α of the raw pixels with bilinear resampling (zeros outside), as the virtual samples use."""
    N, C, H, W = _images(images).shape
    S = pixel_coordinates(H, W, images.dtype, images.device)
    src = inverse_map(name, torch.as_tensor(alpha, dtype=images.dtype, device=images.device), S)
    grid = torch.stack([src[:, 0] / ((W - 1) / 2), src[:, 1] / ((H - 1) / 2)], -1).reshape(1, H, W, 2)
    return F.grid_sample(images, grid.expand(N, H, W, 2), mode="bilinear", padding_mode="zeros", align_corners=True)


def tangent_vectors(images: torch.Tensor, names=TRANSFORMATIONS, *, method: str = "analytic",
                    magnitudes: dict | None = None, blur: float = 1.0,
                    interpolation: str | None = None) -> torch.Tensor:
    """Tangent vectors [N, T, C, H, W] of the T transformations `names` at each image, scaled by their magnitude δ.

    method='analytic' / 'autograd': δ·∂/∂α T_α(g)|_{α=0} on the Gaussian interpolation, by the chain rule / by
    forward-mode AD through the warp (same numbers; the tests check it).
    method='finite': (T_δ(g) − T_−δ(g))/2; `interpolation` 'bilinear' (default: the raw image, as the paper)
    or 'gaussian' (the same smooth image as autograd, so the two agree to O(δ²))."""
    names = _check_names(names)
    images = _images(images)
    mags = dict(PAPER_MAGNITUDES, **(magnitudes or {}))
    if method not in TANGENT_METHODS:
        raise ConfigError(f"tangent method must be one of {', '.join(TANGENT_METHODS)}, got {method!r}")
    if not blur > 0:
        raise ConfigError(f"blur (the Gaussian interpolation width in pixels) must be positive, got {blur}")
    zero = torch.zeros((), dtype=images.dtype, device=images.device)
    out = []
    for name in names:
        delta = float(mags[name])
        if method == "analytic":
            N, C, H, W = images.shape
            M = tangent_matrix(name, H, W, blur, images.dtype, images.device)
            out.append(delta * (images.reshape(N * C, H * W) @ M.T).reshape(N, C, H, W))
        elif method == "autograd":
            _, dv = torch.func.jvp(lambda a: gaussian_warp(images, name, a, blur), (zero,), (torch.ones_like(zero),))
            out.append(delta * dv)
        else:
            mode = interpolation or "bilinear"
            if mode == "bilinear":
                plus, minus = bilinear_warp(images, name, delta), bilinear_warp(images, name, -delta)
            elif mode == "gaussian":
                plus = gaussian_warp(images, name, zero + delta, blur)
                minus = gaussian_warp(images, name, zero - delta, blur)
            else:
                raise ConfigError(f"interpolation must be 'bilinear' or 'gaussian', got {mode!r}")
            out.append(0.5 * (plus - minus))
    return torch.stack(out, 1)


def virtual_samples(images: torch.Tensor, names=TRANSFORMATIONS, magnitudes: dict | None = None) -> torch.Tensor:
    """The VirSVM examples: each image transformed by ±δ of each transformation (bilinear): [N, 2T, C, H, W]."""
    names = _check_names(names)
    mags = dict(PAPER_MAGNITUDES, **(magnitudes or {}))
    out = []
    for name in names:
        out += [bilinear_warp(images, name, float(mags[name])), bilinear_warp(images, name, -float(mags[name]))]
    return torch.stack(out, 1)
