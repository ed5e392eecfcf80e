"""The RKHS family's config, build function and registry entry (`rkhs`, solved by L-BFGS): which points are
labelled, which invariance functionals sit where (Zhang, Lee & Teh 2013, sec. 4 and 6), and the kernel."""
from __future__ import annotations

import param
import torch

from ...errors import ConfigError
from ...kernels import REGISTRY as KERNELS
from ...kernels import build_kernel, kernel_names, median_distance
from ...registry import Registry
from ..base import DataInfo
from ..registry import ModelSpec
from ..words import ZHANG_2013, FamilyWords, MetricWords
from .functionals import DirectionalDerivative, Functionals, LocalAverage, PartialDerivatives
from .losses import DATA_LOSS_REGISTRY, INVARIANCE_LOSS_REGISTRY
from .model import RKHSMachine
from .tangents import TANGENT_METHODS, TRANSFORMATIONS, tangent_vectors
from .targets import choose_labelled

# -- configuration -----------------------------------------------------------------------------------------------------
# The kinds of invariance functional, one registry door: a kind is `functionals(points [P, D], image_shape, sigma,
# transformations, tangent_method, blur, average_width, **own) -> (list of Functionals blocks, tangent preview or
# None)`; the built-ins below register through the same `register_functionals` a plugin uses.
FUNCTIONAL_REGISTRY = Registry("invariance functional", contract=("points", "image_shape", "sigma", "transformations",
                                                                  "tangent_method", "blur", "average_width"),
                               extra=("auto",))


def register_functionals(name: str, **how):
    """A decorator registering a kind of invariance functional (Zhang, Lee & Teh 2013, sec. 4) under `name`: it
    takes the points (flattened, [P, D]) and the contract's settings and returns the functionals' blocks and a
    preview (or None); see `invlab.registry.Registry.register`."""
    return FUNCTIONAL_REGISTRY.register(name, **how)


def functional_names() -> list[str]:
    """Every registered kind of invariance functional: the built-ins, then a user's or a plugin's."""
    return list(FUNCTIONAL_REGISTRY.parts)


class RKHSConfig(param.Parameterized):
    """Kernel machine with invariances as bounded linear functionals (Zhang, Lee & Teh 2013), solved by L-BFGS."""

    kernel = param.Selector(default="rbf", objects=kernel_names(),
                            doc="Any registered kernel. rbf: κ_σ (eq. 8 and 11 in closed form); polynomial "
                                "(x·y + 1)^r (eq. 7); matern52 in closed form; any other (linear, arc-cosine, your "
                                "own) with its derivatives by autograd. Local averaging needs the rbf.")
    sigma = param.Number(default=None, allow_None=True, bounds=(1e-4, 1e4),
                         doc="Width σ of the Gaussian / Matérn kernel; empty = median distance between training "
                             "inputs.")
    degree = param.Integer(default=2, bounds=(1, 10), doc="Degree r of the polynomial kernel.")
    nu = param.Number(default=0.1, bounds=(0.0, 10.0), step=0.01,
                      doc="Invariance weight ν of eq. 2 (0 = plain kernel machine); changes apply live.")
    lam = param.Number(default=1.0, bounds=(0.0, None), softbounds=(1e-4, 1e4),  # a scale: log slider
                       doc="Data weight λ of eq. 2; changes apply live.")
    loss = param.Selector(default="auto", objects=["auto"],
                          doc="ℓ₁ on labelled points (any registered data loss that suits the task); auto: logistic "
                              "(classification) or squared (regression).")
    invariance_loss = param.Selector(default="squared", objects=[],
                                     doc="ℓ₂ on the invariance functionals (any registered invariance loss).")
    epsilon = param.Number(default=0.1, bounds=(0.0, None), doc="ε of the ε-insensitive losses.")
    smoothing = param.Number(default=0.5, bounds=(1e-6, None),
                             doc="Width h of the quadratic smoothing of the hinge and ε-insensitive losses.")
    functionals = param.Selector(default="auto", objects=["auto"],
                                 doc="Invariances: gradient (sec. 4.1), transformations (image tangents, sec. 4.2), "
                                     "local_average (sec. 4.3), none; auto: transformations for images, else gradient.")
    transformations = param.List(default=list(TRANSFORMATIONS), item_type=str,
                                 doc="Image transformations for the tangent functionals "
                                     f"({', '.join(TRANSFORMATIONS)}).")
    tangent_method = param.Selector(default="analytic", objects=list(TANGENT_METHODS),
                                    doc="analytic / autograd: differentiate the (Gaussian-interpolated) warp, by the "
                                        "chain rule / by autograd; finite: the difference the ±δ transformations make "
                                        "(paper).")
    blur = param.Number(default=1.0, bounds=(0.05, 10.0),
                        doc="Gaussian interpolation width (pixels) of the derivative tangents.")
    average_width = param.Number(default=None, allow_None=True, bounds=(1e-6, None),
                                 doc="Width θ of the local-averaging density; empty = σ / 2.")
    labelled = param.Integer(default=20, bounds=(0, None),
                             doc="Labelled training points (stratified, round-robin over classes); 0 = all.")
    semi_supervised = param.Boolean(default=True, doc="Put invariance functionals at unlabelled points too.")
    max_unlabelled = param.Integer(default=300, bounds=(0, None), doc="At most this many unlabelled points are used.")
    bias = param.Boolean(default=True, doc="Add an unpenalised bias b.")
    class_balanced = param.Boolean(default=False, doc="Weight ℓ₁ by 1/n_c within each class (sec. 6.3).")
    fast_gradient = param.Boolean(default=True, doc="Products with the partial-derivative block by eq. 11 (O(l²n)) "
                                                    "instead of materialising it (O(l²n²)): the α solver and "
                                                    "predictions.")
    whiten = param.Boolean(default=True, doc="Solve over β with α = U Λ^{-1/2} β (K = U Λ Uᵀ): same problem, well "
                                             "conditioned; off: the paper's α (with eq. 11 for partial derivatives).")
    max_dense = param.Integer(default=8000, bounds=(1, None),
                              doc="Refuse to materialise a Gram matrix larger than this.")


# -- construction ------------------------------------------------------------------------------------------------------

KERNELS.attach(RKHSConfig, "kernel")  # every registered kernel, with its own options, is a choice
DATA_LOSS_REGISTRY.attach(RKHSConfig, "loss")  # and every registered loss and kind of functional
INVARIANCE_LOSS_REGISTRY.attach(RKHSConfig, "invariance_loss")


def invariance_functionals(kind: str, points: torch.Tensor, *, image_shape=None, sigma: float = 1.0,
                           transformations=TRANSFORMATIONS, tangent_method: str = "analytic", blur: float = 1.0,
                           average_width: float | None = None, **options) -> tuple[list[Functionals], object]:
    """The invariance functionals of the registered kind `kind` at `points` [P, ...] (`options`: the kind's own
    arguments); also returns a tangent preview (or None)."""
    FUNCTIONAL_REGISTRY.get(kind)  # an unknown kind is refused, listing the known ones, even with no points
    P = points.shape[0]
    if P == 0:
        return [], None
    return FUNCTIONAL_REGISTRY.build(kind, points.reshape(P, -1), image_shape, sigma, transformations,
                                     tangent_method, blur, average_width, **options)


@register_functionals("gradient", builtin=True)
def _gradient(points, image_shape, sigma, transformations, tangent_method, blur, average_width):
    """Every partial derivative ∂f/∂x_d at each point (sec. 4.1)."""
    return [PartialDerivatives(points)], None


@register_functionals("transformations", builtin=True)
def _transformations(points, image_shape, sigma, transformations, tangent_method, blur, average_width):
    """Directional derivatives along the tangents of image transformations (sec. 4.2); images only."""
    if image_shape is None:
        raise ConfigError("functionals='transformations' needs image data (tangents of image transformations); "
                          "use gradient or local_average for vectors")
    P = points.shape[0]
    images = points.reshape(P, *image_shape)
    T = tangent_vectors(images, transformations, method=tangent_method, blur=blur)  # [P, T, C, H, W]
    nT = T.shape[1]
    block = DirectionalDerivative(points.repeat_interleave(nT, 0), T.reshape(P * nT, -1))
    return [block], (images[:4].cpu().numpy(), T[:4].cpu().numpy(), list(transformations))


@register_functionals("local_average", builtin=True)
def _local_average(points, image_shape, sigma, transformations, tangent_method, blur, average_width):
    """f minus its local average under a Gaussian of width θ (sec. 4.3)."""
    return [LocalAverage(points, average_width if average_width is not None else sigma / 2.0)], None


@register_functionals("none", builtin=True)
def _none(points, image_shape, sigma, transformations, tangent_method, blur, average_width):
    """No invariance: the plain kernel machine."""
    return [], None


FUNCTIONAL_REGISTRY.attach(RKHSConfig, "functionals")
FUNCTIONALS = ("auto", *functional_names())  # the selector's built-in choices


def _loss_options(config: RKHSConfig) -> dict:
    """The own arguments of the data loss the config chose ("auto": a built-in, which has none)."""
    return {} if config.loss == "auto" else DATA_LOSS_REGISTRY.options_of(config.loss, config)


def build_rkhs(config: RKHSConfig, X: torch.Tensor, y: torch.Tensor, info: DataInfo, *,
               generator: torch.Generator | None = None) -> RKHSMachine:
    """The machine for training inputs X [N, ...] and labels y: labelled subset, invariance functionals at the
    labelled (and, semi-supervised, unlabelled) points, the kernel of the config."""
    task, num_classes, image_shape = info.task, info.num_classes, info.image_shape
    X = torch.as_tensor(X, dtype=torch.float64)
    y = torch.as_tensor(y)
    flat = X.reshape(X.shape[0], -1)
    N, D = flat.shape
    lab = choose_labelled(y, config.labelled, task, num_classes, generator)
    mask = torch.ones(N, dtype=torch.bool)
    mask[lab] = False
    rest = torch.nonzero(mask)[:, 0]
    rest = rest[torch.randperm(len(rest), generator=generator)][: config.max_unlabelled].sort().values
    sigma = config.sigma if config.sigma is not None else median_distance(flat)
    kernel = build_kernel(config.kernel, D, lengthscale=sigma, variance=1.0,
                          **KERNELS.options_of(config.kernel, config))
    kind = config.functionals
    if kind == "auto":
        kind = "transformations" if image_shape is not None else "gradient"
    points = torch.cat([flat[lab], flat[rest]]) if config.semi_supervised else flat[lab]
    blocks, preview = invariance_functionals(kind, points, image_shape=image_shape, sigma=sigma,
                                             transformations=config.transformations,
                                             tangent_method=config.tangent_method,
                                             blur=config.blur, average_width=config.average_width,
                                             **FUNCTIONAL_REGISTRY.options_of(kind, config))
    weights = None
    if config.class_balanced and task == "classification":
        counts = torch.bincount(y[lab].long(), minlength=int(num_classes)).to(torch.float64)
        weights = 1.0 / counts[y[lab].long()]
    model = RKHSMachine(kernel, flat[lab], y[lab], blocks, task=task, num_classes=num_classes, loss=config.loss,
                        invariance_loss=config.invariance_loss, lam=config.lam, nu=config.nu, bias=config.bias,
                        epsilon=config.epsilon, smoothing=config.smoothing, weights=weights,
                        fast=config.fast_gradient, unlabelled=flat[rest], max_dense=config.max_dense,
                        whiten=config.whiten, loss_options=_loss_options(config),
                        invariance_loss_options=INVARIANCE_LOSS_REGISTRY.options_of(config.invariance_loss, config))
    model.tangent_preview = preview
    model.data_info = info
    return model


LIVE = (("nu", "nu"), ("lam", "lam"))  # config parameter → fixed value the dashboard sets while training runs

SPEC = ModelSpec("rkhs", RKHSConfig, build_rkhs,
                 "Kernel machine with invariances as linear functionals on an RKHS (Zhang, Lee & Teh 2013)",
                 tasks=("classification", "regression"), optimizer="lbfgs", live=LIVE,
                 terms=("data_loss", "invariance_loss", "norm"),
                 words=FamilyWords("kernel machine with invariance functionals", "a kernel solver that penalises "
                                   "change along the data (gradients, transformations) as linear functionals, solved "
                                   "by L-BFGS", ZHANG_2013),
                 # two moons: Zhang, Lee & Teh 2013 Fig. 1
                 page={"data": {"dataset": "two-moons"}, "model": {}, "train": {"eval_size": 1000}},
                 # the objective's terms (eq. 4) have one view of their own ("Objective terms over L-BFGS iterations")
                 metrics={"data_loss": MetricWords("data loss", "Data loss (labelled points)", curve=False),
                          "invariance_loss": MetricWords("invariance loss", "Invariance loss (functionals)",
                                                         curve=False),
                          "norm": MetricWords("norm penalty λ‖f‖²", "RKHS norm penalty", curve=False),
                          "objective": MetricWords("objective", "Objective (eq. 4)")})

