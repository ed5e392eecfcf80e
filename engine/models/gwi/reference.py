"""The reference measure P of Gaussian Wasserstein inference (Wild, Hu & Sejdinovic 2022, sec. 1.1, 1.3, 1.4, 1.4.1).

P = N(0, C_k) is a zero-mean GP with an ARD RBF or an arc-cosine (NNGP) kernel k. Its hyper-parameters,
and the observation noise σ², are fitted by maximising the exact log marginal likelihood (sec. 1.4.1)

    log p(y_Z) = −½ log|K_ZZ + σ²I| − ½ y_Zᵀ (K_ZZ + σ²I)⁻¹ y_Z − (M/2) log 2π

on M = c·√N training points X_Z (c configurable), which costs O(M³) = O(N^{3/2}) (sec. 1.3); then the
kernel is frozen. The same M points are the inducing inputs of the approximating measure Q.

On M ≈ √N points that one maximisation is fragile: with ARD lengthscales it can interpolate its M points
(σ² → 0, some lengthscales far below the data's spacing, the rest → ∞), and the frozen P then spoils Q. The
notes give the evidence as "one example" of tuning P, so `fit_reference_robust` keeps it but makes it sturdy:

- σ² gets the boundary-avoiding Gamma(2, 0) penalty + log σ² (Chung et al. 2013): the maximum is never at
  σ² = 0, and elsewhere the evidence moves by O(1) nats at most;
- several starts — the given kernel, its shared-lengthscale version (one ℓ for all inputs), ARD started from
  the shared optimum, each from two initial noise levels;
- the start kept is the one whose P, conditioned on the M points, best predicts M *other* training points
  (log p(y_H | y_Z), the predictive density of sec. 2.2.1): a held-out check costing O(M³) like the fit.

Classification has no exact marginal likelihood. The J latent GPs share one kernel (sec. 3: i.i.d. GPs),
fitted here on the centred one-hot labels Y_Z [M, J] by the sum of the J Gaussian marginal likelihoods —
the usual regression-on-labels proxy (the notes leave the choice open).
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import torch

from ...errors import ConfigError
from ...kernels import Kernel
from ...kernels.base import Stationary
from ...linalg import robust_cholesky
from ...parameters import Positive, learnables, positive_init

LOG_2PI = math.log(2.0 * math.pi)
# On M ~ √N points the evidence can prefer interpolation (σ² → 0); the floor keeps K_ZZ + σ²I and the
# closed-form Σ of sec. 1.6.1 well conditioned. Regression goes on learning σ² in the GWI objective.
NOISE_FLOOR = 1e-4


def reference_size(num_data: int, factor: float) -> int:
    """M = c·√N, at least 1 and at most N."""
    if not factor > 0:
        raise ConfigError(f"inducing_factor c must be positive (M = c·√N), got {factor}")
    return int(min(max(round(factor * math.sqrt(num_data)), 1), num_data))


def exact_log_marginal_likelihood(kernel: Kernel, X: torch.Tensor, Y: torch.Tensor, noise: torch.Tensor,
                                  jitter: float | None = None) -> torch.Tensor:
    """Σ_l log N(Y[:, l]; 0, K + σ²I) for X [M, D], Y [M, L]: the exact GP evidence, O(M³)."""
    M = X.shape[0]
    K = kernel.K(X) + noise * torch.eye(M, dtype=X.dtype, device=X.device)
    L = robust_cholesky(K, jitter, what="K_ZZ + σ²I").L
    alpha = torch.linalg.solve_triangular(L, Y, upper=False)  # [M, L] = L⁻¹ Y
    logdet = 2.0 * torch.log(L.diagonal()).sum()
    return -0.5 * ((alpha ** 2).sum() + Y.shape[1] * (logdet + M * LOG_2PI))


def held_out_log_density(kernel: Kernel, X: torch.Tensor, Y: torch.Tensor, noise: float, X_H: torch.Tensor,
                         Y_H: torch.Tensor, jitter: float | None = None) -> float:
    """Mean over the points of X_H [H, D] of Σ_l log N(Y_H[:, l]; μ, v + σ²): the predictive density of the GP
    conditioned on (X [M, D], Y [M, L]) (sec. 2.2.1), point by point. O(M³ + H·M²)."""
    M = X.shape[0]
    with torch.no_grad():
        K = kernel.K(X) + noise * torch.eye(M, dtype=X.dtype, device=X.device)
        L = robust_cholesky(K, jitter, what="K_ZZ + σ²I").L
        A = torch.linalg.solve_triangular(L, kernel.K(X, X_H), upper=False)  # [M, H] = L⁻¹ K_ZH
        mean = A.T @ torch.linalg.solve_triangular(L, Y, upper=False)  # [H, L]
        var = (kernel.K_diag(X_H) - (A * A).sum(0) + noise).clamp_min(1e-12)[:, None]  # [H, 1]
        logp = -0.5 * (LOG_2PI + torch.log(var) + (Y_H - mean) ** 2 / var)
    return float(logp.sum(1).mean())


def fit_reference(kernel: Kernel, X: torch.Tensor, Y: torch.Tensor, noise: float, *, steps: int = 100,
                  jitter: float | None = None, learn_noise: bool = True, noise_penalty: bool = False,
                  freeze: bool = True) -> tuple[float, float]:
    """Maximise the exact marginal likelihood over the kernel's hyper-parameters and σ² by L-BFGS, then freeze
    the kernel. With `noise_penalty`, maximise it plus log σ² (the Gamma(2, 0) boundary-avoiding prior).
    Returns (σ², log marginal likelihood at the optimum)."""
    noise_p = Positive(positive_init(noise, "noise_variance"), floor=NOISE_FLOOR, name="noise_variance").to(X.dtype)
    noise_p.frozen = not learn_noise
    params = [p.raw for p in learnables(kernel).values() if not p.frozen]
    if learn_noise:
        params.append(noise_p.raw)
    if steps > 0 and params:
        opt = torch.optim.LBFGS(params, lr=1.0, max_iter=steps, history_size=20, line_search_fn="strong_wolfe",
                                tolerance_grad=1e-9, tolerance_change=1e-12)

        def closure():
            opt.zero_grad(set_to_none=True)
            sigma2 = noise_p()
            objective = exact_log_marginal_likelihood(kernel, X, Y, sigma2, jitter)
            if noise_penalty and learn_noise:
                objective = objective + torch.log(sigma2)
            loss = -objective / X.shape[0]
            loss.backward()
            return loss

        good = [p.detach().clone() for p in params]
        try:
            opt.step(closure)
        except Exception:  # a diverged line search: keep the initial values rather than garbage
            with torch.no_grad():
                for p, g in zip(params, good):
                    p.copy_(g)
        with torch.no_grad():
            if not all(torch.isfinite(p).all() for p in params):
                for p, g in zip(params, good):
                    p.copy_(g)
    if freeze:
        for p in learnables(kernel).values():
            p.frozen = True  # P is fixed from here on (sec. 1.3, step 1)
    with torch.no_grad():
        lml = float(exact_log_marginal_likelihood(kernel, X, Y, noise_p(), jitter))
    return float(noise_p().detach()), lml


@dataclass
class ReferenceFit:
    """One start of the robust fit: its name, σ², evidence on the M points and held-out log density per point."""

    start: str
    noise: float
    log_marginal_likelihood: float
    held_out: float | None
    state: dict

    @property
    def score(self) -> float:
        """What picks the start: the held-out density when there is one, else the evidence (−inf if not finite)."""
        value = self.held_out if self.held_out is not None else self.log_marginal_likelihood
        return value if math.isfinite(value) else -math.inf


def _shared_lengthscale(kernel: Stationary) -> Stationary:
    """A copy of an ARD kernel whose lengthscales are tied to one value (their geometric mean)."""
    shared = copy.deepcopy(kernel)
    ell = kernel.lengthscale().detach()
    shared.ard = False
    shared.lengthscale = type(kernel.lengthscale)(ell.log().mean().exp(), floor=kernel.lengthscale.floor,
                                                  name="lengthscale").to(ell.dtype)
    return shared


def _as_ard(shared: Stationary, like: Stationary) -> Stationary:
    """`like` (an ARD kernel) with every lengthscale and the variance set from the shared-lengthscale `shared`."""
    out = copy.deepcopy(like)
    with torch.no_grad():
        out.lengthscale.assign(shared.lengthscale().detach().expand_as(like.lengthscale()).clone())
        out.variance.assign(shared.variance().detach())
    return out


def fit_reference_robust(kernel: Kernel, X: torch.Tensor, Y: torch.Tensor, noise: float, *,
                         held_out: tuple[torch.Tensor, torch.Tensor] | None = None, steps: int = 100,
                         jitter: float | None = None,
                         learn_noise: bool = True) -> tuple[float, float, list[ReferenceFit]]:
    """The evidence fit of P from several starts with σ² kept off zero, the start chosen by held-out density.

    Starts (see the module docstring): the given kernel; for an ARD stationary kernel also its shared-lengthscale
    version and ARD from the shared optimum; each from the given σ² and from half the targets' variance (when σ²
    is learned). The winner's values are written into `kernel`, which is then frozen. Returns (σ², log marginal
    likelihood, every start's `ReferenceFit`, best first).
    """
    noises = [float(noise)]
    if learn_noise and steps > 0:
        half = 0.5 * float(Y.var(0, unbiased=False).mean()) if Y.shape[0] > 1 else 0.0
        if half > 2 * NOISE_FLOOR and not math.isclose(half, noise, rel_tol=0.1):
            noises.append(half)
    ard = isinstance(kernel, Stationary) and kernel.ard and kernel.lengthscale().numel() > 1
    fits: list[ReferenceFit] = []

    def run(start: str, k: Kernel, s2: float) -> Kernel:
        try:
            n, lml = fit_reference(k, X, Y, s2, steps=steps, jitter=jitter, learn_noise=learn_noise,
                                   noise_penalty=True, freeze=False)
            h = None if held_out is None else held_out_log_density(k, X, Y, n, *held_out, jitter=jitter)
        except Exception:  # a start whose matrices cannot be factorised loses; the others stand
            n, lml, h = s2, -math.inf, None if held_out is None else -math.inf
        fits.append(ReferenceFit(start, n, lml, h, copy.deepcopy(k.state_dict())))
        return k

    for s2 in noises:
        tag = f"σ² from {s2:.3g}"
        run(f"given kernel, {tag}", copy.deepcopy(kernel), s2)
        if ard and steps > 0:
            shared = run(f"shared lengthscale, {tag}", _shared_lengthscale(kernel), s2)
            tied = _as_ard(shared, kernel)
            fits[-1].state = copy.deepcopy(tied.state_dict())  # kept in the kernel's own (ARD) shape
            run(f"ARD from the shared lengthscale, {tag}", tied, s2)
    fits.sort(key=lambda f: f.score, reverse=True)
    best = fits[0]
    kernel.load_state_dict(best.state)
    for p in learnables(kernel).values():
        p.frozen = True  # P is fixed from here on (sec. 1.3, step 1)
    return best.noise, best.log_marginal_likelihood, fits
