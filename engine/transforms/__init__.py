"""Augmentation distributions and finite orbits for invariant GPs (van der Wilk et al. 2018).

- densities with learnable ranges: `AffineAugmentation` (presets `rotation_only`, `all_affine`),
  `LocalDeformation`;
- finite orbits (sampled without replacement): `Rot90Orbit`, `FlipOrbit`, `PermutationOrbit`, `SignFlipOrbit`,
  `CyclicShiftOrbit`, and `IdentityOrbit` (no invariance: the baseline of `invlab discover`).

All share `sample(X, S) -> [N, S, ...]`. They are chosen by name from one registry, `REGISTRY`; the built-ins
register through the same `register` decorator a user's augmentation does:

    @invlab.transforms.register("negate")
    class Negate(FiniteOrbit):
        image_only = False
        orbit_size = 2
        def __init__(self, input_shape): ...

A part is built as `factory(input_shape, **own options)` (`input_shape` is one input's: (C, H, W) or (D,));
its own arguments become settings of the invariant GP's config, and its `Bounded` values are trained and
plotted like the affine ranges. `build_augmentation(name, ...)` makes one from a config name.
"""
from __future__ import annotations

import itertools

from ..errors import ConfigError
from ..registry import Registry
from .affine import AFFINE_PARAMETERS, AffineAugmentation, all_affine, inverse_affine_matrices, rotation_only, warp
from .base import Augmentation, FiniteOrbit, IdentityRange, SymmetricRange, UniformRange
from .deformation import LocalDeformation
from .orbits import (
    CyclicShiftOrbit,
    FlipOrbit,
    IdentityOrbit,
    PermutationOrbit,
    Rot90Orbit,
    SignFlipOrbit,
    parse_coordinates,
)

__all__ = ["Augmentation", "FiniteOrbit", "UniformRange", "SymmetricRange", "IdentityRange", "AffineAugmentation",
           "rotation_only", "all_affine", "LocalDeformation", "Rot90Orbit", "FlipOrbit", "PermutationOrbit",
           "CyclicShiftOrbit", "IdentityOrbit", "SignFlipOrbit",
           "AFFINE_PARAMETERS", "build_augmentation", "inverse_affine_matrices", "warp", "register", "REGISTRY",
           "augmentation_names"]

REGISTRY = Registry("augmentation", contract=("input_shape",), extra=("auto",))
"""Every augmentation or orbit a config can name ('auto' picks one by the inputs' kind)."""


def register(name: str, **how):
    """Register an `Augmentation` / `FiniteOrbit` class (or a factory) as augmentation `name`; it is built as
    `factory(input_shape, **own options)`. `inputs=("image",)` or `("vector",)` says what it applies to (default:
    images only when the class's `image_only` is true). See `invlab.registry.Registry.register`."""
    return REGISTRY.register(name, **how)


def augmentation_names() -> list[str]:
    """The names a config's `augmentation` setting accepts: 'auto', then the registered ones."""
    return REGISTRY.names()


_RANGES = {"rotation": "init_rotation", "affine": "init_affine"}


@register("rotation", builtin=True, inputs=("image",), options=_RANGES)
def rotation(input_shape, rotation=5.0, affine=0.02):
    """Rotation by a uniform angle in [−α, α] with α learned (degrees)."""
    return rotation_only(rotation)


@register("affine", builtin=True, inputs=("image",),
          options={**_RANGES, "around_identity": "ranges_around_identity"})
def affine(input_shape, rotation=5.0, affine=0.02, around_identity=False):
    """All six affine parameters with learned uniform ranges (free ends, or around the identity: U[−a, b])."""
    return all_affine(rotation, affine, around_identity)


@register("deformation", builtin=True, inputs=("image",),
          options={**_RANGES, "deformation": "init_deformation", "smoothness": "deformation_smoothness"})
def deformation(input_shape, rotation=5.0, affine=0.02, deformation=0.5, smoothness=3.0):
    """A smooth local displacement field on top of small affine jitter, strengths learned."""
    return LocalDeformation(deformation, rotation, affine, smoothness=smoothness)


@register("rot90", builtin=True, inputs=("image",))
def rot90(input_shape):
    """The four rotations by multiples of 90 degrees."""
    return Rot90Orbit()


@register("flips", builtin=True, inputs=("image",))
def flips(input_shape):
    """An image and its left-right mirror image."""
    return FlipOrbit("horizontal")


_COORDINATES = {"coordinates": "orbit_coordinates"}


@register("permutations", builtin=True, inputs=("vector",), options=_COORDINATES)
def permutations(input_shape, coordinates=""):
    """All permutations of the coordinates of vector inputs (or of those named, e.g. '0,1': the others stay)."""
    dim = input_shape[-1]
    coords = parse_coordinates(coordinates, dim, at_least=2)
    if coords is None:
        return PermutationOrbit(dim)
    table = []
    for perm in itertools.permutations(coords):
        row = list(range(dim))
        for c, source in zip(coords, perm):
            row[c] = source
        table.append(tuple(row))
    return PermutationOrbit(dim, table)


@register("sign_flips", builtin=True, inputs=("vector",), options=_COORDINATES)
def sign_flips(input_shape, coordinates=""):
    """Every sign pattern of the coordinates of vector inputs, or of those named (f even in each of them)."""
    return SignFlipOrbit(input_shape[-1], parse_coordinates(coordinates, input_shape[-1]))


@register("identity", builtin=True, inputs=("image", "vector"))
def identity(input_shape):
    """No invariance: the one-element orbit {x} (the invariant GP is then the plain SVGP)."""
    return IdentityOrbit()


@register("cyclic_shifts", builtin=True, inputs=("image",))
def cyclic_shifts(input_shape):
    """All cyclic shifts of an image's rows and columns."""
    return CyclicShiftOrbit(input_shape[1], input_shape[2])


def build_augmentation(name: str, input_shape: tuple[int, ...], **options) -> Augmentation:
    """The augmentation a config names, for inputs of shape `input_shape` (one input: (C, H, W) or (D,)).

    `auto` is `rotation` for images and `permutations` for vectors. `options` are own constructor arguments by
    name (for the built-ins: `rotation` in degrees and `affine` for the initial ranges, `deformation` for the
    displacement strength in pixels, `smoothness`); those a part does not take are ignored.
    """
    is_image = len(input_shape) == 3
    if name == "auto":
        name = "rotation" if is_image else "permutations"
    part = REGISTRY.get(name)
    if name == "permutations" and is_image:
        raise ConfigError("augmentation='permutations' permutes the coordinates of vector inputs; for images "
                          "use rotation, affine, deformation, rot90, flips or cyclic_shifts")
    if not is_image and "vector" not in part.inputs:
        raise ConfigError(f"augmentation={name!r} acts on images; these inputs are vectors of shape {input_shape}: "
                          "use augmentation='permutations'")
    if is_image and "image" not in part.inputs:
        raise ConfigError(f"augmentation={name!r} acts on vectors; these inputs are images of shape {input_shape}: "
                          "choose one that acts on images")
    return REGISTRY.build(name, tuple(input_shape), **options)
