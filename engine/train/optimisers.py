"""The optimisers a `Trainer` steps with, and how it tells that an L-BFGS solve is done.

Adam for the variational families; for the RKHS family, torch's L-BFGS in full batch (20 inner iterations a step,
a history of 20, a strong-Wolfe line search) on the regularised risk over the representer expansion (eq. 3–4 of
Zhang, Lee & Teh, "Learning with Invariance via Linear Functionals on Reproducing Kernel Hilbert Space", NIPS
2013)."""
from __future__ import annotations

import torch


def make_optimizer(name: str, parameters, lr: float) -> torch.optim.Optimizer:
    """Optimiser `name` ("adam" or "lbfgs") over `parameters` with learning rate `lr`."""
    parameters = list(parameters)
    if name == "lbfgs":
        return torch.optim.LBFGS(parameters, lr=lr, max_iter=20, history_size=20, line_search_fn="strong_wolfe")
    return torch.optim.Adam(parameters, lr=lr)


def lbfgs_counters(optimizer: torch.optim.LBFGS) -> dict:
    """The dict in which torch's L-BFGS counts its iterations ("n_iter") and loss evaluations ("func_evals")."""
    return optimizer.state[optimizer.param_groups[0]["params"][0]]


def lbfgs_solve_converged(optimizer: torch.optim.LBFGS, before: tuple[int, int, float | None], loss: float) -> bool:
    """Whether the L-BFGS step just taken ended its solve on a tolerance. `before`: the counters' (n_iter,
    func_evals) and the loss before the step. Torch stops an inner loop early (fewer iterations and evaluations
    than allowed) only when the gradient, the step or the loss change is below its tolerance; a loss that did not
    change from the last step counts too."""
    group, counters = optimizer.param_groups[0], lbfgs_counters(optimizer)
    iters, evals = counters.get("n_iter", 0) - before[0], counters.get("func_evals", 0) - before[1]
    if iters < group["max_iter"] and evals < group["max_eval"]:
        return True
    previous = before[2]
    return previous is not None and abs(loss - previous) <= 1e-12 * max(abs(loss), 1.0)


def lbfgs_step(optimizer: torch.optim.LBFGS, closure, loss_before: float | None):
    """One step of torch's L-BFGS (up to `max_iter` inner iterations). `closure()` zeroes the gradients, computes the
    loss, back-propagates it and returns its terms (anything with a scalar tensor `loss`); `loss_before` is the last
    step's loss. Returns (the terms of the last evaluation, whether the solve has converged:
    `lbfgs_solve_converged`)."""
    counters = lbfgs_counters(optimizer)
    before = (counters.get("n_iter", 0), counters.get("func_evals", 0), loss_before)
    holder = {}

    def loss():
        holder["terms"] = terms = closure()
        return terms.loss

    optimizer.step(loss)
    terms = holder["terms"]
    return terms, lbfgs_solve_converged(optimizer, before, float(terms.loss.detach()))
