"""Distances between inputs that set a kernel's scale from the data."""
from __future__ import annotations

import torch


def median_distance(X: torch.Tensor, max_points: int = 500) -> float:
    """The median Euclidean distance between distinct pairs of the first `max_points` inputs X [N, ...] (flattened):
    the usual initial lengthscale. At least 1e-3; 1.0 with fewer than two inputs."""
    X = X.reshape(X.shape[0], -1)[:max_points]
    d = torch.cdist(X, X)
    d = d[torch.triu(torch.ones_like(d, dtype=torch.bool), diagonal=1)]
    return max(float(d.median()), 1e-3) if d.numel() else 1.0
