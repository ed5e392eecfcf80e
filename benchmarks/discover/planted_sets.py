"""The data sets of `benchmarks.discover.planted`: small generated sets with a known answer (a planted invariance, or
none), each a `PlantedSet` that writes its arrays (X, y, X_test, y_test) as an npz file a user could have made.

Images are 12×12, one channel, drawn from a few *prototypes*: a chiral motif of three Gaussian blobs (a big one, a
medium one along the motif's orientation ψ, a small one to its side: chirality χ = ±1) placed at the centre or on a
ring of radius 3 (at the angle of its own orientation). The label is an exclusive-or of prototype features, each
chosen so that some candidate changes it on another input of the data: χ (a mirror image swaps it), the parity of
ψ/90° or ψ/45° (quarter turns and rotations change it), the ring (a translation or a cyclic shift moves a motif
between centre and ring), the side (a shift by half the image). A data point is a prototype under the planted
transformation, drawn at random (for a rotation: an angle uniform in the planted range), with the prototype's
label, so every label is invariant under the planted transformation by construction; amplitudes and widths jitter
by ±15 % and every pixel gets noise (sd 0.03), which no candidate undoes.

Vectors have D = 4–6 coordinates, X ~ N(0, 1), and a target that is a function invariant under the planted group
(e.g. a sum of the same function of each coordinate for permutations) and changed by the others.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

SIZE = 12  # images are SIZE × SIZE, one channel
N_TRAIN, N_TEST = 400, 200
RING = 3.0  # pixels from the centre to a ring motif's big blob
# the motif, in its own frame (x right, y down, pixels): (x, y, amplitude, width); χ flips the small blob's side
MOTIF = np.array([[0.0, 0.0, 1.0, 0.85], [1.8, 0.0, 0.75, 0.65], [0.0, -1.5, 0.65, 0.55]])


@dataclass
class PlantedSet:
    """One data set: its `name`, `kind` ('image' or 'vector'), the `planted` answer (a candidate name as the report
    spells it, 'none' where nothing is planted, a combination 'a+b' in either order), the planted ranges in the
    report's units (`{'rotation': 45.0}` degrees; `{'translate_x': 0.167}` fraction of the width; `{'scale_x':
    0.35}` log factor: a symmetric range ±value), the candidates that are also true symmetries and why
    (`also_true`; never counted as a hit), the candidate list a user would pass (`orbits`, None: the defaults), a
    one-line description, and `make(rng, n) -> (X, y)`."""

    name: str
    kind: str
    planted: str
    description: str
    make: Callable
    ranges: dict[str, float] = field(default_factory=dict)
    also_true: str = ""
    orbits: list[str] | None = None

    def write(self, path, seed: int = 0) -> None:
        """Write the set's training and test arrays as `numpy.savez(path, X=, y=, X_test=, y_test=)`."""
        rng = np.random.default_rng(seed)
        X, y = self.make(rng, N_TRAIN)
        Xt, yt = self.make(rng, N_TEST)
        np.savez(path, X=X, y=y, X_test=Xt, y_test=yt)

    def hit(self, candidate: str | None) -> bool:
        """Whether `candidate` is the planted answer (a combination's parts in either order)."""
        if candidate is None:
            return False
        return sorted(candidate.split("+")) == sorted(self.planted.split("+"))


# ---- images ---------------------------------------------------------------------------------------------------

def _rotation(degrees: float) -> np.ndarray:
    """Counter-clockwise as displayed, in (x right, y down) coordinates (the affine augmentation's convention)."""
    a = math.radians(degrees)
    return np.array([[math.cos(a), math.sin(a)], [-math.sin(a), math.cos(a)]])


def motif(chirality: int, psi: float, ring: bool = False, offset=(0.0, 0.0)) -> np.ndarray:
    """The motif's blobs [3, 4] (x, y, amplitude, width) at orientation ψ (degrees), on the ring when `ring` (at the
    angle ψ), moved by `offset` pixels."""
    blobs = MOTIF.copy()
    blobs[2, 1] *= chirality
    blobs[:, :2] = blobs[:, :2] @ _rotation(psi).T
    if ring:
        blobs[:, :2] += RING * _rotation(psi)[:, 0]
    blobs[:, :2] += np.asarray(offset)
    return blobs


def moved(blobs: np.ndarray, matrix: np.ndarray, shift=(0.0, 0.0)) -> np.ndarray:
    """The blobs under the map q → matrix·q + shift about the image centre (widths scaled by √|det|)."""
    out = blobs.copy()
    out[:, :2] = blobs[:, :2] @ np.asarray(matrix).T + np.asarray(shift)
    out[:, 3] *= math.sqrt(abs(np.linalg.det(matrix)))
    return out


MIRROR = np.diag([-1.0, 1.0])  # left ↔ right, as the `flips` candidate


def render(blobs: np.ndarray, rng, torus: bool = False) -> np.ndarray:
    """The blobs drawn on a [1, SIZE, SIZE] image (pixel centres at ±(SIZE−1)/2 from the centre), amplitudes and
    widths jittered, with pixel noise; `torus`: distances wrap round the edges (for cyclic shifts)."""
    grid = np.arange(SIZE) - (SIZE - 1) / 2
    image = np.zeros((SIZE, SIZE))
    for x, y, amp, width in blobs:
        dx, dy = grid[None, :] - x, grid[:, None] - y
        if torus:
            dx, dy = (dx + SIZE / 2) % SIZE - SIZE / 2, (dy + SIZE / 2) % SIZE - SIZE / 2
        width *= rng.uniform(0.9, 1.1)
        image += amp * rng.uniform(0.85, 1.15) * np.exp(-(dx ** 2 + dy ** 2) / (2 * width ** 2))
    return (image + rng.normal(0, 0.03, image.shape))[None].astype(np.float32)


def from_prototypes(prototypes: list[tuple[np.ndarray, int]], nuisance, torus: bool = False):
    """`make(rng, n)` drawing n images: a prototype (blobs, label) at random, under `nuisance(rng, blobs)`."""
    def make(rng, n):
        X, y = np.zeros((n, 1, SIZE, SIZE), np.float32), np.zeros(n, np.int64)
        for i in range(n):
            blobs, label = prototypes[rng.integers(len(prototypes))]
            X[i], y[i] = render(nuisance(rng, blobs), rng, torus), label
        return X, y
    return make


def turned(low: float, high: float):
    """A nuisance: the whole image turned about its centre by an angle uniform in [low, high] degrees."""
    return lambda rng, b: moved(b, _rotation(rng.uniform(low, high)))


def _protos(chiralities, angles, rings, label) -> list[tuple[np.ndarray, int]]:
    return [(motif(c, a, r), int(label(c, a, r))) for c in chiralities for a in angles for r in rings]


def checker(rng, n):
    """A blob at a random position; its label: the parity of its cell on a 3-pixel checkerboard."""
    X, y = np.zeros((n, 1, SIZE, SIZE), np.float32), np.zeros(n, np.int64)
    yy, xx = np.mgrid[0:SIZE, 0:SIZE]
    for i in range(n):
        r, c = rng.uniform(0, SIZE - 1, 2)
        X[i, 0] = np.exp(-((yy - r) ** 2 + (xx - c) ** 2) / 2.0)
        y[i] = (int(round(r)) // 3 + int(round(c)) // 3) % 2
    return X, y


def projection(rng, n):
    """Two blobs at random positions; the label: the sign of a fixed random smooth weighting of the pixels."""
    w = np.random.default_rng(7).normal(size=(SIZE + 2, SIZE + 2))
    w = (w[:-2, :-2] + w[1:-1, 1:-1] + w[2:, 2:] + w[1:-1, :-2] + w[:-2, 1:-1])  # smooth, no symmetry
    X = np.stack([render(np.array([[*rng.uniform(-5, 5, 2), 1.0, 0.9], [*rng.uniform(-5, 5, 2), 0.7, 0.7]]), rng)
                  for _ in range(n)])
    score = (X[:, 0] * w).sum(axis=(1, 2))
    return X, (score > np.median(score)).astype(np.int64)


def _parity(a, step=90):
    return int(round(a / step)) % 2


STILL = lambda rng, b: b  # noqa: E731 — no transformation: nothing planted
CHIRAL = (1, -1)
QUARTERS = (0, 90, 180, 270)

IMAGES = [
    PlantedSet("rotation-full", "image", "rotation",
               "chiral motif at the centre or on the ring, turned by U[−180°, 180°]; label χ ⊕ ring",
               from_prototypes(_protos(CHIRAL, (0,), (False, True), lambda c, a, r: (c > 0) ^ r), turned(-180, 180)),
               {"rotation": 180.0}, "rot90 (a subgroup of full rotation) and affine's rotation part are true too"),
    PlantedSet("rotation-45", "image", "rotation",
               "motif at ψ ∈ {0°, 180°}, centre or ring, turned by U[−45°, 45°]; label [ψ = 180°] ⊕ ring (the "
               "classes' angles are 90° apart, so a turn by more than 45° brings one class near the other)",
               from_prototypes(_protos((1,), (0, 180), (False, True), lambda c, a, r: (a == 180) ^ r),
                               turned(-45, 45)),
               {"rotation": 45.0}, "affine's rotation part (the same range) is true too; a mirror image keeps the "
               "label but never occurs in the data (one chirality)"),
    PlantedSet("rotation-90", "image", "rotation",
               "chiral motif at the centre or on the ring, turned by U[−90°, 90°]; label χ ⊕ ring (as rotated "
               "digits: the label survives any turn, the data spread ±90°)",
               from_prototypes(_protos(CHIRAL, (0,), (False, True), lambda c, a, r: (c > 0) ^ r), turned(-90, 90)),
               {"rotation": 90.0}, "any turn keeps the label (turns past 90° lead off the data): the range to learn "
               "is the data's spread, van der Wilk et al.'s claim; affine's rotation part is true too; a mirror image "
               "(at 180° − ψ) lies off the data, so flips keep every label seen"),
    PlantedSet("flips", "image", "flips",
               "motif at ψ ∈ {0°, 90°, 180°, 270°}, centre or ring, mirrored left-right with probability ½; label "
               "parity(ψ/90°) ⊕ ring",
               from_prototypes(_protos((1,), QUARTERS, (False, True), lambda c, a, r: _parity(a) ^ r),
                               lambda rng, b: moved(b, MIRROR) if rng.random() < 0.5 else b)),
    PlantedSet("rot90", "image", "rot90",
               "motif at ψ ∈ {0°, 45°}, centre or ring, turned by a random multiple of 90°; label [ψ = 45°] ⊕ ring",
               from_prototypes(_protos((1,), (0, 45), (False, True), lambda c, a, r: (a == 45) ^ r),
                               lambda rng, b: moved(b, _rotation(90 * rng.integers(4)))),
               {}, "a mirror image keeps the label but never occurs in the data (one chirality)"),
    PlantedSet("cyclic-shifts", "image", "cyclic_shifts",
               "chiral motif at ψ ∈ {0°, 90°, 180°, 270°} drawn on a torus, shifted cyclically by a random whole "
               "number of rows and columns; label χ ⊕ parity(ψ/90°)",
               from_prototypes(_protos(CHIRAL, QUARTERS, (False,), lambda c, a, r: (c > 0) ^ _parity(a)),
                               lambda rng, b: moved(b, np.eye(2), rng.integers(SIZE, size=2)), torus=True),
               {}, "affine's translation part keeps the label wherever the motif does not wrap round an edge"),
    PlantedSet("translation", "image", "affine",
               "chiral motif at ψ ∈ {0°, 180°}, 3 px above or below the centre, moved by U[−2, 2] px in x and y; "
               "label χ ⊕ [below]",
               from_prototypes([(motif(c, a, offset=(0, s)), int((c > 0) ^ (s > 0))) for c in CHIRAL
                                for a in (0, 180) for s in (-3.0, 3.0)],
                               lambda rng, b: moved(b, np.eye(2), rng.uniform(-2, 2, 2))),
               {"translate_x": 2 / SIZE, "translate_y": 2 / SIZE}),
    PlantedSet("scale", "image", "affine",
               "chiral motif at ψ ∈ {0°, 180°}, 2.2 px above or below the centre, scaled about the centre by "
               "e^U[−0.35, 0.35]; label χ ⊕ [below]",
               from_prototypes([(motif(c, a, offset=(0, s)), int((c > 0) ^ (s > 0))) for c in CHIRAL
                                for a in (0, 180) for s in (-2.2, 2.2)],
                               lambda rng, b: moved(b, math.exp(rng.uniform(-0.35, 0.35)) * np.eye(2))),
               {"scale_x": 0.35, "scale_y": 0.35}),
    PlantedSet("checker", "image", "none",
               "a blob's cell on a 3-pixel checkerboard: a mirror image, a quarter turn, a 3-pixel shift swap the "
               "label", checker),
    PlantedSet("motif-none", "image", "none",
               "chiral motif at ψ ∈ {0°, 90°, 180°, 270°}, centre or ring, untransformed; label χ ⊕ parity(ψ/90°) ⊕ "
               "ring (every candidate changes it)",
               from_prototypes(_protos(CHIRAL, QUARTERS, (False, True), lambda c, a, r: (c > 0) ^ _parity(a) ^ r),
                               STILL)),
    PlantedSet("projection-none", "image", "none",
               "two blobs at random positions; label: the sign of a fixed random smooth weighting of the pixels",
               projection),
]


# ---- vectors --------------------------------------------------------------------------------------------------

def vectors(dim: int, target: Callable, classify: bool = False, noise: float = 0.05):
    """`make(rng, n)`: X ~ N(0, 1)^dim and y = target(X) (+ noise), or y = [target(X) > 0] when `classify`."""
    def make(rng, n):
        X = rng.normal(size=(n, dim))
        f = target(X)
        y = (f > 0).astype(np.int64) if classify else f + rng.normal(0, noise, n)
        return X.astype(np.float32), y
    return make


def _v(name, planted, description, make, orbits=None, also_true=""):
    return PlantedSet(name, "vector", planted, description, make, {}, also_true, orbits)


VECTORS = [
    _v("perm-all", "permutations", "D=4, y = Σ sin(1.5 xᵢ) + 0.3 Σ xᵢ² (odd part: a sign flip changes it)",
       vectors(4, lambda X: np.sin(1.5 * X).sum(1) + 0.3 * (X ** 2).sum(1))),
    _v("perm-all-class", "permutations", "D=5, y = [Σ xᵢ³ > 0]", vectors(5, lambda X: (X ** 3).sum(1), True)),
    _v("perm-all-6", "permutations", "D=6, y = tanh(Σ xᵢ) + 0.2 Σ xᵢ²",
       vectors(6, lambda X: np.tanh(X.sum(1)) + 0.2 * (X ** 2).sum(1))),
    _v("perm-some", "permutations:0,1,2", "D=5, y = Σ_{i<3} sin(1.5 xᵢ) + 0.5 x₃ − 0.4 x₄²; decoys: pairs (2,3), "
       "(0,4), sign flips of 3, all permutations, all sign flips",
       vectors(5, lambda X: np.sin(1.5 * X[:, :3]).sum(1) + 0.5 * X[:, 3] - 0.4 * X[:, 4] ** 2),
       ["permutations:0,1,2", "permutations:2,3", "permutations:0,4", "sign_flips:3", "permutations", "sign_flips"]),
    _v("perm-pair", "permutations:0,1", "D=4, y = x₀x₁ + sin(x₂) + 0.5 x₃; decoys: pairs (1,2), (2,3), sign flips "
       "of (0,1), all permutations, all sign flips",
       vectors(4, lambda X: X[:, 0] * X[:, 1] + np.sin(X[:, 2]) + 0.5 * X[:, 3]),
       ["permutations:0,1", "permutations:1,2", "permutations:2,3", "sign_flips:0,1", "permutations", "sign_flips"]),
    _v("sign-all", "sign_flips", "D=4, y = x₀² − 0.6 x₁² + 0.4 |x₂| + 0.5 |x₀x₃| (unequal weights: no permutation)",
       vectors(4, lambda X: X[:, 0] ** 2 - 0.6 * X[:, 1] ** 2 + 0.4 * abs(X[:, 2]) + 0.5 * abs(X[:, 0] * X[:, 3]))),
    _v("sign-all-class", "sign_flips", "D=5, y = [x₀² + 0.5 x₁² − x₂² + 0.8 |x₃| − 0.3 x₄² > 0.6]",
       vectors(5, lambda X: X[:, 0] ** 2 + 0.5 * X[:, 1] ** 2 - X[:, 2] ** 2 + 0.8 * abs(X[:, 3])
               - 0.3 * X[:, 4] ** 2 - 0.6, True)),
    _v("sign-all-6", "sign_flips", "D=6, y = Σ cᵢ xᵢ², c = (1, 0.7, −0.5, 0.3, −0.8, 0.4)",
       vectors(6, lambda X: (X ** 2) @ np.array([1, 0.7, -0.5, 0.3, -0.8, 0.4]))),
    _v("sign-some", "sign_flips:2", "D=4, y = x₀ + sin(x₁) + cos(1.5 x₂) + 0.5 x₀x₃; decoys: sign flips of 0, of "
       "(1,3), the pair (0,1), all permutations, all sign flips",
       vectors(4, lambda X: X[:, 0] + np.sin(X[:, 1]) + np.cos(1.5 * X[:, 2]) + 0.5 * X[:, 0] * X[:, 3]),
       ["sign_flips:2", "sign_flips:0", "sign_flips:1,3", "permutations:0,1", "permutations", "sign_flips"]),
    _v("perm-and-sign", "permutations+sign_flips", "D=4, y = Σ |xᵢ|³ − Σ xᵢ²: both groups (stage 2's "
       "combination is the planted answer)", vectors(4, lambda X: (abs(X) ** 3).sum(1) - (X ** 2).sum(1)),
       also_true="permutations and sign_flips alone are true too (each a part of the answer)"),
    _v("linear-none", "none", "D=4, y = [x₀ − 0.7 x₁ + 0.4 x₂ + 0.2 x₃ + 0.3 > 0]",
       vectors(4, lambda X: X @ np.array([1.0, -0.7, 0.4, 0.2]) + 0.3, True)),
    _v("nonlinear-none", "none", "D=4, y = sin(x₀) + x₁x₂ − 0.5 x₃ + 0.3 x₀x₃",
       vectors(4, lambda X: np.sin(X[:, 0]) + X[:, 1] * X[:, 2] - 0.5 * X[:, 3] + 0.3 * X[:, 0] * X[:, 3])),
    _v("odd-none", "none", "D=5, y = [x₀ + x₁² − x₂x₃ + 0.5 x₄ > 0.5]",
       vectors(5, lambda X: X[:, 0] + X[:, 1] ** 2 - X[:, 2] * X[:, 3] + 0.5 * X[:, 4] - 0.5, True)),
]

# The bundled digits turned by U[−90°, 90°] (the Discover lesson's data): not generated, studied by name.
DIGITS = PlantedSet("digits-rotated", "image", "rotation", "scikit-learn's 8×8 digits turned by U[−90°, 90°] "
                    "(the Discover lesson: 300 training, 300 test digits)", None, {"rotation": 90.0},
                    "none exact; a 6 turned by 180° is a 9, so no candidate is a symmetry beyond ±90°")
DIGITS_DATA = {"dataset": "digits", "rotate": 90, "subset": 300, "test_subset": 300}

SETS = IMAGES + VECTORS + [DIGITS]
QUICK = ["rotation-45", "flips", "checker", "perm-pair", "sign-all", "linear-none"]
