"""What a `Trainer` falls back on when a step goes wrong: the last good state of its model and optimiser
(`LastGoodState`, the part a trainer holds as `trainer.good`), the one-sync finiteness check of a step, and the
error that says what was not finite and what to do (`non_finite_error`).

A step whose loss or gradient is not finite applies no update: the model stays at (or goes back to) its last good
state and training can continue from there with a lower learning rate or more jitter."""
from __future__ import annotations

import copy

import torch

from ..errors import NonFiniteLossError
from .health import kernel_fault


class LastGoodState:
    """A copy of `model`'s and `optimizer`'s state (torch state dicts) and the step count it belongs to."""

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, step: int = 0):
        self.model, self.optimizer = model, optimizer
        self.capture(step)

    def capture(self, step: int) -> None:
        """Keep the current state as the last good one, at `step`."""
        self.state = ({k: v.detach().clone() for k, v in self.model.state_dict().items()},
                      copy.deepcopy(self.optimizer.state_dict()), int(step))

    def restore(self) -> int:
        """Put the kept state back into the model and optimiser; returns its step."""
        model_state, optimizer_state, step = self.state
        self.model.load_state_dict(model_state)
        self.optimizer.load_state_dict(copy.deepcopy(optimizer_state))
        return step


def all_finite(loss: torch.Tensor | None, parameters, with_grads: bool) -> bool:
    """Whether `loss` (if given), every tensor of `parameters` and, with `with_grads`, their gradients are finite;
    one host sync."""
    checks = [] if loss is None else [torch.isfinite(loss).all()]
    for p in parameters:
        checks.append(torch.isfinite(p).all())
        if with_grads and p.grad is not None:
            checks.append(torch.isfinite(p.grad).all())
    return bool(torch.stack(checks).all())


def non_finite_error(model, X: torch.Tensor, params, terms, attempted: int, step: int, lr: float,
                     cause: Exception | None = None) -> NonFiniteLossError:
    """The `NonFiniteLossError` for step `attempted` of `model` (trained on `X` with hyper-parameters `params`), whose
    loss `terms` (None when the loss itself raised `cause`) were not finite, the model now at `step` and the
    learning rate `lr`: it names the parts that were not finite, or a user's kernel that is not finite on finite
    inputs (then `kernel_fault` is True), and says what to do."""
    bad = [k for k, v in terms.parts.items() if not bool(torch.isfinite(v).all())] if terms is not None else []
    what = f" ({', '.join(bad)} not finite)" if bad else (f" ({cause})" if cause is not None else "")
    # a user's kernel that is not finite on finite inputs is the cause, not the hyper-parameters: say so
    fault = kernel_fault(model, X, f"at step {attempted}", params)
    msg = (f"{fault}. No update was applied; the model is at step {step}, its last good state."
           if fault is not None else
           f"step {attempted} produced a non-finite loss or gradient{what}; no update was applied and the model "
           f"is at step {step}, its last good state. Lower the learning rate (now {lr:g}) or raise the jitter, then "
           "continue.")
    error = NonFiniteLossError(msg)
    error.kernel_fault = fault is not None
    return error
