"""A small table whose target is symmetric under swapping its two inputs and under flipping either's sign."""
from pathlib import Path

import numpy as np


def write_even_csv(folder: Path, n: int) -> Path:
    """FOLDER/even.csv: `n` points a, b uniform on [-3, 3], target y = cos(1.5 a) cos(1.5 b) + 0.05 noise (seed 1)."""
    rng = np.random.default_rng(1)
    X = rng.uniform(-3, 3, size=(n, 2))
    y = np.cos(1.5 * X[:, 0]) * np.cos(1.5 * X[:, 1]) + 0.05 * rng.normal(size=n)  # swap- and sign-symmetric
    path = Path(folder) / "even.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header="a,b,y", comments="")
    return path
