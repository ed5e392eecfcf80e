"""Likelihoods: Gaussian (closed form), Bernoulli and robust-max (composite Gauss–Legendre, `quadrature`), softmax
(Monte Carlo); calibration measures of class probabilities (`calibration`). Every one a family's `likelihood`
setting names comes from the registry (`invlab.likelihoods.register`), the built-ins included."""
from . import builtin  # noqa: F401 — registers the built-in likelihoods
from .base import Likelihood
from .bernoulli import Bernoulli
from .calibration import expected_calibration_error
from .gaussian import Gaussian
from .quadrature import gauss_hermite_expectation, hermgauss, prob_is_largest
from .registry import REGISTRY, build_likelihood, likelihood_for, preference, register, resolve_likelihood
from .robustmax import RobustMax
from .softmax import Softmax

__all__ = ["Likelihood", "Gaussian", "Bernoulli", "Softmax", "RobustMax", "build_likelihood", "resolve_likelihood",
           "likelihood_for", "preference", "register", "REGISTRY", "gauss_hermite_expectation", "hermgauss",
           "prob_is_largest", "expected_calibration_error"]
