"""Augmentation distributions and finite orbits for invariant GPs (paper 000).

- densities with learnable ranges: `AffineAugmentation` (presets `rotation_only`, `all_affine`),
  `LocalDeformation`;
- finite orbits (sampled without replacement): `Rot90Orbit`, `FlipOrbit`, `PermutationOrbit`,
  `CyclicShiftOrbit`.

All share `sample(X, S) -> [N, S, ...]`; `build_augmentation(name, ...)` makes one from a config name.
"""
from __future__ import annotations

from ..errors import ConfigError
from .affine import AFFINE_PARAMETERS, AffineAugmentation, all_affine, inverse_affine_matrices, rotation_only, warp
from .base import Augmentation, FiniteOrbit, SymmetricRange, UniformRange
from .deformation import LocalDeformation
from .orbits import CyclicShiftOrbit, FlipOrbit, PermutationOrbit, Rot90Orbit

AUGMENTATIONS = ("auto", "rotation", "affine", "deformation", "rot90", "flips", "permutations", "cyclic_shifts")

__all__ = ["Augmentation", "FiniteOrbit", "UniformRange", "SymmetricRange", "AffineAugmentation", "rotation_only",
           "all_affine", "LocalDeformation", "Rot90Orbit", "FlipOrbit", "PermutationOrbit", "CyclicShiftOrbit",
           "AFFINE_PARAMETERS", "AUGMENTATIONS", "build_augmentation", "inverse_affine_matrices", "warp"]


def build_augmentation(name: str, input_shape: tuple[int, ...], *, rotation: float = 5.0, affine: float = 0.02,
                       deformation: float = 0.5, smoothness: float = 3.0) -> Augmentation:
    """The augmentation a config names, for inputs of shape `input_shape` (one input: (C, H, W) or (D,)).

    `auto` is `rotation` for images and `permutations` for vectors. Initial ranges: `rotation` (degrees)
    for angles, `affine` for the other affine parameters, `deformation` for the displacement strength (pixels).
    """
    is_image = len(input_shape) == 3
    if name == "auto":
        name = "rotation" if is_image else "permutations"
    if name not in AUGMENTATIONS:
        raise ConfigError(f"unknown augmentation {name!r}; choose one of {', '.join(AUGMENTATIONS)}")
    if name == "permutations":
        if is_image:
            raise ConfigError("augmentation='permutations' permutes the coordinates of vector inputs; for images "
                              "use rotation, affine, deformation, rot90, flips or cyclic_shifts")
        return PermutationOrbit(input_shape[-1])
    if not is_image:
        raise ConfigError(f"augmentation={name!r} acts on images; these inputs are vectors of shape {input_shape}: "
                          "use augmentation='permutations'")
    if name == "rotation":
        return rotation_only(rotation)
    if name == "affine":
        return all_affine(rotation, affine)
    if name == "deformation":
        return LocalDeformation(deformation, rotation, affine, smoothness=smoothness)
    if name == "rot90":
        return Rot90Orbit()
    if name == "flips":
        return FlipOrbit("horizontal")
    return CyclicShiftOrbit(input_shape[1], input_shape[2])
