"""Finite orbits: the rot90 group, flips, coordinate permutations, sign flips, cyclic shifts and the one-element
identity orbit (van der Wilk et al. 2018 sec. 4.1).

Each is a `FiniteOrbit` with P elements, element 0 the identity. `sample(X, S)` draws S of them without
replacement per input (appendix B.1 re-weights the estimators for this); S = P gives the exact orbit.

Conventions: images are [N, C, H, W] with row 0 at the top. Rotations turn counter-clockwise as
displayed, as in the data's rotation variant (`scipy.ndimage.rotate(..., axes=(2, 1))`).
"""
from __future__ import annotations

import itertools

import torch

from ..errors import ConfigError, ShapeError
from .base import FiniteOrbit


def parse_coordinates(text: str, dim: int, at_least: int = 1) -> list[int] | None:
    """The coordinates a group acts on, from text like '0,1' (None for empty text: all of them); refused (ConfigError)
    unless they are distinct integers in 0..dim−1, at least `at_least` of them."""
    if text is None or not str(text).strip():
        return None
    try:
        coords = [int(c) for c in str(text).split(",") if c.strip()]
    except ValueError:
        raise ConfigError(f"orbit coordinates {text!r} must be whole numbers separated by commas, e.g. '0,1'") from None
    bad = [c for c in coords if not 0 <= c < dim]
    if bad:
        raise ConfigError(f"orbit coordinates {text!r} name coordinate {bad[0]}; these inputs have D={dim} "
                          f"coordinates, 0..{dim - 1}")
    if len(set(coords)) != len(coords):
        raise ConfigError(f"orbit coordinates {text!r} name a coordinate twice; give each once")
    if len(coords) < at_least:
        raise ConfigError(f"orbit coordinates {text!r}: name at least {at_least} coordinates, e.g. '0,1'")
    return coords


def _gather_elements(elements: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """elements [N, P, ...], index [N, S] → [N, S, ...]."""
    shape = index.shape + elements.shape[2:]
    idx = index.reshape(index.shape + (1,) * (elements.dim() - 2)).expand(shape)
    return elements.gather(1, idx)


class Rot90Orbit(FiniteOrbit):
    """{x, rot90(x), rot180(x), rot270(x)}: element k turns the image by 90k degrees counter-clockwise."""

    orbit_size = 4

    def apply(self, X, index):
        """The quarter turns `index` [N, S] (k·90° counter-clockwise as displayed) of each image: [N, S, C, H, W]."""
        # torch.rot90 over dims (-2, -1) turns from the row axis towards the column axis: counter-clockwise
        # as displayed (the same as np.rot90 and as scipy.ndimage.rotate(+90, axes=(2, 1)))
        everything = torch.stack([torch.rot90(X, k, dims=(-2, -1)) for k in range(4)], 1)  # [N, 4, C, H, W]
        return _gather_elements(everything, index)


class FlipOrbit(FiniteOrbit):
    """Mirror images: 'horizontal' {x, x left↔right}, 'vertical' {x, x top↔bottom}, 'both' (4 elements)."""

    AXES = ("horizontal", "vertical", "both")

    def __init__(self, axes: str = "horizontal"):
        super().__init__()
        if axes not in self.AXES:
            raise ConfigError(f"flip axes must be one of {', '.join(self.AXES)}, got {axes!r}")
        self.axes = axes

    @property
    def orbit_size(self) -> int:
        """P: 2 for one axis, 4 for both."""
        return 4 if self.axes == "both" else 2

    def apply(self, X, index):
        """The flips `index` [N, S] of each image (element 0 the identity): [N, S, C, H, W]."""
        flips = {"horizontal": [(), (-1,)], "vertical": [(), (-2,)], "both": [(), (-1,), (-2,), (-2, -1)]}[self.axes]
        everything = torch.stack([X.flip(d) if d else X for d in flips], 1)  # [N, P, C, H, W]
        return _gather_elements(everything, index)


class PermutationOrbit(FiniteOrbit):
    """Permutations of the coordinates of vector inputs [N, D]: all D! of them (D ≤ 8) or a given list.

    For `symmetric-2d` the orbit is {(x1, x2), (x2, x1)}: functions symmetric under swapping inputs.
    """

    image_only = False
    MAX_DIM = 8  # 8! = 40,320 elements; beyond that list the permutations wanted

    def __init__(self, dim: int, permutations: list[tuple[int, ...]] | None = None):
        super().__init__()
        if permutations is None:
            if not 1 <= dim <= self.MAX_DIM:
                raise ConfigError(f"all permutations of D={dim} coordinates is too many (D! elements); "
                                  f"use D ≤ {self.MAX_DIM} or pass the permutations wanted")
            permutations = list(itertools.permutations(range(dim)))
        for p in permutations:
            if sorted(p) != list(range(dim)):
                raise ConfigError(f"{p} is not a permutation of 0..{dim - 1}")
        if tuple(permutations[0]) != tuple(range(dim)):
            permutations = [tuple(range(dim))] + [tuple(p) for p in permutations if tuple(p) != tuple(range(dim))]
        self.dim = dim
        self.table = [tuple(int(i) for i in p) for p in permutations]

    @property
    def orbit_size(self) -> int:
        """P, the number of permutations in the table."""
        return len(self.table)

    def check_input(self, X):
        """Refuse inputs that are not vectors [N, D] of the dimension the orbit was built for (ShapeError)."""
        if X.dim() != 2 or X.shape[1] != self.dim:
            raise ShapeError(f"PermutationOrbit was built for vectors [N, {self.dim}]; got shape {tuple(X.shape)}")

    def apply(self, X, index):
        """The permutations `index` [N, S] of each vector's coordinates: [N, S, D]."""
        table = torch.as_tensor(self.table, device=X.device)  # [P, D]
        cols = table[index]  # [N, S, D]
        N, S = index.shape
        return X[:, None, :].expand(N, S, self.dim).gather(2, cols)


class CyclicShiftOrbit(FiniteOrbit):
    """All cyclic shifts (with wrap-around) of an image, P = H·W: element k = (dy, dx) = divmod(k, W),
    content moved down by dy rows and right by dx columns (`torch.roll(x, (dy, dx), (-2, -1))`).
    The image size is fixed at construction because it sets P."""

    def __init__(self, height: int, width: int):
        super().__init__()
        if height < 1 or width < 1:
            raise ConfigError(f"cyclic shifts need a positive image size, got {height}×{width}")
        self.height, self.width = int(height), int(width)

    @property
    def orbit_size(self) -> int:
        """P = H·W, every cyclic shift of the image."""
        return self.height * self.width

    def check_input(self, X):
        """Refuse inputs that are not images of the size the orbit was built for (ShapeError)."""
        super().check_input(X)
        if tuple(X.shape[-2:]) != (self.height, self.width):
            raise ShapeError(f"CyclicShiftOrbit was built for {self.height}×{self.width} images; got {tuple(X.shape)}")

    def apply(self, X, index):
        """The cyclic shifts `index` [N, S] (shift dy = index // W rows, dx = index % W columns) of each image: [N, S,
        C, H, W]."""
        N, C, H, W = X.shape
        S = index.shape[1]
        dy, dx = index // W, index % W  # [N, S]
        rows = (torch.arange(H, device=X.device) - dy[..., None]) % H  # [N, S, H]: source row of each output row
        cols = (torch.arange(W, device=X.device) - dx[..., None]) % W  # [N, S, W]
        flat = (rows[..., :, None] * W + cols[..., None, :]).reshape(N, S, 1, H * W).expand(N, S, C, H * W)
        source = X.reshape(N, 1, C, H * W).expand(N, S, C, H * W)
        return source.gather(3, flat).reshape(N, S, C, H, W)



class IdentityOrbit(FiniteOrbit):
    """{x}: the one-element orbit. An invariant GP with it is the plain SVGP (the sum over the orbit is k itself), built
    by the same code as every invariant candidate: the `none` baseline that `invlab discover` compares against."""

    image_only = False
    orbit_size = 1

    def check_input(self, X):
        """Any inputs of at least two dimensions ([N, D] vectors or [N, C, H, W] images) are accepted."""
        if X.dim() < 2:
            raise ShapeError(f"IdentityOrbit needs a batch of inputs [N, ...]; got shape {tuple(X.shape)}")

    def apply(self, X, index):
        """Each input repeated for every (identity) element of `index` [N, S]: [N, S, ...]."""
        N, S = index.shape
        return X[:, None].expand(N, S, *X.shape[1:])


class SignFlipOrbit(FiniteOrbit):
    """All sign patterns of the coordinates of vector inputs [N, D], or of the `coordinates` given (at most 8 of
    them): functions even in each of them, f(x1, ..., xD) = f(±x1, ..., ±xD). Element k flips the j-th coordinate
    when bit j of k is set (element 0 the identity)."""

    image_only = False
    MAX_DIM = 8  # 2^8 = 256 elements

    def __init__(self, dim: int, coordinates: list[int] | None = None):
        super().__init__()
        self.dim = int(dim)
        self.coordinates = list(range(self.dim)) if coordinates is None else [int(c) for c in coordinates]
        n = len(self.coordinates)
        if not 1 <= n <= self.MAX_DIM:
            raise ConfigError(f"all sign flips of D={n} coordinates is 2^D elements; use D ≤ {self.MAX_DIM}, or "
                              "name the coordinates wanted (e.g. sign_flips:0,1)")
        signs = torch.ones(2 ** n, self.dim, dtype=torch.float64)  # [P, D]
        for k in range(2 ** n):
            for j, c in enumerate(self.coordinates):
                if k >> j & 1:
                    signs[k, c] = -1.0
        self.register_buffer("signs", signs, persistent=False)

    @property
    def orbit_size(self) -> int:
        """P = 2^(number of coordinates flipped)."""
        return 2 ** len(self.coordinates)

    def check_input(self, X):
        """Refuse inputs that are not vectors [N, D] of the dimension the orbit was built for (ShapeError)."""
        if X.dim() != 2 or X.shape[1] != self.dim:
            raise ShapeError(f"SignFlipOrbit was built for vectors [N, {self.dim}]; got shape {tuple(X.shape)}")

    def apply(self, X, index):
        """The sign patterns `index` [N, S] applied to each vector: [N, S, D]."""
        signs = self.signs.to(device=X.device, dtype=X.dtype)[index]  # [N, S, D]
        return X[:, None, :] * signs
