"""Sparse variational GP (Hensman et al. 2013/2015; GPflow's SVGP), the core the other families reuse.

ELBO = (N/B) Σ_{b ∈ batch} E_{q(f_b)}[log p(y_b | f_b)] − KL(q(u) ‖ p(u)).

The pieces are kept apart (STYLE.md): q(u) in `variational`, q(u)→q(f) in `conditionals`, the
covariances K_uu / K_uf / k_ff in `invlab.covariances` (dispatched on the inducing variable and kernel),
the likelihood's expectation in `invlab.likelihoods`. K_uu is factored by its diagonal blocks (`Kuu_blocks`;
one block for plain inducing points), and q(u) is full, diagonal or independent by block (`q_covariance`).
A family that sums a function over an orbit (invariant, convolutional) swaps the inducing variable and
kernel pair, and may override `expected_log_lik` to use its own estimators on the same whitening step
(`projections`); the objective stays this one, and `full_elbo` evaluates it over a whole data set.
"""
from __future__ import annotations

import math
import re

import numpy as np
import torch

from .. import diagnostics as dg
from ..covariances import Kff_diag, Kuf, Kuu, Kuu_blocks
from ..diagnostics import field_over_plane, hyperparameter_values
from ..errors import ConfigError
from ..inducing import InducingPoints, InducingVariables, block_sizes, initial_locations
from ..kernels import Kernel, build_kernel, median_distance
from ..likelihoods import Likelihood, likelihood_for
from ..linalg import BlockFactors, block_cholesky, whitened_solve
from .base import DataInfo, ModelFamily, Numerics, Prediction, Terms, Tunable, condition_number, seeded, tunable
from .conditionals import marginals, whitened_projections
from .config import InducingParams, KernelParams, RobustMaxLikelihoodParams, VariationalParams, kernel_options
from .registry import ELBO_TERMS, ModelSpec
from .variational import build_variational
from .words import ELBO_METRICS, HENSMAN_2013, FamilyWords


class SVGP(ModelFamily):
    """q(u) over inducing blocks (one block: all of u), K_uu factored block by block (`Kuu_blocks`)."""

    def __init__(self, kernel: Kernel, inducing: InducingVariables, likelihood: Likelihood, num_data: int, *,
                 num_latent: int = 1, whiten: bool = True, mean_field: bool = False, q_covariance: str | None = None,
                 jitter: float | None = None, task: str = "regression", num_classes: int | None = None):
        """`q_covariance`: "full", "mean-field" (independent blocks; full with one block) or "diagonal"; when None,
        "diagonal" if `mean_field` else "full"."""
        super().__init__()
        if num_data < 1:
            raise ConfigError(f"num_data must be at least 1, got {num_data}")
        self.kernel, self.inducing, self.likelihood = kernel, inducing, likelihood
        self.num_data, self.whiten, self.task, self.num_classes = num_data, whiten, task, num_classes
        self.jitter = jitter
        self.block_sizes = block_sizes(inducing)
        self.q_covariance = q_covariance or ("diagonal" if mean_field else "full")
        init = None
        if not whiten:  # start at the prior: S = K_uu
            with torch.no_grad():
                init = self.prior_cholesky()
        self.q = build_variational(self.q_covariance, self.block_sizes, num_latent, init)
        self.last_jitter = float("nan")

    # -- q(u) → q(f) ------------------------------------------------------------------------------------
    def prior_cholesky(self) -> BlockFactors:
        """Cholesky factors of the diagonal blocks of K_uu (one block: of K_uu), with jitter escalated on failure and
        remembered for the status bar; a block shared by several outputs is factored once."""
        factors = block_cholesky(Kuu_blocks(self.inducing, self.kernel), self.jitter)
        self.last_jitter = factors.jitter
        return factors

    prior_factors = prior_cholesky  # the name the block models' callers use

    def projections(self, Kuf: torch.Tensor, prior: torch.Tensor | BlockFactors | None = None):
        """(W = L_uu⁻¹ K_uf, A = W whitened or K_uu⁻¹ K_uf) for Kuf [M, K], both [M, K].

        Whitened, with one block and no factor given, chol(K_uu) and the solve go through one fused autograd function
        (`linalg.whitened_solve`), which has a much cheaper backward pass; otherwise block by block against `prior`
        (computed here when None)."""
        if prior is None and self.whiten and len(self.block_sizes) == 1:
            W, self.last_jitter = whitened_solve(Kuu(self.inducing, self.kernel), Kuf, self.jitter)
            return W, W
        return whitened_projections(Kuf, self.prior_cholesky() if prior is None else prior, self.whiten)

    def qf(self, X: torch.Tensor, Luu: torch.Tensor | BlockFactors | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Marginals of q(f) at X: mean, var [N, L]."""
        W, A = self.projections(Kuf(self.inducing, self.kernel, X), Luu)  # [M, N] each
        return marginals(W, A, Kff_diag(self.inducing, self.kernel, X), self.q)

    def kl(self, Luu: torch.Tensor | BlockFactors | None = None) -> torch.Tensor:
        """KL(q(u) ‖ p(u)): against N(0, I) when whitened, else against N(0, K_uu) with its Cholesky factor `Luu`
        (computed when omitted)."""
        if self.whiten:
            return self.q.kl()
        return self.q.kl(self.prior_cholesky() if Luu is None else Luu)

    # -- objective ----------------------------------------------------------------------------------------
    def expected_log_lik(self, X: torch.Tensor, Y: torch.Tensor, Luu: torch.Tensor | BlockFactors | None, *,
                         generator: torch.Generator | None = None, num_samples: int | None = None) -> torch.Tensor:
        """E_q[log p(y_n | f_n)] per point [B]; families with orbit estimators override this.

        `Luu` is None for whitened models (see `elbo_terms`); call `prior_cholesky()` if you need it. A family that
        samples (orbits) draws `num_samples` per input from `generator`; the plain SVGP samples nothing."""
        mean, var = self.qf(X, Luu)
        return self.likelihood.expected_log_prob(Y, mean, var)

    def elbo_terms(self, X: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
        """The ELBO on a batch X [B, ...], y [B]: (N/B) Σ_b E_{q(f_b)}[log p(y_b | f_b)] − KL(q(u) ‖ p(u)) (Hensman,
        Matthews & Ghahramani, "Scalable variational Gaussian process classification", 2015, eq. 19); `elbo`,
        `expected_log_lik` and `kl` as scalars."""
        # the whitened objective never needs L_uu itself (the KL is against N(0, I)): `qf` fuses it with the solve
        Luu = None if self.whiten else self.prior_cholesky()
        ell = self.expected_log_lik(X, self.likelihood.encode(y), Luu).sum() * (self.num_data / X.shape[0])
        kl = self.kl(Luu)
        return {"elbo": ell - kl, "expected_log_lik": ell, "kl": kl}

    def loss(self, batch) -> Terms:
        """−ELBO on the batch (X, y), with its parts."""
        X, y = batch
        parts = self.elbo_terms(X, y)
        return Terms(-parts["elbo"], parts)

    @torch.no_grad()
    def full_elbo(self, X: torch.Tensor, y: torch.Tensor, *, batch_size: int = 1000, seed: int = 0,
                  num_samples: int | None = None) -> dict[str, float]:
        """Σ_n E_q[log p(y_n | f_n)] − KL(q(u) ‖ p(u)) over a whole data set X [N, ...], y [N]: an unbiased estimate
        (exact when nothing is sampled). K_uu is factored once; the points go through in batches of `batch_size`.
        Orbit samples (`num_samples` per input; None: the training number) come from a generator seeded with `seed`,
        and Monte-Carlo likelihoods from the global stream seeded alike (and restored), so two calls agree exactly."""
        if batch_size < 1:
            raise ConfigError(f"batch_size must be at least 1, got {batch_size}")
        prior = self.prior_cholesky()
        generator = torch.Generator().manual_seed(int(seed))
        ell = X.new_zeros(())
        with seeded(seed, X.device):
            for start in range(0, X.shape[0], batch_size):
                Y = self.likelihood.encode(y[start:start + batch_size])
                ell = ell + self.expected_log_lik(X[start:start + batch_size], Y, prior, generator=generator,
                                                  num_samples=num_samples).sum()
        kl = self.kl(prior)
        ell, kl = float(ell), float(kl)
        return {"elbo": ell - kl, "expected_log_lik": ell, "kl": kl}

    # -- prediction -----------------------------------------------------------------------------------------
    def predict_standardised(self, X: torch.Tensor, y: torch.Tensor | None = None) -> Prediction:
        """The predictive at X in standardised units: q(f)'s mean and variance [N, L], and class probabilities or the
        target's mean and variance."""
        mean, var = self.qf(X)
        pred = Prediction(mean, var)
        if self.likelihood.is_classification:
            pred.probs = self.likelihood.predict_probs(mean, var)
        else:
            pred.y_mean, pred.y_var = self.likelihood.predict_mean_and_var(mean, var)
        if y is not None:
            pred.log_density = self.likelihood.log_predictive_density(y, mean, var)
        return pred

    # -- what to look at ---------------------------------------------------------------------------------------
    @torch.no_grad()
    def numerics(self) -> Numerics:
        """cond(K_uu + jitter): near 1 means K_uu ≈ σ²I, inducing inputs the kernel sees as unrelated."""
        K = Kuu(self.inducing, self.kernel)
        j = self.last_jitter if math.isfinite(self.last_jitter) else self.jitter  # before the first solve: the setting
        j = float("nan") if j is None else float(j)
        ev = torch.linalg.eigvalsh(K + j * torch.eye(K.shape[0], dtype=K.dtype, device=K.device)
                                   if math.isfinite(j) else K)
        return Numerics(jitter=j, condition=condition_number(ev), condition_of="K_uu",
                        extra={"inducing": float(K.shape[0])})

    # name prefix → what the values under it belong to, for the labels of `tunables` (subclasses extend it)
    tunable_owners: dict[str, str] = {"kernel.": ""}

    def tunables(self) -> list[Tunable]:
        """The kernel's scalar hyper-parameters and the Gaussian noise variance (vectors such as ARD are left out)."""
        return kernel_tunables(self, self.tunable_owners)

    @torch.no_grad()
    def own_diagnostics(self, data=None) -> dict[str, dg.View]:
        """The core's views: the eigenvalues of K_uu, the hyper-parameters, for image data the inducing inputs as
        images (largest inducing output first) and, for 2-D data, the posterior over the plane."""
        views: dict[str, dg.View] = {}
        if self.wants("kuu_spectrum"):
            K = Kuu(self.inducing, self.kernel).cpu().numpy()
            views["kuu_spectrum"] = dg.Spectrum(title="Eigenvalues of K_uu", values=dg.spectrum_of(K),
                                                description="A wide spread means an ill-conditioned K_uu "
                                                            "(more jitter needed).")
        if self.wants("hyperparameters"):
            views["hyperparameters"] = dg.Scalars(title=dg.hyperparameter_title(self),
                                                  values=hyperparameter_values(self))
        image_shape = getattr(self, "image_shape", None) if self.wants("inducing_inputs") else None
        if isinstance(self.inducing, InducingPoints) and image_shape is not None:
            Z = self.inducing.Z.detach().cpu().numpy()
            order = np.argsort(-self.q.q_mu.detach().cpu().numpy().max(1))  # strongest inducing outputs first
            shown = dg.how_many(min(len(Z), 32), len(Z))
            views["inducing_inputs"] = dg.ImageGrid(title=f"Inducing inputs (largest inducing output first; {shown})",
                                                    images=dg.image_grid_from_flat(Z[order], image_shape,
                                                                                   max_images=32))
        if self.wants("posterior") and data is not None and data[0].reshape(data[0].shape[0], -1).shape[1] == 2:
            views["posterior"] = field_over_plane(self, data[0], data[1])
        return views


# what a scalar learnable is, by the last part of its name: (label, natural interval, group)
HYPERPARAMETERS = {
    "lengthscale": ("lengthscale", (1e-4, 1e4), "kernel"),
    "variance": ("signal variance σ²", (1e-6, 1e4), "kernel"),
}
NOISE = ("noise variance", (1e-6, 1e3), "likelihood")


def kernel_tunables(model, owners: dict[str, str]) -> list[Tunable]:
    """Scalar lengthscales, signal variances and the Gaussian noise variance of `model` as `Tunable`s.

    `owners` maps a name prefix to the part it belongs to ("kernel.parts.0." → "RBF part"), which prefixes the
    label; learnables under no listed prefix other than the likelihood's are left out (e.g. augmentation ranges)."""
    from ..parameters import learnables

    out = []
    for name, p in learnables(model).items():
        if p.raw.numel() != 1:
            continue
        leaf = name.rsplit(".", 1)[-1]
        if name == "likelihood.variance":
            label, interval, group = NOISE
        elif leaf in HYPERPARAMETERS:
            owner = max((k for k in owners if name.startswith(k)), key=len, default=None)
            if owner is None:
                continue
            label, interval, group = HYPERPARAMETERS[leaf]
            label = f"{owners[owner]} {label}".strip() if owners[owner] else label
            layer = re.search(r"(?:^|\.)kernels\.(\d+)\.", name)  # a stack of kernels (deep kernel SVGP)
            if layer:
                label += f" of layer {int(layer.group(1)) + 1}"
        else:
            continue
        out.append(tunable(name, p, label, group=group, interval=interval))
    return out


# -- configuration and construction ----------------------------------------------------------------------------
class SVGPConfig(VariationalParams, RobustMaxLikelihoodParams, InducingParams, KernelParams):
    """A sparse variational GP with a plain kernel on the (flattened) inputs."""

    # groups are listed last-shown first: param shows the last base's parameters first (invlab.models.config)


def build_svgp(config: SVGPConfig, X: torch.Tensor, y: torch.Tensor, info: DataInfo, *,
               generator: torch.Generator | None = None) -> SVGP:
    """An SVGP for training inputs X [N, ...] and labels y, initialised from the data (Z by k-means)."""
    D = X.reshape(X.shape[0], -1).shape[1]
    ell = config.lengthscale if config.lengthscale is not None else median_distance(X)
    kernel = build_kernel(config.kernel, D, lengthscale=ell, variance=config.variance, ard=config.ard,
                          **kernel_options(config))
    M = min(config.num_inducing, X.shape[0])
    inducing = InducingPoints(initial_locations(X, M, generator), learnable=config.learn_inducing)
    likelihood = likelihood_for(config, info)
    model = SVGP(kernel, inducing, likelihood, X.shape[0], num_latent=likelihood.num_latent(info.num_classes),
                 whiten=config.whiten, mean_field=config.mean_field, task=info.task, num_classes=info.num_classes)
    model.data_info = info
    return model


# config parameter → learnable it initialises (the dashboard applies changes live)
LIVE = (("lengthscale", "kernel.lengthscale"), ("variance", "kernel.variance"),
        ("noise_variance", "likelihood.variance"))

SPEC = ModelSpec("svgp", SVGPConfig, build_svgp, "Sparse variational GP with a plain kernel (Hensman et al.)",
                 live=LIVE, terms=ELBO_TERMS, metrics=ELBO_METRICS,
                 words=FamilyWords("sparse variational GP", "a plain Gaussian process fitted through a few inducing "
                                   "points", HENSMAN_2013),
                 page={"data": {"dataset": "digits"}, "model": {}, "train": {"eval_size": 500}})
