"""Gaussian Wasserstein inference in function space (Wild, Hu & Sejdinovic 2022): reference P, approximation Q, the W2
estimate.

- `reference`: P = N(0, C_k), kernel fitted by the exact marginal likelihood on M = c·√N points, then frozen.
- `approximate`: Q in SVGP form (β, Σ = L_Σ L_Σᵀ; optional mean network), built from the SVGP pieces.
- `wasserstein`: the estimate Ŵ² of sec. 2.1.2 and its parts; how its spectrum is made real.
- `tempering`: α_T on a validation split (sec. 2.3).
- `config`: `GWIConfig`, the family's settings.
- `model`: the `GWI` family; `views`: what it shows; `build`: `build_gwi` and its registry entry `SPEC` ('gwi').
"""
from .approximate import ApproximateMeasure, MeanNetwork, closed_form_init
from .build import SPEC, build_gwi
from .config import GWIConfig
from .model import GWI
from .reference import exact_log_marginal_likelihood, fit_reference, reference_size
from .wasserstein import W2Estimate, psd_product_eigenvalues, wasserstein_estimate

__all__ = ["GWI", "GWIConfig", "build_gwi", "SPEC", "ApproximateMeasure", "MeanNetwork", "closed_form_init",
           "exact_log_marginal_likelihood", "fit_reference", "reference_size", "W2Estimate", "psd_product_eigenvalues",
           "wasserstein_estimate"]
