"""A `Spectrum` view against the matrix it claims to show: numpy's eigenvalues of that matrix, ascending."""
from __future__ import annotations

import numpy as np


def assert_spectrum_of(values, matrix, rtol: float = 1e-9) -> None:
    """`values` are the eigenvalues of the symmetric `matrix` (numpy array or tensor on any device), ascending, to
    `rtol` × the largest (rounding-sized negative eigenvalues may be shown as 0)."""
    values = np.asarray(values, dtype=np.float64)
    if hasattr(matrix, "detach"):  # a tensor on any device and dtype
        matrix = matrix.detach().cpu().double().numpy()
    M = np.asarray(matrix, dtype=np.float64)
    assert M.ndim == 2 and M.shape[0] == M.shape[1], M.shape
    ref = np.linalg.eigvalsh(0.5 * (M + M.T))
    assert values.shape == ref.shape, (values.shape, ref.shape)
    assert (np.diff(values) >= 0).all(), "the spectrum is not sorted ascending"
    atol = rtol * max(float(np.abs(ref).max()), 1e-300)
    assert np.allclose(values, ref, rtol=0.0, atol=atol), (values, ref)
