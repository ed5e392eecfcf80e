"""The settings of Gaussian Wasserstein inference in function space (Wild, Hu & Sejdinovic 2022): the reference GP P
and its fit, Q's initialisation and mean network, the W2 spectrum estimate, robust-max classification and the
tempering split. Built into a model by `invlab.models.gwi.model.build_gwi`."""
from __future__ import annotations

import param

from ...kernels import REGISTRY as KERNEL_REGISTRY
from ...kernels import kernel_names
from .wasserstein import METHODS


class GWIConfig(param.Parameterized):
    """Gaussian Wasserstein inference: a frozen reference GP P and an SVGP-form Q fitted by the W2 objective."""

    kernel = param.Selector(default="rbf", objects=kernel_names(),
                            doc="Reference kernel of P: any registered kernel; the paper's are RBF (ARD when `ard`) "
                                "and arc-cosine (NNGP of one layer) of order 1/0.")
    ard = param.Boolean(default=True, doc="RBF and Matérn: one lengthscale per input dimension.")
    degree = param.Integer(default=2, bounds=(1, 10), doc="Degree of the polynomial kernel.")
    lengthscale = param.Number(default=None, allow_None=True, bounds=(1e-4, 1e4),
                               doc="Initial lengthscale before the reference fit; empty = median distance.")
    variance = param.Number(default=1.0, bounds=(1e-6, 1e4), doc="Initial kernel variance before the reference fit.")
    inducing_factor = param.Number(default=1.0, bounds=(0.05, 100.0),
                                   doc="c in M = c·√N: points for the reference fit, also Q's inducing inputs.")
    reference_steps = param.Integer(default=100, bounds=(0, 10_000),
                                    doc="L-BFGS iterations of the exact marginal-likelihood fit of P "
                                        "(0: keep initial values).")
    reference_fit = param.Selector(default="robust", objects=["robust", "evidence"],
                                   doc="robust: the evidence with σ² kept off zero, from several starts, the start "
                                       "kept by its predictive density on M other training points; evidence: the "
                                       "plain evidence from the initial values (can interpolate on few points).")
    noise_variance = param.Number(default=0.1, bounds=(1e-6, 1e3),
                                  doc="Initial Gaussian noise σ² for the reference fit "
                                      "(regression: then the likelihood's).")
    learn_noise = param.Boolean(default=True, doc="Regression: keep learning σ² in the GWI objective.")
    init_regulariser = param.Number(default=1e-6, bounds=(0.0, 1e6), softbounds=(1e-10, 1e6),
                                    doc="λ in L_Σ = chol([K_ZZ + σ⁻² K_ZX K_XZ + λI]⁻¹) (sec. 1.6.1).")
    init_mean = param.Boolean(default=True, doc="Start β at the closed form Σ K_ZX y / σ² (else at zero).")
    network_width = param.Integer(default=0, bounds=(0, 4096),
                                  doc="Width of the tanh network g added to Q's mean (sec. 1.5.2); 0 = none.")
    network_depth = param.Integer(default=1, bounds=(1, 8), doc="Hidden layers of the mean network.")
    num_spectrum = param.Integer(default=100, bounds=(1, 100_000), doc="N_S: sub-sample size for the W2 spectrum.")
    spectrum = param.Selector(default="subsample", objects=list(METHODS),
                              doc="W2 eigenvalue term: 'subsample' = λ(r(X_S,X_S) k(X_S,X_S))/N_S² (real by "
                                  "construction); 'paper' = λ(r(X_S,X) k(X,X_S))/(N·N_S) (sec. 2.1.2, can be complex).")
    epsilon = param.Number(default=0.01, bounds=(1e-6, 0.5), doc="Robust-max label-noise rate ε (classification).")
    quadrature_points = param.Integer(default=8, bounds=(2, 256),
                                      doc="Gauss–Legendre nodes per panel for S(x, j), split at every other class's "
                                          "step (8: error ≤ 1e-6); values above 16 act as 16 (stored runs used 64).")
    validation_fraction = param.Number(default=0.1, bounds=(0.0, 0.5),
                                       doc="Share of the training data held out (never trained on) to fit α_T.")
    max_temperature = param.Number(default=1.0, bounds=(1.0, 1e3),
                                   doc="Upper bound of α_T (the notes take α_T ∈ (0, 1]: tempering only shrinks).")

KERNEL_REGISTRY.attach(GWIConfig, "kernel")  # every registered kernel, with its own options, is a choice
