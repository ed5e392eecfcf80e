"""Config parameters shared by the GP families, as param mixins: a family's config inherits the groups it has and
overrides a parameter only where its default, bounds or doc differ (`variance = param.Number(doc=...)`: what is
not restated is inherited; restate `default` with new bounds, and `allow_None=True` on a parameter that may be
empty).

Order: param lists a class's parameters base by base, from its *last* base to its first, then its own, and an
override keeps the place of the parameter it overrides. The CLI's flags and the dashboard's widgets follow that
order, so a config names its groups in reverse reading order, e.g.
`class SVGPConfig(VariationalParams, RobustMaxLikelihoodParams, InducingParams, KernelParams)` reads kernel,
inducing, likelihood, variational.
"""
from __future__ import annotations

import param

from .. import kernels, likelihoods


class KernelParams(param.Parameterized):
    """The covariance function of the GP and its initial hyper-parameters."""

    kernel = param.Selector(default="rbf", objects=kernels.kernel_names(),
                            doc="Covariance function of the GP (any registered kernel).")
    lengthscale = param.Number(default=None, allow_None=True, bounds=(1e-4, 1e4),
                               doc="Initial lengthscale; empty = median distance between training inputs.")
    variance = param.Number(default=1.0, bounds=(1e-6, 1e4), doc="Initial signal variance σ².")
    ard = param.Boolean(default=False, doc="One lengthscale per input dimension (RBF and Matérn).")
    degree = param.Integer(default=2, bounds=(1, 10), doc="Degree of the polynomial kernel.")


kernels.REGISTRY.attach(KernelParams, "kernel")  # registered kernels' names and own options follow the registry


def kernel_options(config: param.Parameterized) -> dict:
    """The chosen kernel's own constructor arguments (e.g. the polynomial's `degree`), read from `config`."""
    return kernels.REGISTRY.options_of(config.kernel, config)


class InducingParams(param.Parameterized):
    """The inducing variables: how many, and whether their locations are learned."""

    num_inducing = param.Integer(default=100, bounds=(1, 5000), doc="Number of inducing points M.")
    learn_inducing = param.Boolean(default=True, doc="Optimise the inducing locations Z.")


class LikelihoodParams(param.Parameterized):
    """The likelihood (resolved by `invlab.likelihoods.resolve_likelihood`) and the Gaussian's initial noise."""

    likelihood = param.Selector(default="auto", objects=["auto"],
                                doc="auto: Gaussian for regression, Bernoulli for 2 classes, robust-max for more "
                                    "(any registered likelihood).")
    noise_variance = param.Number(default=0.1, bounds=(1e-6, 1e3), doc="Initial Gaussian noise variance.")


# registered likelihoods' names and own options follow the registry, for every family that takes a likelihood
likelihoods.REGISTRY.attach(LikelihoodParams, "likelihood")


class RobustMaxLikelihoodParams(LikelihoodParams):
    """The likelihood, with the robust-max's label-noise rate."""

    epsilon = param.Number(default=1e-3, bounds=(1e-6, 0.5), doc="Robust-max label-noise rate ε.")


class WhitenParams(param.Parameterized):
    """How q(u) is parameterised."""

    whiten = param.Boolean(default=True, doc="Parameterise q(u) through v = L⁻¹u (usually optimises faster).")


class VariationalParams(WhitenParams):
    """How q(u) is parameterised, and whether its covariance is diagonal."""

    mean_field = param.Boolean(default=False, doc="Diagonal q(u) covariance instead of a full one.")


__all__ = ["KernelParams", "kernel_options", "InducingParams", "LikelihoodParams", "RobustMaxLikelihoodParams",
           "WhitenParams", "VariationalParams"]
