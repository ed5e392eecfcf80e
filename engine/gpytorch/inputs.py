"""Checks at the doors of `invlab.gpytorch`'s kernels and inducing helpers, deciding what GPyTorch's own kernels
decide for the same inputs (tests/gpytorch/test_bad_inputs.py compares them with `RBFKernel` side by side):

- dtypes: both inputs are computed in x1's dtype promoted with the kernel's parameters' dtype, as GPyTorch's
  `RBFKernel` does (it divides x by its lengthscale and centres x2 by x1's mean). Where x2 would lose precision
  in it (float32 parameters and x1, a float64 x2) GPyTorch fails deep in a matrix product; here the pair is
  refused naming both dtypes.
- widths: x1 and x2 have rows of the width the kernel's image or input shape says; a wrong one is named with the
  width expected (GPyTorch's own message names no width).
- values: NaN or inf in an input would make the covariance silently non-finite, so it is refused naming the input.
  One `isfinite` reduction over all inputs and one host sync per call; the checks never touch the autograd graph.
"""
from __future__ import annotations

import torch

from ..errors import DataError, ShapeError


def parameter_dtype(module: torch.nn.Module) -> torch.dtype:
    """The dtype of a module's floating-point parameters (the default dtype for a module without any)."""
    return next((p.dtype for p in module.parameters() if p.is_floating_point()), torch.get_default_dtype())


def width(x: torch.Tensor) -> int:
    """Values a row, as GPyTorch reads it (a 1-D input is N rows of one value)."""
    return x.shape[-1] if x.dim() > 1 else 1


def refuse_widths(owner: str, expected: int | None, takes: str, **inputs: torch.Tensor) -> None:
    """A `ShapeError` unless every named input has rows of `expected` values (of one width when `expected` is
    None); `takes` says in words what the owner takes, e.g. 'flattened 1×4×4 images (16 values a row)'."""
    widths = {name: width(x) for name, x in inputs.items()}
    if len(set(widths.values())) > 1:
        (a, wa), (b, wb) = list(widths.items())[:2]
        raise ShapeError(f"{owner}: {a} has rows of {wa} values and {b} rows of {wb}; both must be {takes}")
    for name, w in widths.items():
        if expected is not None and w != expected:
            raise ShapeError(f"{owner}: {name} has rows of {w} values; the kernel takes {takes}")


def common_dtype(owner: str, x1: torch.Tensor, x2: torch.Tensor, dtype: torch.dtype) -> torch.dtype:
    """The dtype both inputs are computed in with parameters of `dtype`: x1's promoted with the parameters', as in
    GPyTorch's stationary kernels (which centre x2 by x1's mean, so x2 takes x1's dtype). An x2 that would lose
    precision in it (float64 beside float32) fails in GPyTorch's kernels; here it is refused naming both dtypes."""
    target = torch.promote_types(x1.dtype, dtype)
    if torch.promote_types(x2.dtype, target) != target:
        wider = torch.promote_types(x2.dtype, target)
        raise DataError(f"{owner}: x1 is {x1.dtype} and x2 is {x2.dtype} (the kernel's parameters are {dtype}), so x2 "
                        f"would be computed in {target} and lose precision; GPyTorch's kernels refuse this pair too: "
                        f"give both inputs one dtype (x1.to({wider}) or x2.to({target}))")
    return target


def refuse_non_finite(owner: str, **inputs: torch.Tensor) -> None:
    """A `DataError` naming the first input that holds NaN or inf (one reduction and one sync for all of them)."""
    finite = [torch.isfinite(x.detach()).all() for x in inputs.values()]
    if bool(torch.stack(finite).all()):
        return
    name, x = next((n, x) for (n, x), ok in zip(inputs.items(), finite) if not ok)
    count = int((~torch.isfinite(x.detach())).sum())
    raise DataError(f"{owner}: {name} has non-finite values (NaN or inf): {count} of {x.numel()}; the covariances "
                    "would be NaN: remove or impute those values first")


def checked_pair(owner: str, x1: torch.Tensor, x2: torch.Tensor, dtype: torch.dtype, expected: int | None,
                 takes: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(x1, x2) checked (widths, dtypes, finite values) and in their common dtype; x2 stays x1 when it was x1."""
    same = x2 is x1
    inputs = {"x1": x1} if same else {"x1": x1, "x2": x2}
    refuse_widths(owner, expected, takes, **inputs)
    target = common_dtype(owner, x1, x2, dtype)
    refuse_non_finite(owner, **inputs)
    x1 = x1.to(target)
    return x1, x1 if same else x2.to(target)


__all__ = ["checked_pair", "common_dtype", "parameter_dtype", "refuse_non_finite", "refuse_widths", "width"]
