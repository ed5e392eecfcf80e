"""Is a run healthy? A verdict from its history and numerics, with one sentence on what to do.

`assess(history, numerics, ...)` looks at what the Trainer already records (the loss every `log_every` steps,
test metrics at each evaluation) and the model's `Numerics`, and returns a `Health`:

- **collapsed**: the test error is at chance (the error of always answering the most common class, or the RMSE
  of always answering the mean) after training has started, and either the family's condition number is ≈ 1
  (K_uu ≈ σ²I: the kernel sees every inducing input as unrelated to every other, e.g. inducing inputs turned to
  noise by too large a step) or the predictions are uniform (NLPD ≈ log K) although the run was better before.
  A fresh model is at chance too, with NLPD = log K exactly, so nothing is judged at step 0, and a model that
  has never left chance but whose loss keeps falling (a slow start) is not collapsed.
- **diverging**: the loss has risen steadily over the recent window.
- **converged**: the L-BFGS solve has converged (the Trainer says so, or the loss no longer changes).
- **stalled**: the loss has made no progress over a long window (≥ `STALL_STEPS` steps and a quarter of the
  run) at a learning rate that is not tiny, while the model has learned nothing (its test error is still at
  chance; without evaluations, the loss never moved). A run that learned and then levelled off has settled,
  which is fine: it stays ok (calling it stalled would alarm a lecturer about every long healthy run).
- **ok** otherwise.

Every check reads a few hundred numbers at most: cheap enough for every snapshot.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..errors import NumericalError
from ..models.base import Numerics
from .states import HealthState

STATES = tuple(HealthState)

IDENTITY_CONDITION = 1.01  # cond below this: the matrix is a multiple of the identity, to 1 %
CHANCE_MARGIN = 0.05  # an error within 5 % (relative) of chance counts as at chance ...
CHANCE_MARGIN_ABS = 0.02  # ... or within 2 points of it, whichever is wider
UNIFORM_NLPD = 0.02  # NLPD within 2 % of log K: the predictive distribution is uniform
BETTER_THAN_CHANCE = 0.8  # an earlier evaluation at or below 0.8 × chance was clearly better than chance
STALL_STEPS = 300  # the shortest window over which no progress means stalled
STALL_PROGRESS = 0.01  # "no progress": less than 1 % of what the run gained so far
TINY_LEARNING_RATE = 1e-4  # below this a flat loss is expected, not a stall
LARGE_LEARNING_RATE = 0.5  # at or above this (Adam) a stall is more likely overshooting than crawling
DIVERGE_POINTS = 9  # the fewest loss points a rising trend is judged on
CONVERGED_RTOL = 1e-9  # L-BFGS: successive losses equal to this relative tolerance


@dataclass(frozen=True)
class Health:
    """A run's health verdict: `state` ('ok', 'collapsed', 'stalled', 'converged' or 'diverging') and a one-sentence
    hint saying what it means and what to do."""
    state: str = HealthState.OK  # a HealthState: ok, collapsed, stalled, converged or diverging
    hint: str = ""  # one sentence for the page / CLI: what it means and what to do


def assess(history: Mapping[str, tuple[Sequence, Sequence]], numerics: Numerics | None, *, task: str,
           num_classes: int | None, optimizer: str, chance_error: float | None = None,
           learning_rate: float | None = None, converged: bool | None = None, own_loop: bool = False) -> Health:
    """The health of a run from its `history` (metric → (steps, values)) and its latest `numerics`.

    chance_error: the test error of the best constant answer (classification: 1 − the most common class's share;
    regression: the RMSE of the training mean), which the Trainer computes on its test subset; without it
    classification uses 1 − 1/K. learning_rate: the rate in use (for the stall check and the hints).
    converged: the Trainer's own verdict on an L-BFGS solve; None infers it from the loss. own_loop: the run is a
    loop the user wrote and trains in another process (`invlab.train.watch`), which the page only watches: the hints
    say what to change in that loop, not which of the page's buttons to press."""
    numerics = numerics if numerics is not None else Numerics()
    lr = f" (now {learning_rate:g})" if learning_rate is not None else ""
    there = " in your loop" if own_loop else ""
    restart = (" in your loop and start it again from a fresh model (this page only watches it)" if own_loop
               else " and press Reset")
    loss_steps, loss = _series(history, "loss")

    collapsed = _collapsed(history, numerics, task, num_classes, chance_error, loss)
    if collapsed is not None:
        return Health(HealthState.COLLAPSED, collapsed + f"; lower the learning rate{lr}{restart}.")

    rise = _rising(loss_steps, loss)
    if rise is not None:
        return Health(HealthState.DIVERGING, f"the loss has risen steadily over the last {rise} steps: the "
                                             f"optimiser is diverging; lower the learning rate{lr}{there}.")

    if converged or (converged is None and optimizer == "lbfgs" and _flat(loss)):
        return Health(HealthState.CONVERGED, "the L-BFGS solve has converged: more steps will not change the "
                                             f"answer; change a setting{there} to solve again.")

    if optimizer != "lbfgs" and (learning_rate is None or learning_rate >= TINY_LEARNING_RATE):
        window = _stalled(loss_steps, loss)
        if window is not None and _learned_nothing(history, task, num_classes, chance_error, loss):
            # a large step that bounces around is stuck as surely as a tiny one that barely moves
            change = "a smaller" if learning_rate is not None and learning_rate >= LARGE_LEARNING_RATE else "a larger"
            return Health(HealthState.STALLED, f"no progress in the last {window} steps and the test error is "
                                               f"still at chance: the optimiser is stuck; try {change} learning "
                                               f"rate{lr} or another model setting{there}.")
    return Health()


# -- the checks --------------------------------------------------------------------------------------------------------
def _series(history, name) -> tuple[np.ndarray, np.ndarray]:
    """(steps, values) of one metric after step 0, finite values only."""
    if name not in history:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    steps, values = history[name]
    steps, values = np.asarray(steps, dtype=np.int64), np.asarray(values, dtype=np.float64)
    keep = (steps > 0) & np.isfinite(values)
    return steps[keep], values[keep]


def _chance(task, num_classes, chance_error) -> float | None:
    """The error at chance: the Trainer's figure, else 1 − 1/K for K classes; None when unknown."""
    chance = chance_error
    if chance is None and task == "classification" and num_classes:
        chance = 1.0 - 1.0 / num_classes
    return chance if chance is not None and math.isfinite(chance) and chance > 0 else None


def _at_chance(errors: np.ndarray, chance: float) -> np.ndarray:
    return errors >= chance - max(CHANCE_MARGIN * chance, CHANCE_MARGIN_ABS)


def _collapsed(history, numerics: Numerics, task, num_classes, chance_error, loss) -> str | None:
    classification = task == "classification"
    metric = "test_error" if classification else "test_rmse"
    steps, errors = _series(history, metric)
    if errors.size == 0:
        return None  # no evaluation since training started: a fresh model is at chance by construction
    chance = _chance(task, num_classes, chance_error)
    if chance is None:
        return None
    at_chance = _at_chance(errors, chance)
    if not at_chance[-1]:
        return None
    shown = f"{100 * errors[-1]:.0f} %" if classification else f"RMSE {errors[-1]:.3g}"
    cond = numerics.condition
    if math.isfinite(cond) and cond < IDENTITY_CONDITION and numerics.extra.get("inducing", 2) > 1:
        name = numerics.condition_of or "K_uu"
        return (f"test error at chance ({shown}) and {name} ≈ identity (condition {cond:.2f}): the kernel sees no "
                f"similarity between its inducing inputs any more, so the model forgot the data")
    # no identity: collapsed only if the predictions are uninformative now although the run did better before
    if not (at_chance[-2:].all() and errors.size >= 2 and _uniform(history, task, num_classes, chance, n=2)):
        return None
    earlier_better = bool((errors[:-2] <= BETTER_THAN_CHANCE * chance).any())
    if not (earlier_better or _worse_than_best(loss)):
        return None
    what = "uniform predictions (NLPD ≈ log K)" if classification else "the mean for every input"
    return f"test error back at chance ({shown}) with {what}: the model collapsed"


def _uniform(history, task, num_classes, chance: float, n: int) -> bool:
    """The last `n` evaluations predicted nothing: test NLPDs of a uniform prediction over K classes (log K), or
    (regression) an RMSE within 1 % of the training mean's."""
    if task != "classification":
        _, rmse = _series(history, "test_rmse")
        return rmse.size >= n and bool((rmse[-n:] >= 0.99 * chance).all())
    if not num_classes or num_classes < 2:
        return False
    _, nlpd = _series(history, "test_nlpd")
    if nlpd.size < n:
        return False
    return bool((np.abs(nlpd[-n:] - math.log(num_classes)) <= UNIFORM_NLPD * math.log(num_classes)).all())


def _worse_than_best(loss: np.ndarray) -> bool:
    """The recent loss is far above the best the run reached (it un-learned): by more than half the best's size."""
    if loss.size < 4:
        return False
    recent = float(np.median(loss[-max(3, loss.size // 5):]))
    best = float(loss.min())
    return recent - best > 0.5 * max(abs(best), 1e-9)


def _rising(steps: np.ndarray, loss: np.ndarray) -> int | None:
    """Steps over which the loss rose steadily (three block medians increasing, by a clear part of the run's range)."""
    if loss.size < DIVERGE_POINTS:
        return None
    n = min(max(DIVERGE_POINTS, loss.size // 3), 60)
    window, wsteps = loss[-n:], steps[-n:]
    blocks = np.array_split(window, 3)
    m = [float(np.median(b)) for b in blocks]
    span = float(loss.max() - loss.min())
    if not (m[0] < m[1] < m[2]) or span <= 0:
        return None
    rise = m[2] - m[0]
    scale = max(span, 1e-9 * max(abs(m[0]), 1.0))
    if rise < 0.2 * scale or window[-1] <= window[0]:
        return None
    return int(wsteps[-1] - wsteps[0])


def _flat(loss: np.ndarray) -> bool:
    """The last three losses agree to `CONVERGED_RTOL` (a deterministic full-batch objective that stopped moving)."""
    if loss.size < 3:
        return False
    last = loss[-3:]
    return float(last.max() - last.min()) <= CONVERGED_RTOL * max(abs(float(last[-1])), 1.0)


def _learned_nothing(history, task, num_classes, chance_error, loss: np.ndarray) -> bool:
    """The latest test error is at chance; without evaluations, the loss never moved from where it started."""
    metric = "test_error" if task == "classification" else "test_rmse"
    _, errors = _series(history, metric)
    chance = _chance(task, num_classes, chance_error)
    if errors.size and chance is not None:
        return bool(_at_chance(errors[-1:], chance)[0])
    return loss.size > 0 and float(loss[0] - loss.min()) <= STALL_PROGRESS * max(abs(float(loss[0])), 1.0)


def _stalled(steps: np.ndarray, loss: np.ndarray) -> int | None:
    """The window (in steps) over which the loss gained less than `STALL_PROGRESS` of the run's gain so far."""
    if loss.size < 12 or steps.size == 0:
        return None
    last = int(steps[-1])
    length = max(STALL_STEPS, last // 4)
    inside = steps >= last - length
    if inside.all() or inside.sum() < 12:  # the window must start after the run's first logged loss
        return None
    window = loss[inside]
    q = max(3, window.size // 4)
    progress = float(np.median(window[:q]) - np.median(window[-q:]))
    gained = float(loss[0] - loss.min())
    tolerance = max(STALL_PROGRESS * gained, 1e-9 * max(abs(float(loss[-1])), 1.0))
    if progress > tolerance:
        return None
    return int(steps[-1] - steps[inside][0])



# -- a kernel at fault -------------------------------------------------------------------------------------------------
PROBE_POINTS = 8  # training inputs a suspect kernel is evaluated on


def kernel_fault(module, X, when: str, params=None) -> str | None:
    """Why a loss (or a build) was not finite when a kernel the user brought (a plugin's or their own code's, not the
    lab's) is to blame: its K() or K_diag() gives NaN or inf on a few finite training inputs `X` with the current,
    finite hyper-parameters of `module` (a model, or the kernel itself). One sentence naming the kernel, where it came
    from and what to check; None when every such kernel is finite there, so the usual causes (learning rate, jitter)
    stand. when: 'at step 3', 'while the model was built'. params: the model's config, whose `kernel` (the chosen
    kernel's name) names a kernel built by a registered factory function."""
    import torch

    from ..kernels import REGISTRY, Kernel

    if any(not bool(torch.isfinite(p).all()) for p in module.parameters()):
        return None  # diverged hyper-parameters make any kernel non-finite: not the kernel's fault
    lab = Kernel.__module__.split(".")[0] + "."
    X = X[:PROBE_POINTS].reshape(min(len(X), PROBE_POINTS), -1)
    if X.shape[0] == 0 or not bool(torch.isfinite(X).all()):
        return None
    for kernel in module.modules():
        if not isinstance(kernel, Kernel) or type(kernel).__module__.startswith(lab):
            continue
        bad = _non_finite_output(kernel, X)
        if bad is not None:
            kinds, which = bad
            who = _describe(kernel, REGISTRY, getattr(params, "kernel", None))
            return (f"{who} returned non-finite values ({kinds}) from {which} for finite inputs {when}; check its "
                    f"{which}: the learning rate is not the cause")
    return None


@contextlib.contextmanager
def kernel_blamed_in_build(params, X):
    """Around a model's build: a NumericalError there (e.g. a Cholesky of a NaN Gram matrix, said to be diverged
    hyper-parameters) becomes one naming the configured kernel when that kernel, built alone from `params`, is not
    finite on the training inputs `X`."""
    try:
        yield
    except NumericalError as err:
        from ..kernels import REGISTRY

        name = getattr(params, "kernel", None)
        part = REGISTRY.parts.get(name) if isinstance(name, str) else None
        if part is None or part.builtin:
            raise
        try:
            kernel = REGISTRY.build(name, X[0].numel(), **REGISTRY.options_of(name, params))
        except Exception:  # noqa: BLE001 - it cannot be built alone: the original error stands
            raise err from None
        fault = kernel_fault(kernel, X, "while the model was built", params)
        if fault is None:
            raise
        raise NumericalError(f"{fault}.") from err


def _non_finite_output(kernel, X) -> tuple[str, str] | None:
    """('NaN', 'K()') and the like when `kernel` is not finite on `X` (or on windows of it as wide as it takes)."""
    import torch

    dim = getattr(kernel, "input_dim", None)
    if isinstance(dim, int) and 0 < dim != X.shape[1]:  # e.g. a patch kernel: windows of the inputs' own values
        flat = X.reshape(-1)
        n = min(X.shape[0], flat.numel() // dim)
        X = flat[: n * dim].reshape(n, dim)
    try:
        with torch.no_grad():
            outputs = (("K()", kernel.K(X)), ("K_diag()", kernel.K_diag(X)))
    except Exception:  # noqa: BLE001 - inputs it does not take (shape, type): it cannot be judged here
        return None
    for which, out in outputs:
        out = torch.as_tensor(out)
        if not bool(torch.isfinite(out).all()):
            kinds = [k for k, has in (("NaN", torch.isnan(out).any()), ("inf", torch.isinf(out).any())) if bool(has)]
            return " and ".join(kinds), which
    return None


def _describe(kernel, registry, kernel_name: str | None) -> str:
    """"the kernel 'name' (plugin p (package), class module.Class)", or the class alone when it is not registered."""
    cls = f"{type(kernel).__module__}.{type(kernel).__qualname__}"
    part = next((p for p in registry.parts.values() if p.factory is type(kernel)), None)
    if part is None and kernel_name in registry.parts and not registry.parts[kernel_name].builtin:
        part = registry.parts[kernel_name]  # built by a registered factory function
    if part is None:
        return f"the kernel {cls}"
    origin = part.origin if part.origin.startswith("plugin ") else f"registered in {part.origin}"
    return f"the kernel {part.name!r} ({origin}, class {cls})"
