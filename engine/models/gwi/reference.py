"""The reference measure P of Gaussian Wasserstein inference (paper 003, sec. 1.1, 1.3, 1.4, 1.4.1).

P = N(0, C_k) is a zero-mean GP with an ARD RBF or an arc-cosine (NNGP) kernel k. Its hyper-parameters,
and the observation noise σ², are fitted by maximising the exact log marginal likelihood (sec. 1.4.1)

    log p(y_Z) = −½ log|K_ZZ + σ²I| − ½ y_Zᵀ (K_ZZ + σ²I)⁻¹ y_Z − (M/2) log 2π

on M = c·√N training points X_Z (c configurable), which costs O(M³) = O(N^{3/2}) (sec. 1.3); then the
kernel is frozen. The same M points are the inducing inputs of the approximating measure Q.

Classification has no exact marginal likelihood. The J latent GPs share one kernel (sec. 3: i.i.d. GPs),
fitted here on the centred one-hot labels Y_Z [M, J] by the sum of the J Gaussian marginal likelihoods —
the usual regression-on-labels proxy (the notes leave the choice open).
"""
from __future__ import annotations

import math

import torch

from ...errors import ConfigError
from ...kernels import Kernel
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


def fit_reference(kernel: Kernel, X: torch.Tensor, Y: torch.Tensor, noise: float, *, steps: int = 100,
                  jitter: float | None = None, learn_noise: bool = True) -> tuple[float, float]:
    """Maximise the exact marginal likelihood over the kernel's hyper-parameters and σ² by L-BFGS, then freeze
    the kernel. Returns (σ², log marginal likelihood at the optimum)."""
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
            loss = -exact_log_marginal_likelihood(kernel, X, Y, noise_p(), jitter) / X.shape[0]
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
    for p in learnables(kernel).values():
        p.frozen = True  # P is fixed from here on (sec. 1.3, step 1)
    with torch.no_grad():
        lml = float(exact_log_marginal_likelihood(kernel, X, Y, noise_p(), jitter))
    return float(noise_p().detach()), lml
