"""The order in which a `Trainer` visits its training points: a fresh random permutation each epoch, drawn from the
trainer's own generator, and the position in it. A checkpoint keeps both, so a run resumed mid-epoch takes the same
minibatches as one never stopped."""
from __future__ import annotations

import torch


class EpochOrder:
    """Minibatch indices for `n` training points, `batch` at a time (0, or at least `n`: the whole set each step);
    a new permutation of the `n` points from `generator` (a CPU `torch.Generator`) whenever fewer than `batch`
    are left in the current one."""

    def __init__(self, n: int, batch: int, generator: torch.Generator):
        self.n, self.batch, self.generator = int(n), int(batch), generator
        self.order = torch.empty(0, dtype=torch.long)  # this epoch's permutation of range(n)
        self.cursor = 0  # how many of it were used

    @property
    def whole(self) -> bool:
        """Whether each step takes the whole training set (no minibatches)."""
        return self.batch == 0 or self.batch >= self.n

    def next(self) -> torch.Tensor:
        """The next minibatch's indices, a CPU long tensor [batch]."""
        if self.cursor + self.batch > len(self.order):
            self.order = torch.randperm(self.n, generator=self.generator)
            self.cursor = 0
        idx = self.order[self.cursor:self.cursor + self.batch]
        self.cursor += self.batch
        return idx

    def state(self) -> dict:
        """{"order": tensor, "cursor": int}, what a checkpoint keeps."""
        return {"order": self.order, "cursor": self.cursor}

    def load(self, order: torch.Tensor | None, cursor: int) -> None:
        """Continue from a checkpoint's `order` (None: a fresh epoch) and `cursor`."""
        self.order = torch.empty(0, dtype=torch.long) if order is None else order.to("cpu", torch.long)
        self.cursor = int(cursor)
