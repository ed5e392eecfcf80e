"""L-BFGS for the convex objective J of eq. 4 (sec. 5): `torch.optim.LBFGS` with a strong-Wolfe line search, either
one call with torch's own stopping rules, or one iteration per call with every iterate's parts recorded."""
from __future__ import annotations

import math
from typing import Callable

import torch

Objective = Callable[[], torch.Tensor]


def closure_of(optimizer: torch.optim.Optimizer, objective: Objective) -> Callable[[], torch.Tensor]:
    """What L-BFGS re-evaluates during its line search: J and its gradient."""

    def closure():
        optimizer.zero_grad(set_to_none=True)
        J = objective()
        J.backward()
        return J

    return closure


def minimise(objective: Objective, params: list[torch.Tensor], *, max_iter: int, tolerance_change: float,
             history_size: int = 50) -> None:
    """One L-BFGS call of up to `max_iter` iterations with torch's own stopping rules (least overhead)."""
    opt = torch.optim.LBFGS(params, lr=1.0, max_iter=max_iter, max_eval=2 * max_iter, history_size=history_size,
                            line_search_fn="strong_wolfe", tolerance_grad=1e-10, tolerance_change=tolerance_change)
    opt.step(closure_of(opt, objective))


def minimise_recorded(objective: Objective, parts: Callable[[], dict[str, torch.Tensor]], params: list[torch.Tensor],
                      trace: list[dict[str, float]], *, max_iter: int, tol: float, history_size: int = 50) -> None:
    """One L-BFGS iteration per call, each iterate's `parts` (and their sum, "objective") appended to `trace`; stops
    when J changes by < tol·max(1, |J|) twice running, or is not finite."""
    # max_eval bounds the line search too (torch defaults it to 1.25·max_iter, i.e. 1: no line search at all)
    opt = torch.optim.LBFGS(params, lr=1.0, max_iter=1, max_eval=40, history_size=history_size,
                            line_search_fn="strong_wolfe", tolerance_grad=1e-12, tolerance_change=1e-16)
    closure = closure_of(opt, objective)

    def record() -> float:
        with torch.no_grad():
            values = {k: float(v) for k, v in parts().items()}
        values["objective"] = sum(values.values())
        trace.append(values)
        return values["objective"]

    prev, calm = record(), 0
    for _ in range(max_iter):
        opt.step(closure)
        J = record()
        calm = calm + 1 if abs(prev - J) <= tol * max(1.0, abs(J)) else 0
        if calm >= 2 or not math.isfinite(J):
            break
        prev = J
