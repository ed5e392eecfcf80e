"""The built-in likelihoods, registered through `invlab.likelihoods.register` as a plugin's are: Gaussian (regression,
and classification on one-hot targets), Bernoulli (two classes; probit or logit link), robust-max and softmax (any
number of classes). Each factory takes the registry's contract, the data's `task` and `num_classes`."""
from __future__ import annotations

from .bernoulli import Bernoulli
from .gaussian import Gaussian
from .registry import register
from .robustmax import RobustMax
from .softmax import Softmax


@register("gaussian", tasks=("regression", "classification"), suits=("regression",),
          options={"noise_variance": "noise_variance"}, builtin=True)
def gaussian(task: str, num_classes: int | None, noise_variance: float = 0.1) -> Gaussian:
    """N(y; f, σ²) with σ² starting at `noise_variance`; for classes, regression on one-hot targets."""
    return Gaussian(noise_variance, num_classes if task == "classification" else None)


@register("bernoulli", two_class=True, suits=("two_class",), builtin=True)
def bernoulli(task: str, num_classes: int | None) -> Bernoulli:
    """Two classes through the probit link (`Bernoulli("logit")` for the logistic one, in Python)."""
    return Bernoulli("probit")


@register("softmax", suits=("two_class", "multi_class"), builtin=True)
def softmax(task: str, num_classes: int | None) -> Softmax:
    """Softmax, its expectation by 16 Monte-Carlo samples (`Softmax(K, num_samples)` for another number)."""
    return Softmax(num_classes)


@register("robustmax", suits=("two_class", "multi_class"), options={"epsilon": "epsilon"}, builtin=True)
def robustmax(task: str, num_classes: int | None, epsilon: float = 1e-3) -> RobustMax:
    """The robust-max likelihood with label-noise rate ε."""
    return RobustMax(num_classes, epsilon)


__all__ = ["gaussian", "bernoulli", "softmax", "robustmax"]
