"""Deep kernel processes (Aitchison, Yang & Ober 2021): the deep inverse Wishart process, its NNGP
limit and a plain SVGP with the same kernel, plus the prior explorer of app. H and J.

- `wishart`: Wishart / inverse Wishart with Bartlett sampling and log densities, the per-point conditional (app. I).
- `layers`: the singular input layer through Ω, inverse Wishart layers, the global-inducing output layer.
- `model`: the model family (Alg. 1).
- `config`: the families' configs, build functions and registry entries (`SPECS`: diwp, nngp, dkp_svgp).
- `prior`: joint prior samples and `PriorExplorer`, a param class whose `views()` the dashboard shows with sliders.
"""
from .config import SPECS, DIWPConfig, DKPSVGPConfig, GramKernelConfig, NNGPConfig, build_dkp, build_dkp_svgp
from .model import DeepKernelProcess
from .prior import PriorExplorer, sample_deep_prior
from .wishart import InverseWishart, Wishart, inverse_wishart_conditional, residual_wishart

__all__ = ["DeepKernelProcess", "DIWPConfig", "NNGPConfig", "DKPSVGPConfig", "GramKernelConfig", "build_dkp",
           "build_dkp_svgp", "SPECS", "PriorExplorer", "sample_deep_prior", "Wishart", "InverseWishart",
           "inverse_wishart_conditional", "residual_wishart"]
