"""Gaussian Wasserstein inference in function space (Wild, Hu & Sejdinovic 2022, as in the notes).

Two steps (sec. 1.3): (1) fit the reference P's kernel by the exact marginal likelihood on M = c·√N points and
freeze it (`reference`); (2) learn the approximation Q (`approximate`) by minimising (sec. 2.1, 4.1)

    L = −Σ_n E_Q[log p(y_n | F(x_n))] + Σ_j Ŵ²(P_j, Q_j),

the expected log-likelihood estimated on a minibatch, scaled by N/B, and Ŵ² the estimate of sec. 2.1.2 on
the same minibatch (`wasserstein`). Regression uses the Gaussian likelihood (closed form, sec. 2.1.1);
multi-class classification the robust-max likelihood (sec. 3–4), E_Q[log p(y | F)] = log(1−ε) S(x, y) +
log(ε/(J−1)) (1 − S(x, y)), with S(x, j) = Q(f_j(x) is the largest) by composite Gauss–Legendre quadrature
split at every other class's step, laid out on the *standard deviation* √r_j(x, x)
(invlab.likelihoods.quadrature). Prediction: N(m_Q, r + σ²) (sec. 2.2), or Q(Y* = j) = (1−ε) S(x*, j) +
ε/(J−1) (1 − S(x*, j)) (sec. 4.2; the notes' ε/(I−1) is a typo for J − 1). Tempering α_T (sec. 2.3) is fitted
on a validation split with everything else frozen.

The validation split is carved out of the training data at build time. The trainer's minibatches are drawn
from all the training data, so the model drops validation rows from each batch in `loss` (matched by a
random-projection fingerprint, then row by row): they are never trained on. The expected log-likelihood is
still scaled by N_total / B, which keeps it unbiased for the sum over the points that are trained on. (Dropping
rows gives the batch a data-dependent size: one host sync per step, on top of the Cholesky's, and only when a
validation split exists.)
"""
from __future__ import annotations

import math

import torch

from ... import diagnostics as dg
from ...covariances import Kuu
from ...errors import ConfigError
from ...likelihoods import prob_is_largest
from ..base import ModelFamily, Numerics, Prediction, Terms, Tunable, condition_number
from ..svgp import kernel_tunables
from .approximate import ApproximateMeasure, MeanNetwork
from .tempering import gaussian_nll, gaussian_temperature, scalar_temperature
from .views import gwi_views
from .wasserstein import METHODS, W2Estimate, wasserstein_estimate

W2_PARTS = ("w2_mean", "w2_trace_p", "w2_trace_q", "w2_eigen")
# the reference kernels of Wild, Hu & Sejdinovic 2022; any registered kernel is accepted
PAPER_KERNELS = ("rbf", "arccos1", "arccos0")


class GWI(ModelFamily):
    """P (frozen kernel, zero mean) and Q (SVGP form) with the GWI objective; see the module docstring."""

    def __init__(self, kernel, Z: torch.Tensor, likelihood, num_data: int, *, num_latent: int = 1,
                 task: str = "regression", num_classes: int | None = None, init_sqrt=None, init_mean=None,
                 network: MeanNetwork | None = None, num_spectrum: int = 100, spectrum: str = "subsample",
                 jitter: float | None = None, validation: tuple[torch.Tensor, torch.Tensor] | None = None,
                 temperature_bounds: tuple[float, float] = (1e-3, 1.0)):
        super().__init__()
        if num_data < 1:
            raise ConfigError(f"num_data must be at least 1, got {num_data}")
        if spectrum not in METHODS:
            raise ConfigError(f"spectrum={spectrum!r} is not one of {', '.join(METHODS)}")
        if int(num_spectrum) < 1:
            raise ConfigError(f"num_spectrum (N_S) must be at least 1, got {num_spectrum}")
        self.kernel = kernel  # P's kernel: frozen after the reference fit
        self.Q = ApproximateMeasure(kernel, Z, num_latent, init_sqrt=init_sqrt, init_mean=init_mean, network=network,
                                    jitter=jitter)
        self.likelihood = likelihood
        self.num_data, self.task, self.num_classes = int(num_data), task, num_classes
        self.num_spectrum, self.spectrum = int(num_spectrum), spectrum
        self.temperature_bounds = tuple(float(b) for b in temperature_bounds)
        self.register_buffer("alpha_T", torch.ones((), dtype=torch.float64))
        self.history = dg.ThinnedHistory()
        self.last_spectrum: torch.Tensor | None = None
        self.last_imag: torch.Tensor | None = None
        self.reference_info: dict[str, float] = {}
        self.reference_start = ""  # which start of the reference fit was kept
        self.reference_targets: torch.Tensor | None = None
        self._set_validation(validation)

    # -- numerics knobs the trainer sets ------------------------------------------------------------------------
    @property
    def jitter(self):
        """The jitter added to Q's prior K_uu before its Cholesky factorisation; settable."""
        return self.Q.jitter

    @jitter.setter
    def jitter(self, value):
        self.Q.jitter = value

    @property
    def last_jitter(self) -> float:
        """The jitter the last factorisation of K_uu actually used (escalated when it had to be)."""
        return self.Q.last_jitter

    # -- validation split ---------------------------------------------------------------------------------------------
    def _set_validation(self, validation) -> None:
        if validation is None or validation[0].shape[0] == 0:
            self.X_val = self.y_val = self.fp_w = None
            return
        X_val, y_val = validation
        X_val = X_val.to(torch.float64)
        w = torch.randn(X_val.reshape(X_val.shape[0], -1).shape[1], generator=torch.Generator().manual_seed(12345),
                        dtype=torch.float64)
        self.register_buffer("X_val", X_val)
        self.register_buffer("y_val", y_val.clone())
        self.register_buffer("fp_w", w)  # random projection: the fingerprint of a row

    @property
    def has_validation(self) -> bool:
        """Whether a validation split is held out of the loss (for tempering the predictive)."""
        return self.X_val is not None

    def validation_mask(self, X: torch.Tensor) -> torch.Tensor:
        """[B] True for rows of X that are validation points.

        Rows are matched by a random-projection fingerprint (sorted, so O((B + V) log V)), and each candidate
        (the four nearest fingerprints, which absorbs rounding differences) is confirmed element by element.
        """
        B = X.shape[0]
        if not self.has_validation:
            return torch.zeros(B, dtype=torch.bool, device=X.device)
        Xf = X.reshape(B, -1)
        Xval = self.X_val.reshape(self.X_val.shape[0], -1).to(X.dtype)
        V = Xval.shape[0]
        w = self.fp_w.to(X.dtype)
        fp_val, order = (Xval @ w).sort()
        pos = torch.searchsorted(fp_val, (Xf @ w).contiguous())  # [B]
        tol = 1e3 * torch.finfo(X.dtype).eps * (1.0 + Xf.abs().amax(1))  # [B]
        hit = torch.zeros(B, dtype=torch.bool, device=X.device)
        for shift in (-2, -1, 0, 1):
            rows = order[(pos + shift).clamp(0, V - 1)]
            hit |= (Xf - Xval[rows]).abs().amax(1) <= tol
        return hit

    # -- objective ------------------------------------------------------------------------------------------------
    def w2(self, X: torch.Tensor, Luu: torch.Tensor | None = None, index: torch.Tensor | None = None,
           marginals: tuple[torch.Tensor, torch.Tensor] | None = None) -> W2Estimate:
        """Ŵ²(P_j, Q_j) for every latent j on the points X (sub-sample X_S = X[index], random by default)."""
        Luu = self.Q.prior_cholesky() if Luu is None else Luu
        mean, var = self.Q.marginals(X, Luu) if marginals is None else marginals
        return wasserstein_estimate(self.kernel, self.Q, X, mean, var, Luu, num_spectrum=self.num_spectrum,
                                    method=self.spectrum, index=index)

    def loss(self, batch) -> Terms:
        """The GWI objective on a batch (X, y): −(N/B) Σ_n E_Q[log p(y_n | F(x_n))] + Ŵ²(P, Q), validation rows left out
        (Wild, Hu & Sejdinovic, "Generalized variational inference in function spaces: Gaussian measures meet
        Bayesian deep learning", 2022, sec. 2.1, 4.1); parts `expected_log_lik` and `w2`."""
        X, y = batch
        B = X.shape[0]
        if self.has_validation:
            keep = ~self.validation_mask(X)
            if bool(keep.any()):  # a batch of validation points only (tiny batches) falls back to itself
                X, y = X[keep], y[keep]
        Luu = self.Q.prior_cholesky()
        mean, var = self.Q.marginals(X, Luu)  # [B', L]
        ell = self.likelihood.expected_log_prob(self.likelihood.encode(y), mean, var).sum() * (self.num_data / B)
        est = self.w2(X, Luu, marginals=(mean, var))
        w2 = est.total.sum()  # Σ_j over the latent functions (sec. 4.1)
        parts = {"expected_log_lik": ell, "w2": w2, "w2_mean": est.mean.sum(), "w2_trace_p": est.trace_p.sum(),
                 "w2_trace_q": est.trace_q.sum(), "w2_eigen": est.eigen.sum()}
        if torch.is_grad_enabled():
            self.history.record({k: parts[k].detach() for k in ("w2",) + W2_PARTS})
            self.last_spectrum = est.spectrum.detach()
            self.last_imag = None if est.imag is None else est.imag.detach()
        return Terms(-ell + w2, parts)

    # -- prediction -----------------------------------------------------------------------------------------------
    def marginals(self, X: torch.Tensor, chunk: int = 4096) -> tuple[torch.Tensor, torch.Tensor]:
        """Q's marginal means and variances at X [N, L] each, computed in chunks of `chunk` rows."""
        Luu = self.Q.prior_cholesky()
        out = [self.Q.marginals(X[s:s + chunk], Luu) for s in range(0, X.shape[0], chunk)]
        return torch.cat([m for m, _ in out]), torch.cat([v for _, v in out])

    def prob_is_largest(self, X: torch.Tensor) -> torch.Tensor:
        """S(x, j) = Q(f_j(x) > f_l(x) for all l ≠ j) [N, J] (sec. 4.1.1), by composite Gauss–Legendre quadrature."""
        mean, var = self.marginals(X)
        return prob_is_largest(mean, var, self.likelihood.num_points)

    def predict_standardised(self, X: torch.Tensor, y: torch.Tensor | None = None,
                             tempered: bool = False) -> Prediction:
        """The predictive at X in standardised units from Q's marginals; `tempered` scales the variance by the learned
        temperature α_T (Wild, Hu & Sejdinovic, 2022, sec. 4.2)."""
        mean, var = self.marginals(X)
        alpha = self.alpha_T.to(mean.dtype) if tempered else 1.0
        pred = Prediction(mean, var)
        if self.likelihood.is_classification:
            pred.probs = self.likelihood.predict_probs(mean, alpha * var)
            if y is not None:
                pred.log_density = self.likelihood.log_predictive_density(y, mean, alpha * var)
        else:
            pred.y_mean, pred.y_var = mean, alpha * (var + self.likelihood.variance())
            if y is not None:
                yy = y.reshape(mean.shape).to(mean.dtype)
                pred.log_density = (-0.5 * (math.log(2 * math.pi) + torch.log(pred.y_var))
                                    - 0.5 * (yy - mean) ** 2 / pred.y_var).sum(-1)
        return pred

    @torch.no_grad()
    def fit_temperature(self, X_val: torch.Tensor | None = None, y_val: torch.Tensor | None = None) -> float:
        """α_T minimising the validation NLL with everything else frozen (sec. 2.3); stored in `alpha_T`."""
        if X_val is None:
            if not self.has_validation:
                raise ConfigError("this model has no validation split (validation_fraction = 0): pass X_val and y_val")
            X_val, y_val = self.X_val.to(self.alpha_T.dtype), self.y_val
        lo, hi = self.temperature_bounds
        mean, var = self.marginals(X_val)
        if self.likelihood.is_classification:
            def nll(alpha):
                return -float(self.likelihood.log_predictive_density(y_val, mean, alpha * var).mean())
            alpha = scalar_temperature(nll, lo, hi)
        else:
            alpha = gaussian_temperature(y_val.to(mean.dtype), mean, var + self.likelihood.variance(), lo, hi)
        self.alpha_T.fill_(alpha)
        return alpha

    @torch.no_grad()
    def validation_nll(self, alpha: float = 1.0, X_val=None, y_val=None) -> float:
        """Mean validation NLL at temperature α (standardised units for regression)."""
        if X_val is None:
            X_val, y_val = self.X_val.to(self.alpha_T.dtype), self.y_val
        mean, var = self.marginals(X_val)
        if self.likelihood.is_classification:
            return -float(self.likelihood.log_predictive_density(y_val, mean, alpha * var).mean())
        return float(gaussian_nll(y_val.to(mean.dtype), mean, var + self.likelihood.variance(), alpha))

    @torch.no_grad()
    def metrics(self, X: torch.Tensor, y: torch.Tensor, batch_size: int = 1024) -> dict[str, float]:
        """The shared metrics (untempered), plus `nlpd_tempered` with α_T refitted on the validation split."""
        out = super().metrics(X, y, batch_size)
        if self.has_validation:
            self.fit_temperature()
        nll, n = 0.0, 0
        for start in range(0, X.shape[0], batch_size):
            xb, yb = X[start:start + batch_size], y[start:start + batch_size]
            nll -= float(self.predict_standardised(xb, yb, tempered=True).log_density.sum())
            n += xb.shape[0]
        out["nlpd_tempered"] = nll / n + (0.0 if self.task == "classification" else math.log(self.y_std))
        return out

    # -- what to look at --------------------------------------------------------------------------------------------
    @torch.no_grad()
    def numerics(self) -> Numerics:
        """cond(K_uu + jitter) of Q's inducing points; `extra` has the largest imaginary part of the W2 spectrum."""
        K = Kuu(self.Q.inducing, self.kernel)
        # before the first solve: the setting
        j = self.last_jitter if math.isfinite(self.last_jitter) else (self.jitter or 0.0)
        ev = torch.linalg.eigvalsh(K + j * torch.eye(K.shape[0], dtype=K.dtype, device=K.device))
        extra = {"inducing": float(K.shape[0])}
        if self.last_imag is not None:
            extra["spectrum_imag"] = float(self.last_imag.max())
        return Numerics(jitter=float(j), condition=condition_number(ev), condition_of="K_uu", extra=extra)

    def tunables(self) -> list[Tunable]:
        """The Gaussian noise variance (regression); P's kernel stays as the reference fit left it."""
        return kernel_tunables(self, {})

    @torch.no_grad()
    def own_diagnostics(self, data=None) -> dict[str, dg.View]:
        """The family's own views (`gwi.views.gwi_views`): the spectrum of the W2 operator estimate (Wild, Hu &
        Sejdinovic, 2022, sec. 2.1.2), the parts of the W2 estimate over training, the hyper-parameters (P frozen) and,
        for 2-D data, the posterior over the plane."""
        return gwi_views(self, data)


__all__ = ["GWI", "W2_PARTS", "PAPER_KERNELS"]
