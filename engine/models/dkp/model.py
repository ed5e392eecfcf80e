"""The deep inverse Wishart process (DIWP) and its NNGP limit (Aitchison, Yang & Ober 2021, sec. 5, Alg. 1).

One step (Alg. 1) for a batch of Pt points and Pi global inducing inputs X_i, with S Monte-Carlo samples:

  X̃ = scale ⊙ X + bias (learned per feature); the input layer gives G₁ — through Ω (eq. 18, app. F) or,
  when X̃_iX̃_iᵀ is full rank, as an inverse Wishart layer on the linear kernel (app. F, last note);
  for ℓ = 2..L: K = K(G_ℓ₋₁) on the blocks; G_ii^ℓ ~ Q, train points from the prior conditional (eq. 31–34);
  output: f_i ~ Q(f_i | G_L) (app. G) and f_t | f_i from the conditional prior;
  ELBO = (N/Pt) Σ_t E[log p(y_t | f_t)] + E[log P − log Q] over Ω, {G_ii^ℓ} and f_i (eq. 27–29).

Every train point is sampled on its own given the inducing blocks, so a step costs O(Pi³ + Pi²·Pt) (sec. 6).
`propagate` therefore runs in two phases: all inducing blocks first, then the train points in chunks small
enough for their [S, Pi, chunk] blocks to stay in cache (which keeps the cost linear in Pt in practice too).
The likelihood integrates f_t given the upstream samples in closed form (Gaussian) or by its own quadrature
/ Monte Carlo, which keeps the estimate unbiased with less variance than sampling f_t.

The NNGP is the same model with every inverse Wishart replaced by its δ → ∞ limit (Ω = I, G_ℓ = K(G_ℓ₋₁)):
deterministic kernel transforms with the same global-inducing output layer. A third baseline, the plain
SVGP with the same (NNGP) kernel, is built in `config.build_dkp_svgp` from the engine's SVGP core.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from ... import diagnostics as dg
from ... import settings
from ...errors import ConfigError, ShapeError
from ...kernels.gram import GramKernel, InputAffine, linear_gram
from ...likelihoods import Likelihood
from ..base import ModelFamily, Numerics, Prediction, Terms, Tunable, condition_number, seeded
from .layers import (
    GlobalInducingOutput,
    GramBlocks,
    InverseWishartLayer,
    KernelLayer,
    LinearInputLayer,
)
from .views import dkp_tunables, dkp_views

PREDICT_ROWS = 8192  # at most S × (test points) rows per predictive pass
CHUNK_ELEMENTS = 160_000  # numbers per [S, Pi, chunk] block of train points within one pass (about 1.3 MB)


@dataclass
class InducingSample:
    """Phase 1 of a pass: S samples of every layer's inducing block, and what phase 2 conditions on."""

    Xi: torch.Tensor  # [Pi, N0], the inducing inputs after the input affine
    logpq: torch.Tensor  # [S]: log P − log Q of Ω, {G_ii^ℓ} and f_i
    grams: list[torch.Tensor]  # G_ii^ℓ per layer [S', Pi, Pi]
    states: list  # per layer: what `condition` needs (Ω, chol(Ψ_ii), or None)
    output_kernel: torch.Tensor  # K(G_L)_ii with jitter [S', Pi, Pi]
    output_state: tuple  # (L_K, W) of the output layer


@dataclass
class Propagation:
    """One pass through the layers: q(f_t) given each upstream sample, and what the diagnostics draw."""

    mean: torch.Tensor  # [S, Pt, L]
    var: torch.Tensor  # [S, Pt, L]
    logpq: torch.Tensor  # [S]: log P − log Q of Ω, {G_ii^ℓ} and f_i
    grams: list[torch.Tensor] = field(default_factory=list)  # G_ii^ℓ per layer [S', Pi, Pi] (trace only)
    output_kernel: torch.Tensor | None = None  # K(G_L)_ii [S', Pi, Pi] (trace only)
    output_blocks: GramBlocks | None = None  # K(G_L) blocks ii, it, tt fed to the output layer (trace only)


class DeepKernelProcess(ModelFamily):
    """DIWP (stochastic layers) or NNGP (deterministic layers) with global inducing inputs Z [Pi, N0]."""

    def __init__(self, Z: torch.Tensor, affine: InputAffine, input_layer: nn.Module, hidden: list[nn.Module],
                 kernels: list[GramKernel], output: GlobalInducingOutput, likelihood: Likelihood, num_data: int, *,
                 num_samples: int = 4, num_predict_samples: int = 32, learn_inducing: bool = True,
                 task: str = "regression", num_classes: int | None = None, jitter: float | None = None):
        super().__init__()
        if len(kernels) != len(hidden) + 1:
            raise ConfigError(f"a {len(hidden) + 1}-layer process needs {len(hidden) + 1} Gram kernels, "
                              f"got {len(kernels)}")
        if num_data < 1 or num_samples < 1 or num_predict_samples < 1:
            raise ConfigError("num_data, num_samples and num_predict_samples must all be at least 1")
        self.Z = nn.Parameter(torch.as_tensor(Z, dtype=torch.float64).clone(), requires_grad=learn_inducing)  # [Pi, N0]
        self.affine, self.input_layer, self.output, self.likelihood = affine, input_layer, output, likelihood
        self.hidden = nn.ModuleList(hidden)
        self.kernels = nn.ModuleList(kernels)
        self.num_data, self.num_samples, self.num_predict_samples = (int(num_data), int(num_samples),
                                                                     int(num_predict_samples))
        self.task, self.num_classes = task, num_classes
        self.jitter = settings.default_jitter() if jitter is None else float(jitter)

    def set_kl_estimator(self, name: str) -> None:
        """'sampled': each layer's log P − log Q of its sample; 'closed_form': −KL(Q ‖ P) of each layer given the
        layer below (inverse Wishart KL, Gaussian KL at the output), an unbiased estimate with less variance."""
        if name not in ("sampled", "closed_form"):
            raise ConfigError(f"kl_estimator must be 'sampled' or 'closed_form', got {name!r}")
        for layer in (self.input_layer, *self.hidden, self.output):
            if hasattr(layer, "closed_form_kl"):
                layer.closed_form_kl = name == "closed_form"

    @property
    def num_inducing(self) -> int:
        """Pi, the number of global inducing inputs."""
        return self.Z.shape[0]

    @property
    def num_layers(self) -> int:
        """The number of layers: the hidden Gram layers plus the output layer."""
        return len(self.hidden) + 1

    @property
    def stochastic(self) -> bool:
        """Whether any layer is sampled (inverse Wishart), as opposed to the deterministic NNGP limit."""
        return not isinstance(self.input_layer, LinearInputLayer) or any(
            not isinstance(h, KernelLayer) for h in self.hidden)

    @property
    def last_jitter(self) -> float:
        """The jitter in use on the Gram matrices (reported beside the model's diagnostics)."""
        return self.jitter

    # -- one pass (Alg. 1) --------------------------------------------------------------------------------------------
    def chunk_size(self, S: int) -> int:
        """Train points per chunk: [S, Pi, chunk] blocks of about CHUNK_ELEMENTS numbers stay in cache, which keeps a
        step's cost linear in Pt in practice, not only in flops (a [4, 100, 2000] block is ~5× slower per element
        than a [4, 100, 1000] one on a 2-core CPU)."""
        return max(1, CHUNK_ELEMENTS // (S * self.num_inducing))

    def sample_inducing(self, S: int) -> InducingSample:
        """Phase 1: every layer's inducing block (O(Pi³) each), log P − log Q [S] and what phase 2 needs."""
        Xi = self.affine(self.Z)  # [Pi, N0]
        j = self.jitter
        eye = torch.eye(Xi.shape[0], dtype=Xi.dtype, device=Xi.device)
        if isinstance(self.input_layer, InverseWishartLayer):  # G₁ ~ IW(δ K0, ·) on the full-rank inducing block
            G_ii, logpq, state = self.input_layer.sample_inducing(linear_gram(Xi, Xi)[None] + j * eye, S)
        else:  # Ω (stochastic) or Ω = I (NNGP)
            G_ii, logpq, state = self.input_layer.sample_inducing(Xi, S)
        logpq = torch.zeros(S, dtype=Xi.dtype, device=Xi.device) if logpq is None else logpq
        grams, states = [G_ii], [state]
        for kernel, layer in zip(self.kernels[:-1], self.hidden):
            G_ii, lpq, state = layer.sample_inducing(kernel.K(G_ii) + j * eye, S)
            grams.append(G_ii)
            states.append(state)
            if lpq is not None:
                logpq = logpq + lpq
        K_ii = self.kernels[-1].K(G_ii) + j * eye
        lpq_out, out_state, _ = self.output.sample_inducing(K_ii, S)
        return InducingSample(Xi, logpq + lpq_out, grams, states, K_ii, out_state)

    def propagate(self, X: torch.Tensor, S: int, trace: bool = False) -> Propagation:
        """Sample every inducing block (O(Pi³) per layer), then the train points given them, chunk by chunk."""
        ind = self.sample_inducing(S)
        Xi, grams, states, j = ind.Xi, ind.grams, ind.states, self.jitter
        gram_input = isinstance(self.input_layer, InverseWishartLayer)
        # phase 2: each train point from its conditional given the inducing blocks (app. I)
        means, variances, K_its, k_tts = [], [], [], []
        for start in range(0, X.shape[0], self.chunk_size(S)):
            Xt = self.affine(X[start:start + self.chunk_size(S)])  # [Pc, N0] (checks D)
            if gram_input:
                G_it, g_tt = self.input_layer.condition(grams[0], states[0], linear_gram(Xi, Xt)[None],
                                                        ((Xt * Xt).sum(-1) / Xt.shape[-1] + j)[None])
            else:
                G_it, g_tt = self.input_layer.condition(Xi, states[0], Xt)
            for ell, (kernel, layer) in enumerate(zip(self.kernels[:-1], self.hidden)):
                d_i = grams[ell].diagonal(dim1=-2, dim2=-1)
                G_it, g_tt = layer.condition(grams[ell + 1], states[ell + 1], kernel.cross(G_it, d_i, g_tt),
                                             kernel.diag(g_tt) + j)
            K_it = self.kernels[-1].cross(G_it, grams[-1].diagonal(dim1=-2, dim2=-1), g_tt)
            k_tt = self.kernels[-1].diag(g_tt) + j
            mean, var = self.output.condition(ind.output_state, K_it, k_tt)
            means.append(mean)
            variances.append(var)
            if trace:
                K_its.append(K_it.detach())
                k_tts.append(k_tt.detach())
        out = Propagation(torch.cat(means, -2), torch.cat(variances, -2), ind.logpq)
        if trace:
            out.grams = [g.detach() for g in grams]
            out.output_kernel = ind.output_kernel.detach()
            out.output_blocks = GramBlocks(out.output_kernel, torch.cat(K_its, -1), torch.cat(k_tts, -1))
        return out

    # -- objective ----------------------------------------------------------------------------------------------------
    def _per_sample(self, fn, y, mean, var) -> torch.Tensor:
        """Apply a likelihood function to every (sample, point) pair; returns [S, Pt]."""
        S, Pt, L = mean.shape
        y_rep = y.repeat((S,) + (1,) * (y.dim() - 1))  # [S·Pt, ...], sample-major like the reshape below
        return fn(y_rep, mean.reshape(S * Pt, L), var.reshape(S * Pt, L)).reshape(S, Pt)

    def elbo_terms(self, X: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
        """The ELBO on a batch X [Pt, D], y [Pt]: (N/Pt) Σ_t E[log p(y_t | f_t)] − KL, with the KL over Ω, {G_ii} and
        f_i estimated as −E[log P − log Q] (Aitchison, Yang & Ober, "Deep kernel processes", 2021, eq. 27–29);
        returns `elbo`, `expected_log_lik` and `kl` as scalars."""
        out = self.propagate(X, self.num_samples)
        ell_pts = self._per_sample(self.likelihood.expected_log_prob, self.likelihood.encode(y), out.mean, out.var)
        ell = ell_pts.mean(0).sum() * (self.num_data / X.shape[0])
        kl = -out.logpq.mean()  # unbiased estimate of KL(Q ‖ P) over Ω, {G_ii}, f_i
        return {"elbo": ell - kl, "expected_log_lik": ell, "kl": kl}

    @torch.no_grad()
    def kl_estimate(self, num_samples: int = 256, batch: int = 64) -> float:
        """KL(Q ‖ P) over Ω, {G_ii} and f_i by Monte Carlo: only the inducing phase, so many samples are cheap."""
        draws = [self.sample_inducing(min(batch, num_samples - i)).logpq for i in range(0, num_samples, batch)]
        return float(-torch.cat(draws).mean())

    @torch.no_grad()
    def full_elbo(self, X: torch.Tensor, y: torch.Tensor, *, batch_size: int = 1000, seed: int = 0,
                  num_samples: int | None = None, kl_samples: int = 256) -> dict[str, float]:
        """An unbiased ELBO estimate over a whole data set: Σ_n E[log p(y_n | f_n)] in chunks of points (each chunk
        with `num_samples` fresh upstream samples) minus the KL estimated from `kl_samples` inducing-phase samples
        (log P − log Q of a 100-square inverse Wishart varies by tens of nats between samples). The samples are drawn
        from the random stream seeded with `seed` (and restored after), so two calls agree exactly."""
        S = int(num_samples or self.num_samples)
        ell = 0.0
        with seeded(seed, X.device):
            for i in range(0, X.shape[0], batch_size):
                xb, yb = X[i:i + batch_size], y[i:i + batch_size]
                out = self.propagate(xb, S)
                ell += float(self._per_sample(self.likelihood.expected_log_prob, self.likelihood.encode(yb), out.mean,
                                              out.var).mean(0).sum())
            kl = self.kl_estimate(kl_samples)
        return {"elbo": ell - kl, "expected_log_lik": ell, "kl": kl}

    def loss(self, batch) -> Terms:
        """−ELBO on the batch (X, y) with its parts; a batch whose inputs and labels differ in number
        raises ShapeError."""
        X, y = batch
        if X.shape[0] != y.shape[0]:
            raise ShapeError(f"a batch has {X.shape[0]} inputs but {y.shape[0]} labels")
        parts = self.elbo_terms(X, y)
        return Terms(-parts["elbo"], parts)

    # -- prediction ---------------------------------------------------------------------------------------------------
    @torch.no_grad()
    def predict_standardised(self, X: torch.Tensor, y: torch.Tensor | None = None,
                             num_samples: int | None = None) -> Prediction:
        """Predictive distribution, a mixture over `num_samples` upstream samples
        (each chunk of points draws its own)."""
        S = int(num_samples or self.num_predict_samples)
        chunk = max(1, PREDICT_ROWS // S)
        parts = [self._predict_chunk(X[i:i + chunk], None if y is None else y[i:i + chunk], S)
                 for i in range(0, X.shape[0], chunk)]
        cat = lambda name: None if getattr(parts[0], name) is None else torch.cat([getattr(p, name) for p in parts])  # noqa: E731
        return Prediction(cat("mean"), cat("var"), cat("y_mean"), cat("y_var"), cat("probs"), cat("log_density"))

    def _predict_chunk(self, X, y, S) -> Prediction:
        out = self.propagate(X, S)
        m, v = out.mean, out.var  # [S, Pt, L]
        mean = m.mean(0)
        pred = Prediction(mean, (v + m * m).mean(0) - mean * mean)
        lik = self.likelihood
        if lik.is_classification:
            probs = lik.predict_probs(m.reshape(-1, m.shape[-1]), v.reshape(-1, v.shape[-1]))  # [S·Pt, K]
            pred.probs = probs.reshape(S, X.shape[0], -1).mean(0)  # [Pt, K]
            if y is not None:
                p_y = pred.probs.gather(1, y.long().reshape(-1, 1)).squeeze(1)
                pred.log_density = torch.log(p_y.clamp_min(1e-300))
        else:
            ym, yv = lik.predict_mean_and_var(m, v)  # [S, Pt, L] each
            pred.y_mean = ym.mean(0)
            pred.y_var = (yv + ym * ym).mean(0) - pred.y_mean ** 2
            if y is not None:
                lp = self._per_sample(lik.log_predictive_density, y.reshape(X.shape[0], -1), m, v)  # [S, Pt]
                pred.log_density = torch.logsumexp(lp, 0) - math.log(S)
        return pred

    # -- what to look at (the views are built in `dkp.views`) ------------------------------------------------------
    @torch.no_grad()
    def layer_grams(self, S: int = 4) -> tuple[list[np.ndarray], np.ndarray]:
        """Samples of G_ii^ℓ per layer [S', Pi, Pi] and of the output kernel K(G_L)_ii (numpy)."""
        ind = self.sample_inducing(S)
        return [g.cpu().numpy() for g in ind.grams], ind.output_kernel.cpu().numpy()

    @torch.no_grad()
    def numerics(self) -> Numerics:
        """cond(K(G_L)_ii + jitter), the output layer's kernel at the inducing points (one sample, drawn with a fixed
        seed from a forked random stream: the figure does not jitter between calls, and training's stream is
        untouched)."""
        device = self.Z.device
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(0)
            ind = self.sample_inducing(1)
        K = ind.output_kernel[0]
        return Numerics(jitter=float(self.jitter) if self.jitter is not None else float("nan"),
                        condition=condition_number(torch.linalg.eigvalsh(0.5 * (K + K.T))), condition_of="output K_ii",
                        extra={"inducing": float(K.shape[0])})

    def tunables(self) -> list[Tunable]:
        """Each layer's δ and γ (log scale), each kernel's σ² and the Gaussian noise variance."""
        return dkp_tunables(self)

    @torch.no_grad()
    def own_diagnostics(self, data=None) -> dict[str, dg.View]:
        """The family's own views (`dkp.views.dkp_views`): each layer's Gram matrix on the inducing inputs and its
        eigenvalues (Aitchison, Yang & Ober, 2021, app. H), the output kernel, the hyper-parameters and, for 2-D data,
        the posterior over the plane."""
        return dkp_views(self, data)


__all__ = ["DeepKernelProcess", "Propagation", "InducingSample"]
