"""`resolve_likelihood`: the one place a config's likelihood name, 'auto' included, is read for a dataset."""
import pytest

from invlab.errors import ConfigError
from invlab.likelihoods import resolve_likelihood
from invlab.models.dkp.config import LIKELIHOOD_PREFERENCE
from invlab.models.invariant import AUTO_LIKELIHOODS, InvariantConfig

INVARIANT = InvariantConfig.param.likelihood.objects


@pytest.mark.parametrize("allowed, auto, regression, two, many", [
    (None, None, "gaussian", "bernoulli", "robustmax"),  # SVGP and convolutional GPs
    (LIKELIHOOD_PREFERENCE, None, "gaussian", "bernoulli", "softmax"),  # deep kernel processes
    # invariant GP: auto among the paper's two, one-hot Gaussian for many classes (it takes any registered one named)
    (INVARIANT, AUTO_LIKELIHOODS, "gaussian", "polya_gamma", "gaussian"),
])
def test_auto_follows_each_familys_preference(allowed, auto, regression, two, many):
    assert resolve_likelihood("auto", "regression", None, allowed=allowed, auto=auto) == regression
    assert resolve_likelihood("auto", "classification", 2, allowed=allowed, auto=auto) == two
    assert resolve_likelihood("auto", "classification", 10, allowed=allowed, auto=auto) == many


def test_named_likelihoods_are_checked_against_the_task():
    assert resolve_likelihood("softmax", "classification", 2) == "softmax"
    assert resolve_likelihood("gaussian", "classification", 3) == "gaussian"  # one-hot targets
    with pytest.raises(ConfigError, match="'softmax' is for classification.*use 'gaussian'"):
        resolve_likelihood("softmax", "regression", None)
    with pytest.raises(ConfigError, match="'polya_gamma' needs 2 classes.*has 3; use 'softmax' or 'robustmax'"):
        resolve_likelihood("polya_gamma", "classification", 3, allowed=INVARIANT)
    with pytest.raises(ConfigError, match="'bernoulli' needs 2 classes.*use 'robustmax' or 'softmax'"):
        resolve_likelihood("bernoulli", "classification", 5)
    assert resolve_likelihood("robustmax", "classification", 3, allowed=INVARIANT) == "robustmax"  # any registered
    with pytest.raises(ConfigError, match="unknown likelihood 'student'; choose one of auto, gaussian, polya_gamma"):
        resolve_likelihood("student", "classification", 3, allowed=INVARIANT)
