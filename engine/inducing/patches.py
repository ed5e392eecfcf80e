"""Inducing patches and block inducing variables (van der Wilk, Rasmussen & Hensman 2017: sec. 3.1, 3.3, 3.4 and
appendix C).

- `InducingPatches`: u = g(Z) at M patches Z `[M, E]`, in the input space of the patch-response function g
  (inter-domain inducing variables, eq. 15–16).
- `SharedInducingPatches`: the multi-channel kernel's C·M inducing outputs u_c = g_c(Z), one block per channel,
  at M patches shared by the channels (eq. 23, app. C.1).
- `InducingBlocks`: independent blocks, one per part of a `Sum` kernel — e.g. inducing images for the RBF part
  and inducing patches for the convolutional part (sec. 3.3).

Every inducing variable here has `block_sizes`: the sizes of the blocks of K_uu, which is block diagonal because
the blocks are independent in the prior. The model uses them to factorise K_uu block by block and to offer a
q(u) that is independent across blocks ("mean-field" in the paper).
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from ..errors import ShapeError
from .points import InducingVariables, InterDomainPoints


class InducingPatches(InterDomainPoints):
    """u = g(Z) at learnable inducing patches Z `[M, E]`; `patch_shape` (C, h, w) says how to draw one."""

    def __init__(self, Z, patch_shape: tuple[int, int, int] | None = None, learnable: bool = True):
        super().__init__(Z, learnable=learnable)
        E = self.Z.shape[1]
        self.patch_shape = tuple(patch_shape) if patch_shape is not None else (1, 1, E)
        if self.patch_shape[0] * self.patch_shape[1] * self.patch_shape[2] != E:
            raise ShapeError(f"patch_shape {self.patch_shape} does not hold inducing patches of size E={E}")

    @property
    def num_patches(self) -> int:
        """M, the number of inducing patches."""
        return self.Z.shape[0]

    @property
    def block_sizes(self) -> tuple[int, ...]:
        """The sizes of the independent blocks of u: one block of M."""
        return (self.num_inducing,)


class SharedInducingPatches(InducingPatches):
    """C·M inducing outputs u_c = g_c(Z), c = 1..C, at M patches Z shared by the C functions g_c."""

    def __init__(self, Z, num_outputs: int, patch_shape=None, learnable: bool = True):
        super().__init__(Z, patch_shape, learnable)
        if num_outputs < 1:
            raise ShapeError(f"num_outputs must be at least 1, got {num_outputs}")
        self.num_outputs = int(num_outputs)

    @property
    def num_inducing(self) -> int:
        """C·M, the number of inducing outputs (M patches for each of the C functions)."""
        return self.num_outputs * self.Z.shape[0]

    @property
    def block_sizes(self):
        """The sizes of the independent blocks of u: C blocks of M, one per function g_c."""
        return (self.Z.shape[0],) * self.num_outputs


class InducingBlocks(InducingVariables):
    """u = (u_1, …, u_B): independent blocks, block i paired with part i of a `Sum` kernel."""

    def __init__(self, blocks: list[InducingVariables]):
        super().__init__()
        if not blocks:
            raise ShapeError("InducingBlocks needs at least one block")
        self.blocks = nn.ModuleList(blocks)

    @property
    def num_inducing(self) -> int:
        """The total number of inducing outputs over all blocks."""
        return sum(b.num_inducing for b in self.blocks)

    @property
    def block_sizes(self) -> tuple[int, ...]:
        """The sizes of the independent blocks of u, block by block (a block that is itself blocked contributes each of
        its own)."""
        return tuple(s for b in self.blocks for s in block_sizes(b))

    @property
    def frozen(self) -> bool:
        """Whether every block's locations are frozen (not learned); setting it freezes or frees them all."""
        return all(getattr(b, "frozen", False) for b in self.blocks)

    @frozen.setter
    def frozen(self, flag: bool) -> None:
        for b in self.blocks:
            b.frozen = flag


def block_sizes(inducing: InducingVariables) -> tuple[int, ...]:
    """Sizes of the diagonal blocks of K_uu (one block for plain inducing points)."""
    return tuple(getattr(inducing, "block_sizes", (inducing.num_inducing,)))


@torch.no_grad()
def initial_patches(X: torch.Tensor, M: int, patches: Callable[[torch.Tensor], torch.Tensor],
                    generator: torch.Generator | None = None, *, init: str = "data", max_images: int = 500
                    ) -> torch.Tensor:
    """M inducing patches `[M, E]`: distinct patches of the training images, or uniform noise (van der Wilk, Rasmussen &
    Hensman 2017 sec. 3.1).

    `patches` maps images `[n, C, H, W]` to their patches `[n, P, E]`. With init='data', M patches are drawn
    uniformly from the distinct patches of up to `max_images` training images (so the all-zero background
    patch counts once, however common it is); if there are fewer than M distinct patches, the rest are copies
    with a little noise. With init='noise', patches are uniform over the range of the pixel values.
    """
    if M < 1:
        raise ShapeError(f"asked for M={M} inducing patches; M must be at least 1")
    idx = torch.randperm(X.shape[0], generator=generator)[:max_images]
    U = patches(X[idx])
    U = U.reshape(-1, U.shape[-1])  # [n·P, E]
    lo, hi = float(U.min()), float(U.max())
    if init == "noise":
        return lo + (hi - lo) * torch.rand(M, U.shape[1], generator=generator, dtype=X.dtype).to(X.device)
    if init != "data":
        raise ShapeError(f"unknown inducing patch initialisation {init!r}; choose 'data' or 'noise'")
    distinct = torch.unique(U, dim=0)
    chosen = distinct[torch.randperm(distinct.shape[0], generator=generator)[:M].to(X.device)]
    if chosen.shape[0] < M:  # a tiny data set (e.g. binary images with few distinct 3×3 patches)
        extra = chosen[torch.randint(chosen.shape[0], (M - chosen.shape[0],), generator=generator).to(X.device)]
        noise = 0.05 * max(hi - lo, 1e-3) * torch.randn(extra.shape, generator=generator, dtype=X.dtype).to(X.device)
        chosen = torch.cat([chosen, extra + noise])
    return chosen
