"""Which training points are labelled, and the targets the data loss ℓ₁ compares f with (Zhang, Lee & Teh 2013, sec.
5–6)."""
from __future__ import annotations

import torch
from torch import nn

from ...errors import ConfigError


def choose_labelled(y: torch.Tensor, count: int, task: str, num_classes: int | None,
                    generator: torch.Generator | None) -> torch.Tensor:
    """Indices of `count` labelled points: round-robin over the classes in a random order (so 2 on two classes is
    one per class), or a random subset for regression; count = 0 (or ≥ N) labels every point."""
    N = y.shape[0]
    if count == 0 or count >= N:
        return torch.arange(N)
    perm = torch.randperm(N, generator=generator)
    if task != "classification":
        return perm[:count].sort().values
    K = int(num_classes)
    if count < K:
        raise ConfigError(f"labelled={count} is fewer than the {K} classes; label at least one point per class")
    pools = [perm[y[perm] == c].tolist() for c in range(K)]
    order = torch.randperm(K, generator=generator).tolist()
    picked: list[int] = []
    while len(picked) < count:
        for c in order:
            if pools[c] and len(picked) < count:
                picked.append(pools[c].pop(0))
        if not any(pools):
            break
    return torch.tensor(sorted(picked), dtype=torch.long)


def encode_targets(y: torch.Tensor, task: str, num_classes: int | None,
                   dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """(labels [N] long, targets [N, C]) for labels y [N].

    Classification: y ∈ {−1, +1} in one column for two classes, one-vs-rest ±1 columns for more; the labels are the
    class indices. Regression: the targets themselves in one column; the labels are zeros."""
    if task != "classification":
        return torch.zeros_like(y, dtype=torch.long), y.to(dtype)[:, None]
    K = int(num_classes or 0)
    if K < 2:
        raise ConfigError(f"classification needs num_classes ≥ 2, got {num_classes}")
    y = y.long()
    if K == 2:
        return y, (2.0 * y.to(dtype) - 1.0)[:, None]
    return y, 2.0 * nn.functional.one_hot(y, K).to(dtype) - 1.0
