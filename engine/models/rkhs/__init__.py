"""Invariance as bounded linear functionals on an RKHS (Zhang, Lee & Teh, NIPS 2013).

- `functionals`: evaluations, directional / partial derivatives (eq. 6–8), image-transformation tangents as
  directional derivatives (Thm 5, eq. 9), Gaussian local averages (sec. 4.3), and `inner` for the inner
  products of their representers (closed forms; autograd for any other kernel);
- `tangents`: tangent vectors of affine image transformations, by differentiating the warp or by finite
  differences of the transformation; virtual samples for the VirSVM baseline;
- `gram`: the representer Gram matrix as an operator, with the fast product of eq. 11;
- `losses`: logistic, squared, smoothed hinge and smoothed ε-insensitive losses;
- `targets`: the labelled subset and the ±1 / one-vs-rest targets of the data loss;
- `solver`: L-BFGS with a strong-Wolfe line search, with or without a record of every iterate;
- `model`: the regularised risk of eq. 4 over the representer expansion (eq. 3), its predictions and views;
- `config`: the family's config, build function and registry entry (`SPEC`, registry name `rkhs`).
"""
from .config import (
    FUNCTIONAL_REGISTRY,
    FUNCTIONALS,
    LIVE,
    SPEC,
    RKHSConfig,
    build_rkhs,
    functional_names,
    invariance_functionals,
    register_functionals,
)
from .functionals import (
                          DirectionalDerivative,
                          Evaluation,
                          Functionals,
                          LocalAverage,
                          PartialDerivatives,
                          gram,
                          inner,
                          representer_values,
)
from .gram import RepresenterGram, dense_partials_gram, fast_gradient
from .losses import (
    DATA_LOSS_REGISTRY,
    INVARIANCE_LOSS_REGISTRY,
    data_loss_names,
    invariance_loss_names,
    register_data_loss,
    register_invariance_loss,
)
from .model import RKHSMachine
from .tangents import PAPER_MAGNITUDES, TRANSFORMATIONS, tangent_vectors, virtual_samples
from .targets import choose_labelled, encode_targets

__all__ = ["Functionals", "Evaluation", "DirectionalDerivative", "PartialDerivatives", "LocalAverage", "inner", "gram",
           "representer_values", "RepresenterGram", "fast_gradient", "dense_partials_gram", "RKHSMachine", "RKHSConfig",
           "build_rkhs", "SPEC", "FUNCTIONALS", "choose_labelled", "encode_targets", "invariance_functionals",
           "tangent_vectors", "virtual_samples", "TRANSFORMATIONS", "PAPER_MAGNITUDES", "LIVE",
           "FUNCTIONAL_REGISTRY", "functional_names", "register_functionals", "DATA_LOSS_REGISTRY",
           "INVARIANCE_LOSS_REGISTRY", "data_loss_names", "invariance_loss_names", "register_data_loss",
           "register_invariance_loss"]
