"""Likelihoods: Gaussian (closed form), Bernoulli (Gauss–Hermite), softmax (Monte Carlo), robust-max (Gauss–Hermite)."""
from ..errors import ConfigError
from .base import Likelihood
from .bernoulli import Bernoulli
from .gaussian import Gaussian
from .quadrature import gauss_hermite_expectation, hermgauss, prob_is_largest
from .robustmax import RobustMax
from .softmax import Softmax

LIKELIHOODS = ("auto", "gaussian", "bernoulli", "softmax", "robustmax")

__all__ = ["Likelihood", "Gaussian", "Bernoulli", "Softmax", "RobustMax", "build_likelihood", "LIKELIHOODS",
           "gauss_hermite_expectation", "hermgauss", "prob_is_largest"]


def build_likelihood(name: str, task: str, num_classes: int | None, *, noise_variance: float = 0.1,
                     epsilon: float = 1e-3, link: str = "probit", num_samples: int = 16) -> Likelihood:
    """The likelihood a config names for a dataset's task; `auto` is Gaussian for regression,
    Bernoulli for two classes and robust-max for more."""
    if name == "auto":
        name = "gaussian" if task == "regression" else ("bernoulli" if num_classes == 2 else "robustmax")
    if task == "regression" and name != "gaussian":
        raise ConfigError(f"likelihood={name!r} is for classification; this dataset is a regression task: use 'gaussian'")
    if name == "gaussian":
        return Gaussian(noise_variance, num_classes if task == "classification" else None)
    if name == "bernoulli":
        if num_classes != 2:
            raise ConfigError(f"likelihood='bernoulli' needs 2 classes but the dataset has {num_classes}; "
                              "use 'softmax' or 'robustmax' (or the odd_even / classes data options)")
        return Bernoulli(link)
    if name == "softmax":
        return Softmax(num_classes, num_samples)
    if name == "robustmax":
        return RobustMax(num_classes, epsilon)
    raise ConfigError(f"unknown likelihood {name!r}; choose one of {', '.join(LIKELIHOODS)}")
