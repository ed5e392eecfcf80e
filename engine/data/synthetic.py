"""Synthetic datasets of the papers, generated from a seed (nothing is stored or downloaded).

- `rectangles` — van der Wilk, Rasmussen & Hensman 2017 (Convolutional GPs), sec. 3.1 "Toy demo: rectangles": 28×28
images, each
  the outline of a randomly generated rectangle, labelled by whether it is taller than wide.
- `symmetric_2d` — van der Wilk et al. 2018 (Learning invariances), sec. 3.2 and Fig. 2: regression data from a
  function of two inputs that is invariant to swapping them, f(x1, x2) = f(x2, x1).
- `two_moons` — Zhang, Lee & Teh 2013 (Invariance via linear functionals on RKHS), sec. 6.1 and Fig. 1: the
  two-moons data of scikit-learn's `make_moons`.
"""
from __future__ import annotations

import numpy as np

RECTANGLE_MIN_SIDE = 3  # a side of at least 3 pixels keeps an empty interior: every image is an outline


def rectangles(n: int, generator: np.random.Generator, size: int = 28, min_side: int = RECTANGLE_MIN_SIDE,
               min_gap: int = 3):
    """n binary images [n, 1, size, size] of rectangle outlines, labels [n] (1 = taller than wide).

    Van der Wilk, Rasmussen & Hensman 2017 classifies "the outline of a randomly generated rectangle" in a 28×28 image
    by whether it has larger width or length, with 1,200 training images: the `rectangles` set of Larochelle et al.
    (2007, "An empirical evaluation of deep architectures on problems with many factors of variation";
    1,000 training + 200 validation images). It is generated the way that set was: height and width
    uniform (integers in [min_side, size]), pairs whose difference is below `min_gap` pixels redrawn
    (Larochelle et al.: 3), then the top-left corner uniform over the positions that keep the whole
    rectangle inside the image (so some touch the edge). The outline is one pixel wide; pixels are 0 or 1.
    """
    if min_gap < 1 or min_gap > size - min_side:
        raise ValueError(f"min_gap={min_gap} must lie in [1, {size - min_side}] for sides in [{min_side}, {size}]")
    heights = np.empty(n, dtype=np.int64)
    widths = np.empty(n, dtype=np.int64)
    filled = 0
    while filled < n:  # rejection of near-squares (and squares, which have no label)
        h, w = generator.integers(min_side, size + 1, size=(2, n - filled))
        keep = np.abs(h - w) >= min_gap
        k = keep.sum()
        heights[filled : filled + k], widths[filled : filled + k] = h[keep], w[keep]
        filled += k
    top = generator.integers(0, size - heights + 1)  # [n], each below its own bound
    left = generator.integers(0, size - widths + 1)
    rows = np.arange(size)[None, :, None]  # [1, H, 1]
    cols = np.arange(size)[None, None, :]  # [1, 1, W]
    t, b = top[:, None, None], (top + heights - 1)[:, None, None]  # [n, 1, 1], inclusive edges
    l, r = left[:, None, None], (left + widths - 1)[:, None, None]
    inside = (rows >= t) & (rows <= b) & (cols >= l) & (cols <= r)  # [n, H, W]
    interior = (rows > t) & (rows < b) & (cols > l) & (cols < r)
    images = (inside & ~interior).astype(np.float64)[:, None]  # [n, 1, H, W]
    labels = (heights > widths).astype(np.int64)
    return images, labels


# The symmetric function: a fixed draw g from a GP with an RBF kernel (unit variance, lengthscale
# SYMMETRIC_LENGTHSCALE), made exactly invariant by summing over the swap orbit, f(x) = g(x) + g(x1↔x2) —
# the construction of van der Wilk et al. 2018 eq. 6 with the two-element orbit {identity, swap}. g is represented by
# random Fourier features drawn from a generator with a fixed seed, so the function is the same for
# every dataset seed: the seed only moves the sample points and the noise.
SYMMETRIC_DOMAIN = 3.0  # inputs uniform on [-3, 3]^2
SYMMETRIC_LENGTHSCALE = 1.0
_SYMMETRIC_FEATURES = 500
_SYMMETRIC_FUNCTION_SEED = 20180101


def symmetric_function(X: np.ndarray) -> np.ndarray:
    """f(X) for X [N, 2]; f(x1, x2) = f(x2, x1) exactly."""
    features = np.random.default_rng(_SYMMETRIC_FUNCTION_SEED)
    omega = features.normal(size=(2, _SYMMETRIC_FEATURES)) / SYMMETRIC_LENGTHSCALE  # [2, F]
    phase = features.uniform(0, 2 * np.pi, size=_SYMMETRIC_FEATURES)  # [F]
    weight = features.normal(size=_SYMMETRIC_FEATURES) * np.sqrt(2.0 / _SYMMETRIC_FEATURES)  # [F]

    def g(Z):
        return np.cos(Z @ omega + phase) @ weight  # [N]

    return g(X) + g(X[:, ::-1])


def symmetric_2d(n: int, generator: np.random.Generator, noise: float, one_sided: bool = False):
    """Inputs [n, 2] uniform on the square [-3, 3]^2 and noisy targets y = f(x) + noise·ε [n].

    Van der Wilk et al. 2018 shows the data of Fig. 2 without stating the function, the domain, the number of points
    or the noise; the choices here are documented at the module level. `one_sided=True` draws the points
    from the half x1 ≥ x2 only (folding the others across the diagonal): there only an invariant model
    can predict the other half, which is the figure's point taken to its limit.
    """
    X = generator.uniform(-SYMMETRIC_DOMAIN, SYMMETRIC_DOMAIN, size=(n, 2))
    if one_sided:
        X = np.stack([X.max(axis=1), X.min(axis=1)], axis=1)  # reflect each point into the half x1 ≥ x2
    y = symmetric_function(X) + noise * generator.normal(size=n)
    return X, y


def two_moons(n: int, generator: np.random.Generator, noise: float):
    """make_moons inputs [n, 2] on their raw scale (Zhang, Lee & Teh 2013 uses a σ = 0.25 Gaussian kernel on them),
    labels [n] (0 upper moon, 1 lower moon)."""
    from sklearn.datasets import make_moons  # imported here: scikit-learn takes a second to import

    X, y = make_moons(n_samples=n, noise=noise, random_state=int(generator.integers(2**31 - 1)))
    return X, y.astype(np.int64)
