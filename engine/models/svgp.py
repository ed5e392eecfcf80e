"""Sparse variational GP (Hensman et al. 2013/2015; GPflow's SVGP), the core the other families reuse.

ELBO = (N/B) Σ_{b ∈ batch} E_{q(f_b)}[log p(y_b | f_b)] − KL(q(u) ‖ p(u)).

The pieces are kept apart (STYLE.md): q(u) in `variational`, q(u)→q(f) in `conditionals`, the
covariances K_uu / K_uf / k_ff in `engine.covariances` (dispatched on the inducing variable and kernel),
the likelihood's expectation in `engine.likelihoods`. A family that sums a function over an orbit
(invariant, convolutional) swaps the inducing variable and kernel pair, and may override
`expected_log_lik` to use its own estimators; the objective stays this one.
"""
from __future__ import annotations

import math
import re

import numpy as np
import torch

from .. import diagnostics as dg
from ..covariances import Kff_diag, Kuf, Kuu
from ..errors import ConfigError
from ..inducing import InducingPoints, InducingVariables, initial_locations
from ..kernels import Kernel, build_kernel
from ..likelihoods import Likelihood, build_likelihood
from ..linalg import robust_cholesky, whitened_solve
from .base import DataInfo, ModelFamily, Numerics, Prediction, Terms, Tunable, condition_number, tunable
from .conditionals import project, project_whitened
from .config import InducingParams, KernelParams, RobustMaxLikelihoodParams, VariationalParams
from .registry import ModelSpec
from .variational import VariationalDistribution


class SVGP(ModelFamily):
    def __init__(self, kernel: Kernel, inducing: InducingVariables, likelihood: Likelihood, num_data: int, *,
                 num_latent: int = 1, whiten: bool = True, mean_field: bool = False, jitter: float | None = None,
                 task: str = "regression", num_classes: int | None = None):
        super().__init__()
        if num_data < 1:
            raise ConfigError(f"num_data must be at least 1, got {num_data}")
        self.kernel, self.inducing, self.likelihood = kernel, inducing, likelihood
        self.num_data, self.whiten, self.task, self.num_classes = num_data, whiten, task, num_classes
        self.jitter = jitter
        init_sqrt = None
        if not whiten:  # start at the prior: S = K_uu
            with torch.no_grad():
                init_sqrt = self.prior_cholesky().detach()
        self.q = VariationalDistribution(inducing.num_inducing, num_latent, mean_field=mean_field, init_sqrt=init_sqrt)
        self.last_jitter = float("nan")

    # -- q(u) → q(f) ------------------------------------------------------------------------------------
    def prior_cholesky(self) -> torch.Tensor:
        """Cholesky factor of K_uu (+ jitter, escalated on failure and remembered for the status bar)."""
        result = robust_cholesky(Kuu(self.inducing, self.kernel), self.jitter)
        self.last_jitter = result.jitter
        return result.L

    def qf(self, X: torch.Tensor, Luu: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Marginals of q(f) at X: mean, var [N, L].

        Whitened and without a given factor, K_uu's Cholesky and the solve L⁻¹K_uf go through one fused
        autograd function (`linalg.whitened_solve`), which has a much cheaper backward pass.
        """
        q_sqrt = self.q.q_sqrt_diag if self.q.mean_field else self.q.sqrt()
        Kmn, kff = Kuf(self.inducing, self.kernel, X), Kff_diag(self.inducing, self.kernel, X)
        if Luu is None and self.whiten:
            W, self.last_jitter = whitened_solve(Kuu(self.inducing, self.kernel), Kmn, self.jitter)
            return project_whitened(W, kff, self.q.q_mu, q_sqrt)
        Luu = self.prior_cholesky() if Luu is None else Luu
        return project(Kmn, Luu, kff, self.q.q_mu, q_sqrt, self.whiten)

    def kl(self, Luu: torch.Tensor | None = None) -> torch.Tensor:
        if self.whiten:
            return self.q.kl()
        return self.q.kl(self.prior_cholesky() if Luu is None else Luu)

    # -- objective ----------------------------------------------------------------------------------------
    def expected_log_lik(self, X: torch.Tensor, Y: torch.Tensor, Luu: torch.Tensor | None) -> torch.Tensor:
        """E_q[log p(y_n | f_n)] per point [B]; families with orbit estimators override this.

        `Luu` is None for whitened models (see `elbo_terms`); call `prior_cholesky()` if you need it."""
        mean, var = self.qf(X, Luu)
        return self.likelihood.expected_log_prob(Y, mean, var)

    def elbo_terms(self, X: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
        # the whitened objective never needs L_uu itself (the KL is against N(0, I)): `qf` fuses it with the solve
        Luu = None if self.whiten else self.prior_cholesky()
        ell = self.expected_log_lik(X, self.likelihood.encode(y), Luu).sum() * (self.num_data / X.shape[0])
        kl = self.kl(Luu)
        return {"elbo": ell - kl, "expected_log_lik": ell, "kl": kl}

    def loss(self, batch) -> Terms:
        X, y = batch
        parts = self.elbo_terms(X, y)
        return Terms(-parts["elbo"], parts)

    # -- prediction -----------------------------------------------------------------------------------------
    def predict(self, X: torch.Tensor, y: torch.Tensor | None = None) -> Prediction:
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
        ev = torch.linalg.eigvalsh(K + j * torch.eye(K.shape[0], dtype=K.dtype, device=K.device) if math.isfinite(j) else K)
        return Numerics(jitter=j, condition=condition_number(ev), condition_of="K_uu", extra={"inducing": float(K.shape[0])})

    # name prefix → what the values under it belong to, for the labels of `tunables` (subclasses extend it)
    tunable_owners: dict[str, str] = {"kernel.": ""}

    def tunables(self) -> list[Tunable]:
        """The kernel's scalar hyper-parameters and the Gaussian noise variance (vectors such as ARD are left out)."""
        return kernel_tunables(self, self.tunable_owners)

    @torch.no_grad()
    def diagnostics(self, data=None) -> dict[str, dg.View]:
        views: dict[str, dg.View] = {}
        K = Kuu(self.inducing, self.kernel).cpu().numpy()
        views["kuu_spectrum"] = dg.Spectrum(title="Eigenvalues of K_uu", values=dg.spectrum_of(K),
                                            description="A wide spread means an ill-conditioned K_uu (more jitter needed).")
        views["hyperparameters"] = dg.Scalars(title="Hyper-parameters", values=hyperparameter_values(self))
        image_shape = getattr(self, "image_shape", None)
        if isinstance(self.inducing, InducingPoints) and image_shape is not None:
            Z = self.inducing.Z.detach().cpu().numpy()
            order = np.argsort(-self.q.q_mu.detach().cpu().numpy().max(1))  # strongest inducing outputs first
            views["inducing_inputs"] = dg.ImageGrid(title="Inducing inputs (largest inducing output first)",
                                                    images=dg.image_grid_from_flat(Z[order], image_shape))
        if data is not None and data[0].reshape(data[0].shape[0], -1).shape[1] == 2:
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


def hyperparameter_values(model) -> dict[str, float]:
    """Scalar summaries of every constrained parameter (vectors are summarised by their mean)."""
    from ..parameters import learnables

    out = {}
    for name, p in learnables(model).items():
        v = p().detach()
        out[name if v.numel() == 1 else f"{name} (mean of {v.numel()})"] = float(v.mean())
    return out


@torch.no_grad()
def field_over_plane(model, X: torch.Tensor, y: torch.Tensor, resolution: int = 60) -> dg.Field2D:
    """The posterior mean (regression) or P(class 1) / top class (classification) over the input plane."""
    X2 = X.reshape(X.shape[0], -1)
    lo, hi = X2.min(0).values, X2.max(0).values
    pad = 0.1 * (hi - lo).clamp_min(1e-6)
    gx = torch.linspace(float(lo[0] - pad[0]), float(hi[0] + pad[0]), resolution, dtype=X.dtype, device=X.device)
    gy = torch.linspace(float(lo[1] - pad[1]), float(hi[1] + pad[1]), resolution, dtype=X.dtype, device=X.device)
    G = torch.stack(torch.meshgrid(gx, gy, indexing="xy"), -1).reshape(-1, 2)  # [R², 2]
    pred = model.predict(G)
    contour = None
    if pred.probs is not None:
        values = pred.probs[:, 1] if pred.probs.shape[1] == 2 else pred.probs.argmax(-1).to(X.dtype)
        contour = 0.5 if pred.probs.shape[1] == 2 else None
        title = "P(class 1)" if pred.probs.shape[1] == 2 else "Predicted class"
    else:
        values, title = pred.y_mean[:, 0], "Posterior mean"
    return dg.Field2D(title=title, x=gx.cpu().numpy(), y=gy.cpu().numpy(),
                      values=values.reshape(resolution, resolution).cpu().numpy(), points=X2.cpu().numpy(),
                      point_labels=y.cpu().numpy(), contour=contour)


# -- configuration and construction ----------------------------------------------------------------------------
class SVGPConfig(VariationalParams, RobustMaxLikelihoodParams, InducingParams, KernelParams):
    """A sparse variational GP with a plain kernel on the (flattened) inputs."""

    # groups are listed last-shown first: param shows the last base's parameters first (engine.models.config)


def median_distance(X: torch.Tensor, max_points: int = 500) -> float:
    X = X.reshape(X.shape[0], -1)[:max_points]
    d = torch.cdist(X, X)
    d = d[torch.triu(torch.ones_like(d, dtype=torch.bool), diagonal=1)]
    return max(float(d.median()), 1e-3) if d.numel() else 1.0


def build_svgp(config: SVGPConfig, X: torch.Tensor, y: torch.Tensor, info: DataInfo, *,
               generator: torch.Generator | None = None) -> SVGP:
    """An SVGP for training inputs X [N, ...] and labels y, initialised from the data (Z by k-means)."""
    D = X.reshape(X.shape[0], -1).shape[1]
    ell = config.lengthscale if config.lengthscale is not None else median_distance(X)
    kernel = build_kernel(config.kernel, D, lengthscale=ell, variance=config.variance, ard=config.ard, degree=config.degree)
    M = min(config.num_inducing, X.shape[0])
    inducing = InducingPoints(initial_locations(X, M, generator), learnable=config.learn_inducing)
    likelihood = build_likelihood(config.likelihood, info.task, info.num_classes, noise_variance=config.noise_variance,
                                  epsilon=config.epsilon)
    model = SVGP(kernel, inducing, likelihood, X.shape[0], num_latent=likelihood.num_latent(info.num_classes),
                 whiten=config.whiten, mean_field=config.mean_field, task=info.task, num_classes=info.num_classes)
    model.data_info = info
    return model


# config parameter → learnable it initialises (the dashboard applies changes live)
LIVE = (("lengthscale", "kernel.lengthscale"), ("variance", "kernel.variance"),
        ("noise_variance", "likelihood.variance"))

SPEC = ModelSpec("svgp", SVGPConfig, build_svgp, "Sparse variational GP with a plain kernel (Hensman et al.)",
                 live=LIVE)
