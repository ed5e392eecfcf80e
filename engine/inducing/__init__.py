"""Inducing variables: they hold their locations and nothing else (GPflow 2 split).

How an inducing variable covaries with itself and with function values is decided in
`invlab.covariances` for each (inducing variable, kernel) pair, so patches, orbits and blocks are added
there without touching kernels or models.
"""
from .patches import InducingBlocks, InducingPatches, SharedInducingPatches, block_sizes, initial_patches
from .points import InducingPoints, InducingVariables, InterDomainPoints, initial_locations

__all__ = ["InducingVariables", "InducingPoints", "InterDomainPoints", "initial_locations", "InducingPatches",
           "SharedInducingPatches", "InducingBlocks", "block_sizes", "initial_patches"]
