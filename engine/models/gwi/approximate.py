"""The approximating measure Q of Gaussian Wasserstein inference (Wild, Hu & Sejdinovic 2022, sec. 1.5–1.6).

Mean (sec. 1.5.1, optionally plus a network g, sec. 1.5.2), with m_P = 0:
    m_Q(x) = Σ_m β_m k(x, z_m) [+ g(x)]
Kernel (sec. 1.6.1), Σ = L_Σ L_Σᵀ:
    r(x, x') = k(x, x') − k(x, Z) K_ZZ⁻¹ k(Z, x') + k(x, Z) Σ k(Z, x')
with L_Σ initialised in closed form (sec. 1.6.1)
    L_Σ = chol([K_ZZ + σ⁻² K_ZX K_XZ + λI]⁻¹)
and learned afterwards. (With λ = 0 this Σ, and β = Σ K_ZX y / σ², are Titsias' optimal SVGP posterior.)

This is the SVGP's q(f) for q(u) = N(K_ZZ β, K_ZZ Σ K_ZZ), so the marginals come from the engine's SVGP
pieces: β and L_Σ live in a `VariationalDistribution` (q_mu ≡ β, q_sqrt ≡ L_Σ), and `conditionals.project`
in whitened coordinates (m = L_uuᵀ β, S^½ = L_uuᵀ L_Σ) gives m_Q and r(x, x). The W2 estimate also needs
r between two sets of points, formed by `covariance` with the same factors.
"""
from __future__ import annotations

import torch
from torch import nn

from ...covariances import Kff_diag, Kuf, Kuu
from ...inducing import InducingPoints
from ...kernels import Kernel
from ...linalg import robust_cholesky
from ..conditionals import project
from ..variational import VariationalDistribution


class MeanNetwork(nn.Module):
    """g(x): a small tanh MLP on the flattened inputs (sec. 1.5.2). Its last layer starts at zero, so Q starts
    at the SVGP-form mean."""

    def __init__(self, input_dim: int, num_latent: int, width: int = 50, depth: int = 1):
        super().__init__()
        layers: list[nn.Module] = []
        d = input_dim
        for _ in range(depth):
            layers += [nn.Linear(d, width, dtype=torch.float64), nn.Tanh()]
            d = width
        last = nn.Linear(d, num_latent, dtype=torch.float64)
        nn.init.zeros_(last.weight)
        nn.init.zeros_(last.bias)
        self.net = nn.Sequential(*layers, last)

    def forward(self, X: torch.Tensor) -> torch.Tensor:  # [N, L]
        """The learned mean function m_Q(X) [N, L] on the flattened inputs."""
        return self.net(X.reshape(X.shape[0], -1))


class ApproximateMeasure(nn.Module):
    """Q = N(m_Q, C_r) in SVGP form on M fixed inducing inputs Z (the points P was fitted on)."""

    def __init__(self, kernel: Kernel, Z: torch.Tensor, num_latent: int = 1, *, init_sqrt: torch.Tensor | None = None,
                 init_mean: torch.Tensor | None = None, network: MeanNetwork | None = None,
                 jitter: float | None = None):
        super().__init__()
        self.kernel = kernel
        self.inducing = InducingPoints(Z, learnable=False)
        M = self.inducing.num_inducing
        self.q = VariationalDistribution(M, num_latent, init_sqrt=init_sqrt)  # q_mu ≡ β [M, L], sqrt ≡ L_Σ [L, M, M]
        if init_mean is not None:
            with torch.no_grad():
                self.q.q_mu.copy_(torch.as_tensor(init_mean, dtype=self.q.q_mu.dtype).reshape(M, num_latent))
        self.network = network
        self.jitter = jitter
        self.last_jitter = float("nan")

    @property
    def num_inducing(self) -> int:
        """M, the number of inducing inputs Z."""
        return self.inducing.num_inducing

    @property
    def num_latent(self) -> int:
        """L, the number of latent functions."""
        return self.q.num_latent

    @property
    def beta(self) -> torch.Tensor:  # [M, L]
        """β [M, L], the coefficients of Q's mean on the inducing inputs."""
        return self.q.q_mu

    def sqrt(self) -> torch.Tensor:  # L_Σ [L, M, M]
        """L_Σ [L, M, M], the lower-triangular factor of Σ."""
        return self.q.sqrt()

    def Sigma(self) -> torch.Tensor:  # [L, M, M]
        """Σ = L_Σ L_Σᵀ [L, M, M], the covariance parameter of Q's covariance operator."""
        L = self.sqrt()
        return L @ L.transpose(-1, -2)

    @torch.no_grad()
    def set(self, beta: torch.Tensor, sqrt: torch.Tensor) -> None:
        """Set β [M, L] and L_Σ [L, M, M] (or [M, M], shared by all outputs)."""
        self.q.set(beta, sqrt)

    def prior_cholesky(self) -> torch.Tensor:
        """Cholesky factor of K_ZZ (+ jitter, escalated on failure); r uses the same jittered K_ZZ."""
        result = robust_cholesky(Kuu(self.inducing, self.kernel), self.jitter)
        self.last_jitter = result.jitter
        return result.L

    def _whitened(self, Luu: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # q(u) = N(K β, K Σ K) in whitened coordinates v = L⁻¹u: m_v = Lᵀβ, S_v^½ = Lᵀ L_Σ
        return Luu.T @ self.beta, Luu.T @ self.sqrt()

    def marginals(self, X: torch.Tensor, Luu: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """m_Q(x) and r(x, x) at X [N, ...]: each [N, L]."""
        Luu = self.prior_cholesky() if Luu is None else Luu
        q_mu, q_sqrt = self._whitened(Luu)
        mean, var = project(Kuf(self.inducing, self.kernel, X), Luu, Kff_diag(self.inducing, self.kernel, X), q_mu,
                            q_sqrt, whiten=True)
        if self.network is not None:
            mean = mean + self.network(X)
        return mean, var

    def mean(self, X: torch.Tensor, Luu: torch.Tensor | None = None) -> torch.Tensor:
        """Q's mean m_Q(X) [N, L] (Wild, Hu & Sejdinovic, 2022, sec. 2.1)."""
        return self.marginals(X, Luu)[0]

    def covariance(self, A: torch.Tensor, B: torch.Tensor | None = None,
                   Luu: torch.Tensor | None = None) -> torch.Tensor:
        """r(A, B) [L, N_A, N_B] = k(A, B) − W_Aᵀ W_B + (L_Σᵀ K_ZA)ᵀ (L_Σᵀ K_ZB), W = L_uu⁻¹ K_Z·."""
        Luu = self.prior_cholesky() if Luu is None else Luu
        same = B is None
        Kza = Kuf(self.inducing, self.kernel, A)  # [M, N_A]
        Kzb = Kza if same else Kuf(self.inducing, self.kernel, B)
        Wa = torch.linalg.solve_triangular(Luu, Kza, upper=False)
        Wb = Wa if same else torch.linalg.solve_triangular(Luu, Kzb, upper=False)
        Lt = self.sqrt().transpose(-1, -2)  # [L, M, M]
        Ua = Lt @ Kza  # [L, M, N_A]
        Ub = Ua if same else Lt @ Kzb
        Kab = self.kernel.K(A) if same else self.kernel.K(A, B)
        return (Kab - Wa.T @ Wb)[None] + Ua.transpose(-1, -2) @ Ub


@torch.no_grad()
def closed_form_init(kernel: Kernel, Z: torch.Tensor, X: torch.Tensor, Y: torch.Tensor | None, noise: float,
                     regulariser: float = 0.0, jitter: float | None = None, chunk: int = 4096
                     ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """L_Σ = chol([K_ZZ + σ⁻² K_ZX K_XZ + λI]⁻¹) (sec. 1.6.1) [M, M], and β = Σ K_ZX Y / σ² [M, L] when Y is given.

    K_ZX K_XZ and K_ZX Y are accumulated over chunks of X, so memory stays O(M·chunk); the cost is O(N M²).
    """
    M = Z.shape[0]
    G = torch.zeros(M, M, dtype=Z.dtype, device=Z.device)
    b = None if Y is None else torch.zeros(M, Y.shape[1], dtype=Z.dtype, device=Z.device)
    for start in range(0, X.shape[0], chunk):
        Kzx = kernel.K(Z, X[start:start + chunk])  # [M, chunk]
        G += Kzx @ Kzx.T
        if b is not None:
            b += Kzx @ Y[start:start + chunk].to(Z.dtype)
    A = kernel.K(Z) + G / noise + regulariser * torch.eye(M, dtype=Z.dtype, device=Z.device)
    # λ is the regulariser of sec. 1.6.1; jitter (default none) is only added, escalating, if factorising fails
    LA = robust_cholesky(0.5 * (A + A.T), 0.0 if jitter is None else jitter, what="K_ZZ + σ⁻² K_ZX K_XZ + λI").L
    Sigma = torch.cholesky_inverse(LA)
    L = robust_cholesky(0.5 * (Sigma + Sigma.T), 0.0, what="Σ").L
    beta = None if b is None else Sigma @ b / noise
    return L, beta
