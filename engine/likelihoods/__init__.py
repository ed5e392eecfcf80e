"""Likelihoods: Gaussian (closed form), Bernoulli and robust-max (composite Gauss–Legendre, `quadrature`), softmax
(Monte Carlo); calibration measures of class probabilities (`calibration`)."""
from ..errors import ConfigError
from .base import Likelihood
from .bernoulli import Bernoulli
from .calibration import expected_calibration_error
from .gaussian import Gaussian
from .quadrature import gauss_hermite_expectation, hermgauss, prob_is_largest
from .robustmax import RobustMax
from .softmax import Softmax

LIKELIHOODS = ("auto", "gaussian", "bernoulli", "softmax", "robustmax")

__all__ = ["Likelihood", "Gaussian", "Bernoulli", "Softmax", "RobustMax", "build_likelihood", "resolve_likelihood",
           "LIKELIHOODS", "gauss_hermite_expectation", "hermgauss", "prob_is_largest", "expected_calibration_error"]


def build_likelihood(name: str, task: str, num_classes: int | None, *, noise_variance: float = 0.1,
                     epsilon: float = 1e-3, link: str = "probit", num_samples: int = 16) -> Likelihood:
    """The likelihood a config names for a dataset's task; `auto` is Gaussian for regression,
    Bernoulli for two classes and robust-max for more (see `resolve_likelihood`)."""
    name = resolve_likelihood(name, task, num_classes)
    if name == "gaussian":
        return Gaussian(noise_variance, num_classes if task == "classification" else None)
    if name == "bernoulli":
        return Bernoulli(link)
    if name == "softmax":
        return Softmax(num_classes, num_samples)
    if name == "robustmax":
        return RobustMax(num_classes, epsilon)
    raise ConfigError(f"unknown likelihood {name!r}; choose one of {', '.join(LIKELIHOODS)}")


# the classification likelihoods that take exactly two classes; the others take any number (Gaussian: one-hot targets)
TWO_CLASS = ("bernoulli", "polya_gamma")
# `auto`'s order of preference when a family gives no `allowed`
DEFAULT_PREFERENCE = ("gaussian", "bernoulli", "robustmax", "softmax")


def resolve_likelihood(name: str, task: str, num_classes: int | None, *, allowed=None) -> str:
    """The likelihood `name` stands for on a dataset, checked against the task: the one place `auto` is resolved.

    `allowed` are the names a family offers (its config's choices), in order of preference for `auto`; None:
    gaussian, bernoulli, robustmax, softmax. `auto` is Gaussian for regression; for classification it is the first
    allowed classification likelihood that takes this many classes (Bernoulli or Pólya-Gamma only take two), and
    Gaussian on one-hot targets when none does."""
    choices = DEFAULT_PREFERENCE if allowed is None else tuple(a for a in allowed if a != "auto")
    if name == "auto":
        if task == "regression":
            return "gaussian"
        return next((a for a in choices if a != "gaussian" and _takes(a, num_classes)), "gaussian")
    if name not in choices:
        known = LIKELIHOODS if allowed is None else ("auto",) + choices
        raise ConfigError(f"unknown likelihood {name!r}; choose one of {', '.join(known)}")
    if task == "regression" and name != "gaussian":
        raise ConfigError(f"likelihood={name!r} is for classification; this dataset is a regression task: "
                          "use 'gaussian'")
    if task == "classification" and not _takes(name, num_classes):
        others = [a for a in choices if a != "gaussian" and _takes(a, num_classes)] or ["gaussian"]
        raise ConfigError(f"likelihood={name!r} needs 2 classes but the dataset has {num_classes}; use "
                          f"{' or '.join(repr(a) for a in others)} (or the odd_even / classes data options)")
    return name


def _takes(name: str, num_classes: int | None) -> bool:
    return num_classes == 2 or name not in TWO_CLASS
