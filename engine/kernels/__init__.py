"""Base kernels, stationary (RBF, Matérn 5/2) and dot-product (linear, polynomial, arc-cosine), and the
combinators that build kernels from kernels (`Sum`, `ChannelAdditive`). Kernels on Gram matrices (deep kernel
processes) are in `gram.py`, orbit kernels (convolutional, invariant) in their own modules."""
from ..errors import ConfigError
from .base import Kernel, Stationary, square_distance
from .combinators import ChannelAdditive, Sum
from .distances import median_distance
from .dot_product import ArcCosine, Linear, Polynomial
from .stationary import RBF, Matern52

__all__ = ["Kernel", "Stationary", "RBF", "Matern52", "Linear", "Polynomial", "ArcCosine", "Sum", "ChannelAdditive",
           "square_distance", "build_kernel", "median_distance"]

KERNELS = ("rbf", "matern52", "linear", "polynomial", "arccos0", "arccos1")


def build_kernel(name: str, input_dim: int, *, lengthscale: float = 1.0, variance: float = 1.0, ard: bool = False,
                 degree: int = 2) -> Kernel:
    """The kernel a config names, with its initial hyper-parameters."""
    if name == "rbf":
        return RBF(input_dim, lengthscale, variance, ard)
    if name == "matern52":
        return Matern52(input_dim, lengthscale, variance, ard)
    if name == "linear":
        return Linear(variance)
    if name == "polynomial":
        return Polynomial(degree, variance)
    if name in ("arccos0", "arccos1"):
        return ArcCosine(int(name[-1]), variance, weight_variance=1.0 / lengthscale**2)
    raise ConfigError(f"unknown kernel {name!r}; choose one of {', '.join(KERNELS)}")
