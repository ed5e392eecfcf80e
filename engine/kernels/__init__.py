"""Base kernels, stationary (RBF, Matérn 5/2) and dot-product (linear, polynomial, arc-cosine), and the
combinators that build kernels from kernels (`Sum`, `ChannelAdditive`). Kernels on Gram matrices (deep kernel
processes) are in `gram.py`, orbit kernels (convolutional, invariant) in their own modules.

Kernels are chosen by name from one registry, `REGISTRY`; the built-ins register through the same `register`
decorator a user's kernel does:

    @invlab.kernels.register("rq")
    class RationalQuadratic(Stationary):
        def __init__(self, input_dim, lengthscale=1.0, variance=1.0, ard=False, alpha=1.0): ...

Arguments beyond `(input_dim, lengthscale, variance, ard)` (here `alpha`) become settings of the GP families'
configs, with widgets and flags (`--kernel rq --alpha 2`).
"""
from ..registry import Registry
from .base import Kernel, Stationary, square_distance
from .combinators import ChannelAdditive, Sum
from .distances import median_distance
from .dot_product import ArcCosine, Linear, Polynomial
from .stationary import RBF, Matern52

__all__ = ["Kernel", "Stationary", "RBF", "Matern52", "Linear", "Polynomial", "ArcCosine", "Sum", "ChannelAdditive",
           "square_distance", "build_kernel", "median_distance", "register", "REGISTRY", "kernel_names"]

REGISTRY = Registry("kernel", contract=("input_dim", "lengthscale", "variance", "ard"))
"""Every kernel a config can name: built-ins first, then those registered by a user's code or a plugin."""


def register(name: str, **how):
    """Register a `Kernel` class (or a factory) as kernel `name`; it is built as
    `factory(input_dim, lengthscale=, variance=, ard=, **own options)`. See `invlab.registry.Registry.register`."""
    return REGISTRY.register(name, **how)


def kernel_names() -> list[str]:
    """The names a config's `kernel` setting accepts, in registration order."""
    return REGISTRY.names()


register("rbf", builtin=True)(RBF)
register("matern52", builtin=True)(Matern52)


@register("linear", builtin=True)
def linear(input_dim=None, lengthscale=1.0, variance=1.0, ard=False):
    """σ² x·x' (the lengthscale and ARD do not apply)."""
    return Linear(variance)


@register("polynomial", builtin=True, options={"degree": "degree"})
def polynomial(input_dim=None, lengthscale=1.0, variance=1.0, ard=False, degree=2):
    """σ² (x·x' + 1)^degree."""
    return Polynomial(degree, variance)


@register("arccos0", builtin=True)
def arccos0(input_dim=None, lengthscale=1.0, variance=1.0, ard=False):
    """The arc-cosine kernel of order 0 (step-network NNGP), weight variance 1/ℓ²."""
    return ArcCosine(0, variance, weight_variance=1.0 / lengthscale**2)


@register("arccos1", builtin=True)
def arccos1(input_dim=None, lengthscale=1.0, variance=1.0, ard=False):
    """The arc-cosine kernel of order 1 (ReLU-network NNGP), weight variance 1/ℓ²."""
    return ArcCosine(1, variance, weight_variance=1.0 / lengthscale**2)


def build_kernel(name: str, input_dim: int, *, lengthscale: float = 1.0, variance: float = 1.0, ard: bool = False,
                 **options) -> Kernel:
    """The kernel registered as `name`, with its initial hyper-parameters; `options` are own constructor
    arguments (those the kernel does not take are ignored, so a config's settings can be passed as they are)."""
    return REGISTRY.build(name, input_dim, lengthscale=lengthscale, variance=variance, ard=ard, **options)
