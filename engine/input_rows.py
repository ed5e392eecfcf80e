"""The rows a vector hyper-parameter gives the hyper-parameter table: an ARD lengthscale (one value per input) is
shown input by input, each by its input's own name (a table's column, "x₁" for unnamed inputs), and summarised when
there are many (its mean, and the shortest and longest lengthscale by input: a short lengthscale marks an input the
function changes fast along); any other vector by its mean."""
from __future__ import annotations

import math

ROWS_PER_INPUT = 12  # an ARD lengthscale over at most this many inputs is shown input by input; more: a summary
_SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def input_names(info, count: int) -> list[str] | None:
    """One name per input of the data `info` (a model's `DataInfo`) describes, when it has `count` inputs: a table's
    columns, "x₁", "x₂" … for unnamed vectors, "row r, column c" (with the channel for colour) for image pixels;
    None when the data has another number of inputs (e.g. a patch kernel's lengthscale)."""
    names = getattr(info, "input_names", None)
    if names and len(names) == count:
        names = [str(n) for n in names]
        if len(set(names)) < count:  # a name given twice still gets a row of its own
            names = [f"{n} (column {i + 1})" for i, n in enumerate(names)]
        return names
    shape = tuple(getattr(info, "input_shape", None) or ())
    if not shape or math.prod(shape) != count:
        return None
    if len(shape) == 1:
        return [f"x{str(i + 1).translate(_SUBSCRIPTS)}" for i in range(count)]
    C, H, W = shape if len(shape) == 3 else (1, *shape[-2:])
    colour = ["red", "green", "blue"] if C == 3 else [f"channel {c + 1}" for c in range(C)]
    return [f"pixel at row {h + 1}, column {w + 1}" + (f", {colour[c]}" if C > 1 else "")
            for c in range(C) for h in range(H) for w in range(W)]


def vector_rows(name: str, values, info) -> dict[str, float]:
    """The table's rows for the vector parameter `name` with `values` [n] (see the module's docstring)."""
    values = [float(v) for v in values]
    n = len(values)
    mean = sum(values) / n if n else float("nan")
    inputs = input_names(info, n) if name.rpartition(".")[2] == "lengthscale" else None
    if inputs is None:
        return {f"{name} (mean of {n})": mean}
    if n <= ROWS_PER_INPUT:
        return {f"{name} ({column})": v for column, v in zip(inputs, values)}
    short, long = values.index(min(values)), values.index(max(values))
    return {f"{name} (mean of {n})": mean, f"{name} (shortest: {inputs[short]})": values[short],
            f"{name} (longest: {inputs[long]})": values[long]}


__all__ = ["ROWS_PER_INPUT", "input_names", "vector_rows"]
