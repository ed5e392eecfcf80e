"""Invariant GPs with a learned augmentation distribution (van der Wilk, Bauer, John & Hensman 2018,
"Learning invariances using the marginal likelihood").

f(x) = E_{p(x_a|x)}[g(x_a)], g ~ GP(0, k_g), with inducing points in the space of g (eq. 13). The model is
the SVGP core with an `InvariantKernel` and `InterDomainPoints`; it differs only in its covariances
(`invlab.covariances.invariant`: K_uf per sample, [M, N, S]) and in `expected_log_lik`, which uses the
unbiased estimators of μ, μ², σ² (eq. 16–21; appendix B for finite orbits; `conditionals.orbit_moments`)
drawn from the *same* S samples per input, after the SVGP's own solves against K_uu. The augmentation's ranges are
hyper-parameters learned by back-propagating the bound through the sampler (reparameterisation).

Likelihoods: Gaussian for regression and, on one-hot targets, for multi-class classification (as the
paper does); the Pólya-Gamma bound on the logistic likelihood with a recognition network for binary
classification (sec. 4.5). Both are linear in μ, μ², σ², so the ELBO estimate stays unbiased.

Predictions use `num_predict_samples` samples (the whole orbit for a finite orbit that small) and the
same estimators; the reported variance adds the Monte Carlo variance of the predictive mean (`qf`), and a negative
variance estimate is clipped at zero there.
"""

import math

import param
import torch

from .. import diagnostics as dg
from .. import likelihoods, transforms
from ..covariances import Kff_diag, Kuf
from ..covariances.invariant import OrbitSample
from ..inducing import InterDomainPoints, initial_locations
from ..kernels import build_kernel, median_distance
from ..kernels.invariant import InvariantKernel
from ..likelihoods import Gaussian, Likelihood, resolve_likelihood
from ..likelihoods.polya_gamma import PolyaGammaLogistic
from ..parameters import learnables
from ..transforms import build_augmentation
from ..transforms.compose import compose
from .base import DataInfo, Terms, Tunable
from .conditionals import orbit_moments
from .config import InducingParams, KernelParams, VariationalParams, kernel_options
from .invariant_ranges import RANGES, augmentation_tunables, range_history_view
from .registry import ELBO_TERMS, ModelSpec
from .svgp import SVGP
from .words import ELBO_METRICS, VDW_2018, FamilyWords

PREDICT_CHUNK = 4096  # at most this many augmented inputs (points × samples) at once when predicting


class InvariantSVGP(SVGP):
    """The invariant SVGP of (van der Wilk, Bauer, John & Hensman, "Learning invariances using the marginal
    likelihood", 2018): an `InvariantKernel` with inducing points in the space of g, and the expected log-likelihood
    from unbiased sample estimates of μ, μ² and σ² (eq. 16–21)."""
    def __init__(self, kernel: InvariantKernel, inducing: InterDomainPoints, likelihood: Likelihood, num_data: int, *,
                 num_predict_samples: int = 32, **kwargs):
        super().__init__(kernel, inducing, likelihood, num_data, **kwargs)
        self.num_predict_samples = int(num_predict_samples)
        self.range_history = dg.ThinnedHistory()

    @property
    def augmentation(self):
        """The augmentation distribution p(x_a | x) of the invariant kernel, whose ranges are learned."""
        return self.kernel.augmentation

    # -- the estimators ------------------------------------------------------------------------------------------
    def moments(self, X: torch.Tensor, Luu=None, S: int | None = None, generator=None):
        """Unbiased μ̂, μ²̂, σ²̂ of q(f) at X [N, ...] from S samples per input (all three from the same ones).
        [N, L] each.

        The solves against K_uu are the SVGP's (`projections`, fused when whitened and no factor is given); only the
        pair estimator over the samples is added (`conditionals.orbit_moments`)."""
        orbit = OrbitSample(self.kernel.sample_orbit(X, S, generator), self.kernel.orbit_size)
        Kuf_s = Kuf(self.inducing, self.kernel, orbit)  # [M, N, S]
        kff = Kff_diag(self.inducing, self.kernel, orbit)  # [N]
        M, N, S = Kuf_s.shape
        W, A = self.projections(Kuf_s.reshape(M, N * S), Luu)  # [M, N·S] each
        return orbit_moments(W.reshape(M, N, S), A.reshape(M, N, S), kff, self.q, orbit.orbit_size)

    def expected_log_lik(self, X, Y, Luu, *, generator=None, num_samples=None):
        """E_{q(f)}[log p(y | f)] per point [N] from unbiased estimates of μ, μ² and σ² drawn from the same S samples
        per input (van der Wilk et al. 2018 eq. 16–21; the Pólya-Gamma bound for the logistic likelihood, sec. 4.5)."""
        S = None if num_samples is None else self.augmentation.num_samples(num_samples)  # at most the orbit
        mu, mu2, var = self.moments(X, Luu, S, generator)  # Luu is None for whitened models (fused solve)
        if isinstance(self.likelihood, PolyaGammaLogistic):
            return self.likelihood.expected_log_prob_moments(Y, mu, mu2, var, X)
        # Gaussian: E[(y − f)²] = y² − 2yμ + μ² + σ². Passing σ² + (μ²̂ − μ̂²) as the variance puts the
        # unbiased μ²̂ in place of μ̂² while reusing the likelihood's own formula.
        spread = var + mu2 - mu ** 2
        if not isinstance(self.likelihood, Gaussian):
            # another registered likelihood is not linear in f and f²: its expectation under the Gaussian with these
            # moments is a plug-in estimate (biased), and it needs a variance that is not negative
            spread = spread.clamp_min(0.0)
        return self.likelihood.expected_log_prob(Y, mu, spread)

    def qf(self, X, Luu=None):
        """Predictive marginals of f at X: mean, var [N, L] from `num_predict_samples` samples per input.

        The mean μ̂ is a Monte Carlo estimate, so the variance reported is σ²̂ + (μ̂² − μ²̂): an unbiased estimate of
        q(f)'s variance plus μ̂'s own Monte Carlo variance (E[μ̂²] − μ², estimated without bias by μ̂² − μ²̂), which
        makes it the expected squared distance of f from the mean reported and minimises the expected KL from the
        exact q(f) to the reported Gaussian. Both terms are exact (the second zero) for the whole of a finite orbit."""
        Luu = self.prior_cholesky() if Luu is None else Luu  # once for all chunks
        S = self.augmentation.num_samples(self.num_predict_samples)
        chunk = max(1, PREDICT_CHUNK // S)
        means, variances = [], []
        for start in range(0, X.shape[0], chunk):
            mu, mu2, var = self.moments(X[start:start + chunk], Luu, S)
            means.append(mu)
            # an unbiased estimate can dip below zero; a variance cannot
            variances.append((var + mu ** 2 - mu2).clamp_min(0.0))
        return torch.cat(means), torch.cat(variances)

    tunable_owners = {"kernel.base.": ""}

    def tunables(self) -> list[Tunable]:
        """The augmentation's ranges (group "invariance"), then k_g's hyper-parameters and the noise variance."""
        return augmentation_tunables(self.augmentation, "kernel.augmentation.") + super().tunables()

    # -- objective: the SVGP's, plus the ranges as named parts so the trainer logs them --------------------------
    def range_values(self) -> dict[str, torch.Tensor]:
        """The augmentation's current ranges by name (degrees for rotations), as scalar tensors."""
        return self.augmentation.range_values()

    def loss(self, batch) -> Terms:
        """The SVGP's −ELBO on the batch, with the augmentation's ranges added to the parts (`range.NAME`) and recorded
        for their history view."""
        terms = super().loss(batch)
        ranges = {k: v.detach() for k, v in self.range_values().items()}
        if torch.is_grad_enabled():
            self.range_history.record(ranges)
        terms.parts.update({f"range.{k}": v for k, v in ranges.items()})
        return terms

    def restore_history(self, history: dict, step: int) -> None:
        """Take the learned ranges' record back from a stored run's history (its `range.*` metrics up to `step`), so
        a run continued from a checkpoint shows the ranges over all of its training, not from the checkpoint on."""
        series = {k.removeprefix("range."): v for k, v in history.items() if k.startswith("range.")}
        if series:
            self.range_history.restore(series, step)

    # -- what to look at ------------------------------------------------------------------------------------------
    @torch.no_grad()
    def augmentation_samples(self, X: torch.Tensor, y=None, rows: int = 4, S: int = 7, seed: int = 0) -> dg.ImageGrid:
        """A few inputs (first column) each with S samples of p(x_a | x) (van der Wilk et al. 2018 Fig. 1).

        The noise is fixed by `seed`, so between calls the grid changes only as the ranges change.
        """
        X = X[:rows]
        generator = torch.Generator().manual_seed(seed)
        A = self.augmentation.sample(X, S, generator)  # [rows, S, C, H, W]
        grid = torch.cat([X[:, None], A], 1).cpu().numpy()  # [rows, 1 + S, C, H, W]
        grid = grid[:, :, 0] if grid.shape[2] == 1 else grid.transpose(0, 1, 3, 4, 2)
        labels = [f"input {i}" + (f" (label {int(y[i])})" if y is not None else "") for i in range(X.shape[0])]
        lo, hi = float(min(grid.min(), 0.0)), float(max(grid.max(), 1.0))
        return dg.ImageGrid(title="Augmentation samples p(x_a | x)", images=grid, row_labels=labels,
                            col_labels=["input"] + [f"sample {s + 1}" for s in range(A.shape[1])],
                            vrange=None if (lo, hi) == (0.0, 1.0) else (lo, hi),
                            description="Each row: a training input and samples of its augmentation at the current "
                                        "ranges (fixed noise, so the grid changes only when the ranges do).")

    @torch.no_grad()
    def own_diagnostics(self, data=None) -> dict[str, dg.View]:
        """The SVGP's views plus augmentation samples (van der Wilk et al. 2018 Fig. 1) and the learned ranges over
        training, the ranges left out of the hyper-parameter table."""
        views = super().own_diagnostics(data)
        # one view per quantity: the ranges' history below is where they are shown (their sliders set them), so the
        # hyper-parameter table leaves them out and there is no table of their current values
        table = views["hyperparameters"].values if "hyperparameters" in views else {}
        for name in [k for k in table if k.startswith("kernel.augmentation.")]:
            del table[name]
        series = self.range_history.series() if self.wants("augmentation_history") else {}
        if series:
            info = getattr(self, "data_info", None)  # the judge measures ranges in pixels of one input
            shape = (info.input_shape or info.image_shape) if info is not None else None
            if shape is None and data is not None:
                shape = tuple(data[0].shape[1:])
            views["augmentation_history"] = range_history_view(series, self.augmentation, shape)
        if self.wants("augmentation_samples") and data is not None and data[0].dim() == 4:
            views["augmentation_samples"] = self.augmentation_samples(data[0], data[1])
        return views


# -- configuration and construction ----------------------------------------------------------------------------------
class AugmentationParams(param.Parameterized):
    """What f is made invariant to: the augmentation distribution or finite orbit, its samples and initial ranges."""

    augmentation = param.Selector(default="auto", objects=transforms.augmentation_names(),
                                  doc="What f is made insensitive to (any registered augmentation or orbit). auto: "
                                      "rotation for images, coordinate permutations for vectors. rotation/affine/"
                                      "deformation have learnable ranges; rot90/flips/permutations/sign_flips/"
                                      "cyclic_shifts are finite orbits; identity is no invariance (the plain SVGP).")
    num_samples = param.Integer(default=8, bounds=(2, 1024),
                                doc="S, augmented samples per input and step (capped at the orbit size; S = orbit size "
                                    "is exact).")
    num_predict_samples = param.Integer(default=32, bounds=(2, 4096), doc="Samples per input when predicting.")
    init_rotation = param.Number(default=5.0, bounds=(0.0, 179.0),
                                 doc="Initial rotation range α in degrees ([−α, α]; also the jitter of local "
                                     "deformations).")
    init_affine = param.Number(default=0.02, bounds=(0.0, 0.45),
                               doc="Initial half-width of the scale, shear and translation ranges ('affine'), and of "
                                   "the local scale jitter ('deformation').")
    init_deformation = param.Number(default=0.5, bounds=(0.0, 9.0),
                                    doc="Initial strength of the smooth displacement field in pixels ('deformation').")
    deformation_smoothness = param.Number(default=3.0, bounds=(0.3, 20.0),
                                          doc="Width in pixels of the Gaussian that smooths the displacement field.")
    orbit_coordinates = param.String(default="", doc="The vector coordinates that 'permutations' and 'sign_flips' act "
                                     "on, comma-separated (e.g. '0,1'); empty: all of them.")
    then_augmentation = param.Selector(default="none", objects=["none"],
                                       doc="A second augmentation or orbit applied after the first (augmentation "
                                           "rotation then flips: invariant to both, the ranges of both learned); "
                                           "none: the first alone.")
    learn_ranges = param.Boolean(default=True, doc="Learn the augmentation ranges (off: keep them fixed).")
    ranges_around_identity = param.Boolean(
        default=False, doc="Learn the affine ranges as U[−a, b] with a, b ≥ 0 around the identity ('affine'). The "
                           "paper (van der Wilk et al. 2018) learns free U[lo, hi]; this keeps both ends on either "
                           "side of the identity, so a learned range is always an invariance, never a fixed warp. "
                           "Discover turns it on.")


transforms.REGISTRY.attach(AugmentationParams, "augmentation")  # registered parts' names and own options
transforms.REGISTRY.attach(AugmentationParams, "then_augmentation")


class InvariantLikelihoodParams(param.Parameterized):
    """The likelihood: Gaussian, the Pólya-Gamma bound with its recognition network for 2 classes (sec. 4.5), or any
    registered likelihood suited to the task (the likelihood registry's choices and own settings follow it)."""

    likelihood = param.Selector(default="auto", objects=["auto", "gaussian", "polya_gamma"],
                                doc="auto: Gaussian for regression and for more than 2 classes (on one-hot targets), "
                                    "the Pólya-Gamma logistic bound for 2 classes; or any registered likelihood (the "
                                    "estimate of the bound is unbiased for the Gaussian and Pólya-Gamma only, which "
                                    "are linear in f and f²).")
    noise_variance = param.Number(default=0.1, bounds=(1e-6, 1e3), doc="Initial Gaussian noise variance.")
    recognition_hidden = param.Integer(default=32, bounds=(1, 4096),
                                       doc="Hidden units of the Pólya-Gamma recognition network (x, y) → c.")


likelihoods.REGISTRY.attach(InvariantLikelihoodParams, "likelihood")  # any registered likelihood, its own options
AUTO_LIKELIHOODS = ("gaussian", "polya_gamma")  # what `auto` chooses among: the paper's two (sec. 4.5)


class InvariantConfig(VariationalParams, InvariantLikelihoodParams, InducingParams, KernelParams, AugmentationParams):
    """An invariant GP: k_f averaged over a (learned) augmentation distribution or a finite orbit."""

    # groups are listed last-shown first: param shows the last base's parameters first (invlab.models.config)
    kernel = param.Selector(doc="Base kernel k_g on augmented inputs.")
    variance = param.Number(doc="Initial signal variance of k_g.")
    ard = param.Boolean(doc="One lengthscale per input dimension.")
    degree = param.Integer(doc="Degree of the polynomial base kernel.")
    num_inducing = param.Integer(doc="Number of inducing points M (in the space of g).")
    whiten = param.Boolean(doc="Parameterise q(u) through v = L⁻¹u.")


def invariant_likelihood(config: InvariantConfig, info: DataInfo, input_dim: int) -> Likelihood:
    """The likelihood the config names for the data: the Pólya-Gamma bound with a recognition network (2 classes), or
    a registered likelihood (Gaussian, on one-hot targets for classes, by default) built with its own settings."""
    name = resolve_likelihood(config.likelihood, info.task, info.num_classes,
                              allowed=InvariantConfig.param.likelihood.objects, auto=AUTO_LIKELIHOODS)
    if name == "polya_gamma":
        return PolyaGammaLogistic(input_dim, config.recognition_hidden)
    options = likelihoods.REGISTRY.options_of(name, config)
    return likelihoods.REGISTRY.build(name, info.task, info.num_classes, **options)


def build_invariant(config: InvariantConfig, X: torch.Tensor, y: torch.Tensor, info: DataInfo, *,
                    generator: torch.Generator | None = None) -> InvariantSVGP:
    """An invariant GP for training inputs X [N, ...] (images [N, C, H, W] or vectors [N, D])."""
    input_shape = info.shape_of(X)
    name = config.augmentation
    options = transforms.REGISTRY.options_of(name, config) if name != "auto" else {
        "rotation": config.init_rotation, "affine": config.init_affine}
    augmentation = build_augmentation(name, input_shape, **options)
    then = config.then_augmentation
    if then not in (None, "none"):
        second = build_augmentation(then, input_shape, **transforms.REGISTRY.options_of(then, config))
        augmentation = compose(augmentation, second, (name, then))
    if not config.learn_ranges:
        for value in learnables(augmentation).values():
            value.frozen = True
    D = int(math.prod(input_shape))
    ell = config.lengthscale if config.lengthscale is not None else median_distance(X)
    base = build_kernel(config.kernel, D, lengthscale=ell, variance=config.variance, ard=config.ard,
                        **kernel_options(config))
    kernel = InvariantKernel(base, augmentation, config.num_samples)
    M = min(config.num_inducing, X.shape[0])
    inducing = InterDomainPoints(initial_locations(X, M, generator), learnable=config.learn_inducing)
    likelihood = invariant_likelihood(config, info, D)
    task, num_classes = info.task, info.num_classes
    model = InvariantSVGP(kernel, inducing, likelihood, X.shape[0], num_latent=likelihood.num_latent(num_classes),
                          whiten=config.whiten,
                          mean_field=config.mean_field, task=task, num_classes=num_classes,
                          num_predict_samples=config.num_predict_samples)
    model.data_info = info
    return model


SPEC = ModelSpec("invariant", InvariantConfig, build_invariant,
                 "Invariant GP with a learned augmentation distribution (van der Wilk et al. 2018)",
                 live=(("lengthscale", "kernel.base.lengthscale"), ("variance", "kernel.base.variance"),
                       ("noise_variance", "likelihood.variance")), terms=ELBO_TERMS, metrics=ELBO_METRICS,
                 words=FamilyWords("invariant GP", "a GP whose kernel averages over transformed copies of each input "
                                   "(rotations, swaps), with the amount of transformation learned by the marginal "
                                   "likelihood", VDW_2018),
                 page={"data": {"dataset": "digits"}, "model": {}, "train": {"batch_size": 128, "eval_size": 200}},
                 ranges=RANGES)


__all__ = ["InvariantSVGP", "InvariantConfig", "build_invariant"]
