"""The lab's convolutional and invariant GPs for GPyTorch users (needs the `gpytorch` extra:
`pip install "invariance-lab[gpytorch]"`).

- `ConvKernel(base_kernel, image_shape, patch_shape, weighted=False, colour=False)`: the convolutional kernel of
  "Convolutional Gaussian Processes" (van der Wilk, Rasmussen & Hensman 2017, arXiv:1709.01894) as a
  `gpytorch.kernels.Kernel` on flattened images, with the lab's memory-bounded patch arithmetic.
- `InvariantKernel(base_kernel, orbit)`: a base kernel averaged over a finite orbit ("rot90", "flips",
  "permutations", ... or a `FiniteOrbit`), the invariant kernel of "Learning Invariances using the Marginal
  Likelihood" (van der Wilk, Bauer, John & Hensman 2018, arXiv:1808.05563), exactly.

- `InterDomainVariationalStrategy(model, inducing, variational_distribution)` with `InducingPatches(Z)` (or inducing
  inputs [M, D] of an invariant kernel's base): GPyTorch's whitened variational strategy with inter-domain inducing
  variables u = g(Z), so an `ApproximateGP` trains a convolutional GP with inducing patches, or an invariant GP with
  inducing points in the non-invariant function's space, with `VariationalELBO` and any GPyTorch likelihood.

Both kernels go in an `ExactGP` as any GPyTorch kernel does::

    covar_module = invlab.gpytorch.ConvKernel(gpytorch.kernels.RBFKernel(), image_shape=(28, 28), patch_shape=3)
"""
try:
    import gpytorch  # noqa: F401
except ImportError as err:  # pragma: no cover - depends on the environment
    raise ImportError("invlab.gpytorch needs GPyTorch: pip install \"invariance-lab[gpytorch]\"") from err

from .kernels import ConvKernel, InvariantKernel
from .variational import InducingPatches, InterDomainVariationalStrategy

__all__ = ["ConvKernel", "InducingPatches", "InterDomainVariationalStrategy", "InvariantKernel"]
