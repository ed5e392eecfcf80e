"""The layers of a deep inverse Wishart process and of its NNGP limit (Aitchison, Yang & Ober 2021, sec. 5, Alg. 1, app.
F, G, I).

Every layer works in two phases, as Alg. 1 does: `sample_inducing` draws the inducing block G_ii [S, Pi, Pi]
(O(Pi³)) and returns its contribution log P − log Q [S] to the ELBO (eq. 27–29) and a state; `condition`
then gives the inducing–train block G_it [S, Pi, Pt] and the train diagonal g_tt [S, Pt] given that state —
never a [Pt, Pt] block, because train/test points are sampled one at a time from their conditional given the
inducing block (app. I), O(Pi²) per point, in whatever chunks of points the caller likes. `forward` runs both
on `GramBlocks`. S is the number of Monte-Carlo samples (1 in deterministic NNGP layers, broadcast later).

- `OmegaInputLayer`: the singular input layer, Ω ~ Q(Ω) = IW(δ₁I + V₁V₁ᵀ, δ₁ + γ₁ + N0 + 1) with prior
  IW(δ₁I, δ₁ + N0 + 1), and G₁ = X̃ΩX̃ᵀ/N0 for inducing and train points alike (eq. 18, 21, app. F).
- `InverseWishartLayer`: G_ii ~ Q = IW(δK_ii + VVᵀ, δ + γ + Pi + 1), prior IW(δK_ii, δ + Pi + 1), then each
  train point from the *prior* conditional with Ψ = δK (eq. 21, 31–34, Alg. 1). Used for hidden layers,
  and for the input layer when the inducing points' input Gram X̃_iX̃_iᵀ/N0 is full rank (app. F, last note).
- `LinearInputLayer` / `KernelLayer`: the deterministic δ → ∞ limits (Ω = I; G = K): the NNGP.
- `GlobalInducingOutput`: the output layer with Q(f_λ | G_L) ∝ N(f_λ; 0, K_ii) N(v_λ; f_λ, Λ_λ⁻¹) (app. G),
  then each train point's f from the conditional prior given the inducing outputs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from ...errors import ConfigError
from ...kernels.gram import linear_gram
from ...linalg import robust_cholesky
from ...parameters import LogPositive
from .wishart import InverseWishart, inverse_wishart_conditional, inverse_wishart_kl


@dataclass
class GramBlocks:
    """ii [S, Pi, Pi], it [S, Pi, Pt], tt [S, Pt] (S may be 1 and broadcast)."""

    ii: torch.Tensor
    it: torch.Tensor
    tt: torch.Tensor

    def with_jitter(self, jitter: float) -> "GramBlocks":
        """Add jitter to every diagonal entry (inducing and train), i.e. the kernel K + jitter·I, consistently."""
        if jitter <= 0:
            return self
        eye = torch.eye(self.ii.shape[-1], dtype=self.ii.dtype, device=self.ii.device)
        return GramBlocks(self.ii + jitter * eye, self.it, self.tt + jitter)


def input_blocks(Xi: torch.Tensor, Xt: torch.Tensor) -> GramBlocks:
    """The input layer's linear Gram X̃X̃ᵀ/N0 in blocks, with a leading sample dimension of 1."""
    return GramBlocks(linear_gram(Xi, Xi)[None], linear_gram(Xi, Xt)[None], ((Xt * Xt).sum(-1) / Xt.shape[-1])[None])


class OmegaInputLayer(nn.Module):
    """Singular input layer through Ω [N0, N0] (eq. 18, 21, app. F eq. 95–96).

    Two phases, like every layer here: `sample_inducing` draws Ω ~ Q and returns G₁'s inducing block, its
    log P − log Q and the state (Ω) that `condition` uses to give the train points' blocks — exactly, since
    G₁ = X̃ΩX̃ᵀ/N0 needs no conditional sampling.
    """

    def __init__(self, input_dim: int, delta: float, gamma: float, learn_delta: bool = True):
        super().__init__()
        self.N0 = int(input_dim)
        self.delta = LogPositive(delta, name="delta")
        self.gamma = LogPositive(gamma, name="gamma")
        self.delta.frozen = not learn_delta
        # VVᵀ = γ I makes Q's mean (δI + VVᵀ)/(δ + γ) the prior's mean I at the start (and V = 0 would be a
        # stationary point: ∂(VVᵀ)/∂V vanishes there)
        self.V = nn.Parameter(math.sqrt(gamma) * torch.eye(self.N0, dtype=torch.float64))
        self.closed_form_kl = False  # log P − log Q of the sample (False) or −KL(Q ‖ P) in closed form (True)

    def distributions(self):
        """The prior P(Ω) = IW(δI, δ + N0 + 1) and the approximate posterior Q(Ω) = IW(δI + VVᵀ, δ + γ + N0 + 1) of the
        input layer (Aitchison, Yang & Ober, "Deep kernel processes", 2021, eq. 18, app. F)."""
        d, g, N0 = self.delta(), self.gamma(), self.N0
        eye = torch.eye(N0, dtype=self.V.dtype, device=self.V.device)
        prior = InverseWishart(d + N0 + 1, scale_tril=d.sqrt() * eye)
        post = InverseWishart(d + g + N0 + 1, scale=d * eye + self.V @ self.V.T)
        return prior, post

    def sample_inducing(self, Xi: torch.Tensor, S: int):
        """Xi [Pi, N0] → G_ii [S, Pi, Pi], log P − log Q [S], Ω [S, N0, N0]."""
        prior, post = self.distributions()
        sample = post.rsample_with_factor((S,))
        if self.closed_form_kl:
            logpq = -inverse_wishart_kl(post, prior).expand(S)  # [S]
        else:
            logpq = prior.log_prob(sample) - post.log_prob(sample)  # [S]
        Omega = sample.value
        return Xi @ Omega @ Xi.T / self.N0, logpq, Omega

    def condition(self, Xi: torch.Tensor, Omega: torch.Tensor, Xt: torch.Tensor):
        """G_it [S, Pi, Pt] and g_tt [S, Pt] for train inputs Xt [Pt, N0]."""
        OXt = Omega @ Xt.T  # [S, N0, Pt]
        return Xi @ OXt / self.N0, (Xt.T * OXt).sum(-2) / self.N0

    def forward(self, Xi: torch.Tensor, Xt: torch.Tensor, S: int):
        """The first layer's Gram blocks for inducing inputs Xi [Pi, N0] and train inputs Xt [Pt, N0] from S samples of
        Ω: (GramBlocks, log P − log Q [S], Ω)."""
        G_ii, logpq, Omega = self.sample_inducing(Xi, S)
        return GramBlocks(G_ii, *self.condition(Xi, Omega, Xt)), logpq, Omega


class LinearInputLayer(nn.Module):
    """δ → ∞ limit of the input layer: Ω = I, G₁ = X̃X̃ᵀ/N0."""

    def sample_inducing(self, Xi: torch.Tensor, S: int):
        """G₁ on the inducing inputs, X̃_i X̃_iᵀ / N0 [1, Pi, Pi]; nothing is sampled (no log-density ratio, no state)."""
        return linear_gram(Xi, Xi)[None], None, None

    def condition(self, Xi: torch.Tensor, state, Xt: torch.Tensor):
        """G₁'s cross block [1, Pi, Pt] and the train points' diagonal [1, Pt] of X̃X̃ᵀ / N0."""
        return linear_gram(Xi, Xt)[None], ((Xt * Xt).sum(-1) / Xt.shape[-1])[None]

    def forward(self, Xi, Xt, S: int):
        """The first layer's Gram blocks X̃X̃ᵀ / N0 for inducing inputs Xi and train inputs Xt; no sample, no
        log-density ratio."""
        return input_blocks(Xi, Xt), None, None


class InverseWishartLayer(nn.Module):
    """G_ℓ | G_ℓ₋₁: Q(G_ii) = IW(δK_ii + VVᵀ, δ + γ + Pi + 1); train points from the prior conditional (Alg. 1).

    `sample_inducing(K_ii, S)` draws the inducing block (O(Pi³)); `condition(G_ii, state, K_it, k_tt)` then samples
    each train point given it (O(Pi²) per point, app. I), so the points can be processed in any chunks.
    """

    def __init__(self, num_inducing: int, delta: float, gamma: float, V_init: torch.Tensor | None = None,
                 learn_delta: bool = True):
        super().__init__()
        self.Pi = int(num_inducing)
        self.delta = LogPositive(delta, name="delta")
        self.gamma = LogPositive(gamma, name="gamma")
        self.delta.frozen = not learn_delta
        if V_init is None:
            V_init = math.sqrt(gamma) * torch.eye(self.Pi, dtype=torch.float64)
        if V_init.shape != (self.Pi, self.Pi):
            raise ConfigError(f"V must be {self.Pi}×{self.Pi} (Pi × Pi), got {tuple(V_init.shape)}")
        self.V = nn.Parameter(V_init.to(torch.float64).clone())
        self.closed_form_kl = False  # log P − log Q of the sample, or −KL(Q ‖ P) given K_ii in closed form

    def sample_inducing(self, K_ii: torch.Tensor, S: int):
        """K_ii = K(G_ℓ₋₁)_ii [S or 1, Pi, Pi] (jitter on the diagonal) → G_ii [S, Pi, Pi], log P − log Q [S], state."""
        d, g, Pi = self.delta(), self.gamma(), self.Pi
        K_ii = K_ii.expand(S, Pi, Pi) if K_ii.shape[0] == 1 else K_ii
        Lk = robust_cholesky(K_ii, 0.0, what="K_ii (inverse Wishart layer)").L  # escalates only on failure
        psi_chol = d.sqrt() * Lk  # chol(δ K_ii)
        prior = InverseWishart(d + Pi + 1, scale_tril=psi_chol)
        post = InverseWishart(d + g + Pi + 1, scale=d * K_ii + self.V @ self.V.T)
        sample = post.rsample_with_factor()
        if self.closed_form_kl:
            logpq = -inverse_wishart_kl(post, prior)  # [S]: E over G_ii given this K_ii, exactly
        else:
            logpq = prior.log_prob(sample) - post.log_prob(sample)  # [S]
        return sample.value, logpq, psi_chol

    def condition(self, G_ii: torch.Tensor, psi_chol: torch.Tensor, K_it: torch.Tensor, k_tt: torch.Tensor):
        """Per-point (g_it [S, Pi, Pt], g_tt [S, Pt]) from the prior conditional with Ψ = δK (eq. 31–34)."""
        d = self.delta()
        return inverse_wishart_conditional(G_ii, psi_chol, d * K_it, d * k_tt, d)

    def forward(self, K: GramBlocks, S: int):
        """K: the kernel blocks K(G_ℓ₋₁) (jitter already on their diagonal). Returns G_ℓ's blocks and
        log P − log Q [S]."""
        G_ii, logpq, state = self.sample_inducing(K.ii, S)
        return GramBlocks(G_ii, *self.condition(G_ii, state, K.it, K.tt)), logpq


class KernelLayer(nn.Module):
    """δ → ∞ limit of a hidden layer: G_ℓ = K(G_ℓ₋₁) exactly (the NNGP)."""

    def sample_inducing(self, K_ii: torch.Tensor, S: int):
        """The deterministic (NNGP) layer: G_ii = K_ii unchanged, no log-density ratio or state."""
        return K_ii, None, None

    def condition(self, G_ii, state, K_it, k_tt):
        """The train points' blocks unchanged: G_it = K_it, g_tt = k_tt."""
        return K_it, k_tt

    def forward(self, K: GramBlocks, S: int):
        """The layer's Gram blocks are the kernel's: K passes through, with no log-density ratio."""
        return K, None


class GlobalInducingOutput(nn.Module):
    """Q(f_λ | G_L) ∝ N(f_λ; 0, K_ii) N(v_λ; f_λ, Λ_λ⁻¹) per output λ (app. G, eq. 97–98), in whitened coordinates.

    With K_ii = L_K L_Kᵀ, f = L_K w and Λ_λ = M_λ M_λᵀ: Q(w) = N(A⁻¹ L_Kᵀ Λ v, A⁻¹), A = I + L_Kᵀ Λ L_K ⪰ I,
    so every factorisation is well conditioned however ill-conditioned K_ii is. log P(f) − log Q(f) =
    log N(w; 0, I) − log N(w; A⁻¹b, A⁻¹) (the Jacobian of f = L_K w cancels). Train points: f_t | w ~
    N(aᵀw, k_tt − ‖a‖²) with a = L_K⁻¹ k_it, left as a mean and variance for the likelihood to integrate.
    """

    def __init__(self, num_inducing: int, num_latent: int, v_init: torch.Tensor | None = None,
                 precision: float = 1.0):
        super().__init__()
        Pi, Lo = int(num_inducing), int(num_latent)
        if not precision > 0:
            raise ConfigError(f"output_precision must be positive, got {precision}")
        v = torch.zeros(Pi, Lo, dtype=torch.float64) if v_init is None else torch.as_tensor(v_init, dtype=torch.float64)
        if v.shape != (Pi, Lo):
            raise ConfigError(f"inducing outputs v must be [Pi, L] = [{Pi}, {Lo}], got {tuple(v.shape)}")
        self.v = nn.Parameter(v.clone())  # [Pi, L]: the desired outputs at the inducing inputs
        self.prec_tril_raw = nn.Parameter(math.sqrt(precision) * torch.eye(Pi, dtype=torch.float64).expand(Lo, Pi, Pi)
                                          .clone())  # [L, Pi, Pi]
        self.closed_form_kl = False  # log P − log Q of the sample, or −KL(Q(w) ‖ N(0, I)) given K_ii

    @property
    def prec_tril(self) -> torch.Tensor:
        """The lower-triangular factor of the precisions Λ_λ of the pseudo-observations v_λ [L, Pi, Pi] (Aitchison, Yang
        & Ober, 2021, app. G)."""
        return torch.tril(self.prec_tril_raw)

    def sample_inducing(self, K_ii: torch.Tensor, S: int):
        """K_ii = K(G_L)_ii [S', Pi, Pi] (jitter on the diagonal) → log P − log Q [S], state (L_K, W),
        f_i [S, Pi, L]."""
        Lk = robust_cholesky(K_ii, 0.0, what="K_ii (output layer)").L  # [S', Pi, Pi], S' ∈ {1, S}
        M = self.prec_tril  # [L, Pi, Pi]
        Pi, Lo = M.shape[-1], M.shape[0]
        C = Lk.transpose(-1, -2)[:, None] @ M  # [S', L, Pi, Pi] = L_Kᵀ M_λ
        eye = torch.eye(Pi, dtype=M.dtype, device=M.device)
        R = torch.linalg.cholesky(eye + C @ C.transpose(-1, -2))  # chol(A_λ)  [S', L, Pi, Pi]
        b = C @ (M.transpose(-1, -2) @ self.v.T[..., None])  # L_Kᵀ Λ_λ v_λ  [S', L, Pi, 1]
        mu = torch.cholesky_solve(b, R)  # [S', L, Pi, 1]
        eps = torch.randn((S, Lo, Pi, 1), dtype=M.dtype, device=M.device)
        w = mu + torch.linalg.solve_triangular(R.transpose(-1, -2), eps, upper=True)  # [S, L, Pi, 1]
        logdet_R = torch.log(R.diagonal(dim1=-2, dim2=-1)).sum((-2, -1))  # [S']
        if self.closed_form_kl:  # KL(N(μ, A⁻¹) ‖ N(0, I)) = ½(tr A⁻¹ + ‖μ‖² − Pi) + ½ log|A|, summed over outputs
            Rinv = torch.linalg.solve_triangular(R, eye.expand(R.shape), upper=False)  # tr A⁻¹ = ‖R⁻¹‖²
            kl = 0.5 * ((Rinv ** 2).sum((-2, -1)) + (mu ** 2).sum((-2, -1)) - Pi).sum(-1) + logdet_R  # [S']
            logpq = -kl.expand(S)
        else:
            logpq = -0.5 * (w ** 2).sum((-3, -2, -1)) + 0.5 * (eps ** 2).sum((-3, -2, -1)) - logdet_R  # [S]
        W = w[..., 0].transpose(-1, -2)  # [S, Pi, L]
        return logpq, (Lk, W), Lk @ W

    def condition(self, state, K_it: torch.Tensor, k_tt: torch.Tensor):
        """q(f_t | f_i): mean [S, Pt, L] and variance [S, Pt, L] of each train point given the inducing outputs."""
        Lk, W = state
        a = torch.linalg.solve_triangular(Lk, K_it, upper=False)  # [S', Pi, Pt]
        mean = a.transpose(-1, -2) @ W  # [S, Pt, L]
        var = (k_tt - (a * a).sum(-2)).clamp_min(1e-12 * k_tt.abs().clamp_min(1e-300))  # [S', Pt]
        return mean, var[..., None].expand(mean.shape)

    def forward(self, K: GramBlocks, S: int):
        """K: blocks of K(G_L) (jitter on the diagonal). Returns mean [S, Pt, L], var [S, Pt, L], log P − log Q [S]
        and the inducing outputs f_i [S, Pi, L]."""
        logpq, state, f_i = self.sample_inducing(K.ii, S)
        mean, var = self.condition(state, K.it, K.tt)
        return mean, var, logpq, f_i


__all__ = ["GramBlocks", "input_blocks", "OmegaInputLayer", "LinearInputLayer", "InverseWishartLayer",
           "KernelLayer", "GlobalInducingOutput"]
