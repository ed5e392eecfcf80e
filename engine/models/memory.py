"""What a model family asks of memory, estimated from its configuration before anything is built
(`ModelSpec.memory`): a server checks a page's run against its limits with it (invlab.dashboard.serving.limits).

`ModelSizes` holds what the data and the training setup fix; a family's estimate returns the number of floats its
model holds at once while training (its parameters with their gradients and the optimiser's state, its largest
covariance matrices, one minibatch's cross-covariances). The data's own arrays are counted by the caller.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelSizes:
    """The sizes a family's memory estimate reads: training points, numbers per input (C·H·W for images), latent
    functions (classes; 1 for regression), inducing points M (already clamped to the training points) and the
    minibatch size."""

    train_points: int
    dims: int
    classes: int
    inducing: int
    batch: int


def variational_memory(model_config: dict, sizes: ModelSizes) -> int:
    """Floats an SVGP-like model holds while training: q(u)'s square root with its gradient and Adam's two moments
    (4·L·M²), K_uu with its Cholesky factor and a solve (3·M²), the inducing inputs with gradient and Adam state
    (4·M·D_z) and one minibatch's cross-covariances with their gradients over its orbit samples or patches
    (3·B·max(S, P)·M). The orbit's samples S and the patches P are read from the config (`num_samples`,
    `patch_size`, `stride`) when it has them."""
    M, L, dims, batch = sizes.inducing, sizes.classes, sizes.dims, sizes.batch
    samples = int(model_config.get("num_samples", 1) or 1)
    side = math.isqrt(dims) if dims > 2 else 1
    patch, stride = int(model_config.get("patch_size", 0) or 0), int(model_config.get("stride", 1) or 1)
    patches = ((max(side - patch, 0) // stride) + 1) ** 2 if patch else 1
    z_dims = patch * patch if patch else dims
    return 4 * L * M * M + 3 * M * M + 4 * M * z_dims + 3 * batch * max(samples, patches) * M


__all__ = ["ModelSizes", "variational_memory"]
