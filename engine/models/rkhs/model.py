"""The RKHS invariance machine of (Zhang, Lee & Teh 2013): regularised risk with invariances as bounded
linear functionals, solved over the representer expansion by L-BFGS (eq. 2–4, sec. 5).

    min_α  J(α) = λ Σ_{i≤l} w_i ℓ₁(f(x_i) + b, y_i)  +  ν Σ_{i>l} ℓ₂(L_i(f))  +  ½ αᵀ K α,   f = Σ_b α_b z_b   (eq. 4)

over the representers z_b of the l labelled evaluations and the m invariance functionals (Thm 2, eq. 3), with
an optional unpenalised bias b (the F + H version of the representer theorem, sec. 3). `Terms.parts` are the
three summands: `data_loss` (λ Σ w ℓ₁), `invariance_loss` (ν Σ ℓ₂) and `norm` (½ αᵀKα = ½‖f‖²). The
objective is convex in (α, b) for every loss offered, and deterministic: `loss(batch)` ignores the batch,
because the expansion is fixed when the model is built (the trainer hands L-BFGS the full batch anyway).

Semi-supervised mode (sec. 3, 6.1–6.2) puts the invariance functionals at unlabelled points too.

The solver is L-BFGS (`torch.optim.LBFGS`, strong-Wolfe line search) in one of two parametrisations of the same
problem: the paper's α (`whiten=False`), whose Gram products use eq. 11 for partial derivatives and never
materialise their block; or, by default, β with α = U Λ^{-1/2} β from K = U Λ Uᵀ, which turns ½αᵀKα into ½‖β‖²
and removes K's condition number (often 1e15 for a Gaussian kernel) from the problem: L-BFGS then needs tens of
iterations where over α it needs thousands (see `whitening`). Whitening materialises K once (B ≤ max_dense).

ν and λ are held as fixed `NonNegative` values, so the dashboard's ν slider (`live` in the registry) sets
them while training runs and the next L-BFGS step re-solves; the kernel's hyper-parameters are fixed too (eq. 4
is not an evidence: minimising it over ℓ is meaningless). Fixed values are buffers, not parameters, because
torch's L-BFGS adds its (zero) update to every parameter it holds, frozen or not, which would bump their
version counters and make the cached Gram matrix look stale at every evaluation.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from ... import diagnostics as dg
from ...errors import ConfigError, ShapeError
from ...parameters import NonNegative, fix
from ..base import ModelFamily, Numerics, Prediction, Terms, Tunable, condition_number, tunable
from .functionals import Evaluation, Functionals
from .gram import RepresenterGram
from .losses import TASKS, data_loss, data_loss_names, invariance_loss, invariance_loss_names
from .solver import minimise, minimise_recorded
from .targets import encode_targets
from .views import SPECTRUM_MAX, decision_field, rkhs_views

PREDICT_CHUNK = 2048


def _checked_losses(task: str, loss: str, invariance_loss: str, smoothing: float, epsilon: float) -> str:
    """The data loss `loss` stands for on `task` ("auto": logistic for classes, squared for regression), with the
    invariance loss, the smoothing width h and the ε-insensitive width checked; refusals name the choices."""
    if task not in TASKS:
        raise ConfigError(f"task must be classification or regression, got {task!r}")
    loss = ("logistic" if task == "classification" else "squared") if loss == "auto" else loss
    if loss not in data_loss_names(task):
        raise ConfigError(f"loss={loss!r} does not suit {task}; choose one of {', '.join(data_loss_names(task))}")
    if invariance_loss not in invariance_loss_names():
        raise ConfigError(f"invariance_loss={invariance_loss!r}; choose one of {', '.join(invariance_loss_names())}")
    if not smoothing > 0:
        raise ConfigError(f"smoothing (the width h of the quadratic smoothing) must be positive, got {smoothing}")
    if epsilon < 0:
        raise ConfigError(f"epsilon must be ≥ 0, got {epsilon}")
    return loss


class RKHSMachine(ModelFamily):
    """f = Σ_b α_b z_b (+ b) over labelled evaluations and invariance functionals; J(α) of eq. 4."""

    def __init__(self, kernel, X_labelled: torch.Tensor, y_labelled: torch.Tensor, invariances: list[Functionals], *,
                 task: str = "classification", num_classes: int | None = 2, loss: str = "auto",
                 invariance_loss: str = "squared", lam: float = 1.0, nu: float = 0.1, bias: bool = True,
                 epsilon: float = 0.1, smoothing: float = 0.5, weights: torch.Tensor | None = None, fast: bool = True,
                 unlabelled: torch.Tensor | None = None, max_dense: int = 8000, whiten: bool = True,
                 eig_floor: float = 1e-12, loss_options: dict | None = None,
                 invariance_loss_options: dict | None = None):
        """Checks the choices, stores the labelled data as buffers, builds the representers' Gram matrix over the
        labelled evaluations and the invariance functionals, and the coefficients α (or β when `whiten`) [B, C]."""
        super().__init__()
        self.task, self.num_classes = task, num_classes
        self.loss_name = _checked_losses(task, loss, invariance_loss, smoothing, epsilon)
        self.invariance_loss_name = invariance_loss
        self.loss_options, self.invariance_loss_options = dict(loss_options or {}), dict(invariance_loss_options or {})
        self.epsilon, self.smoothing = float(epsilon), float(smoothing)
        self.eig_floor = float(eig_floor)
        XL = X_labelled.reshape(X_labelled.shape[0], -1)
        like = {"dtype": XL.dtype, "device": XL.device}  # everything follows the inputs (CPU or CUDA)
        self._store_data(XL, y_labelled, weights, unlabelled, like)
        kernel = fix(kernel).to(**like)
        self.gram = RepresenterGram(kernel, [Evaluation(XL)] + list(invariances), fast=fast, max_dense=max_dense)
        self.num_labelled = XL.shape[0]
        self._make_coefficients(self.gram.size, self.num_outputs, bool(whiten), bias, max_dense, like)
        self.nu = fix(NonNegative(nu, name="nu")).to(**like)
        self.lam = fix(NonNegative(lam, name="lam")).to(**like)
        self.trace: list[dict[str, float]] = []  # the objective's parts per L-BFGS iteration of `fit`
        self.tangent_preview = None  # (images [n, C, H, W], tangents [n, T, C, H, W], names) for diagnostics
        self._spectrum = (None, None)

    def _store_data(self, XL: torch.Tensor, y_labelled, weights, unlabelled, like: dict) -> None:
        """The labels [l], their encoded targets [l, C], the points' weights w [l] and the unlabelled inputs [u, D],
        as buffers (they follow the model to a device); sets `num_outputs` C."""
        y = torch.as_tensor(y_labelled, device=XL.device)
        if y.shape != (XL.shape[0],):
            raise ShapeError(f"labels must be [{XL.shape[0]}] to match the labelled inputs, got {tuple(y.shape)}")
        labels, targets = encode_targets(y, self.task, self.num_classes, XL.dtype)
        self.num_outputs = targets.shape[1]
        self.register_buffer("labels", labels)
        self.register_buffer("targets", targets)
        w = torch.ones(XL.shape[0], **like) if weights is None else torch.as_tensor(weights, **like)
        self.register_buffer("weights", w)
        self.register_buffer("unlabelled", (unlabelled if unlabelled is not None else XL[:0]).reshape(-1, XL.shape[1]))

    def _make_coefficients(self, B: int, C: int, whiten: bool, bias: bool, max_dense: int, like: dict) -> None:
        """The representer coefficients: α [B, C] (the paper's), or β [B, C] with α = W β when whitened (W = U Λ^{-1/2}
        from K = U Λ Uᵀ, filled by `whitening`), and the unpenalised bias b [C] when asked for."""
        self.whiten = whiten
        if whiten and B > max_dense:
            raise ConfigError(f"whiten=True needs the dense {B}×{B} Gram matrix, above max_dense = {max_dense}; use "
                              "whiten=False (the paper's α parametrisation, with eq. 11 for partial derivatives) or "
                              "fewer functionals")
        if whiten:  # α = W β with W = U Λ^{-1/2} (see `whitening`)
            self.beta = nn.Parameter(torch.zeros(B, C, **like))
            self.register_buffer("W", torch.zeros(B, B, **like))  # U Λ^{-1/2}, 0 beyond the rank
            self.register_buffer("evals", torch.zeros(B, **like))  # Λ, 0 beyond the rank
            self._whitening_key = None
        else:
            self.alpha = nn.Parameter(torch.zeros(B, C, **like))
        self.rank = None
        self.bias = nn.Parameter(torch.zeros(C, **like)) if bias else None

    @property
    def kernel(self):
        """The kernel k whose RKHS the machine's function lives in."""
        return self.gram.kernel

    @property
    def invariance_blocks(self) -> list[Functionals]:
        """The invariance functionals' blocks (every block after the labelled evaluations)."""
        return list(self.gram.blocks)[1:]

    # -- parametrisation ---------------------------------------------------------------------------------------------
    @torch.no_grad()
    def whitening(self) -> tuple[torch.Tensor, torch.Tensor]:
        """W = U Λ^{-1/2} and Λ from K = U Λ Uᵀ, over the eigenvalues above eig_floor·λ_max (the others set to 0).

        With α = W β, ½ αᵀKα = ½‖β‖² and K α = W Λ β: the same convex problem, but its Hessian I + (KW)ᵀ D (KW)
        is well conditioned, where over α it inherits K's condition number (often 1e15 for a Gaussian kernel) and
        L-BFGS crawls. Dropping K's null space loses nothing: f = Σ α_b z_b depends on α only through K α. When
        the kernel changes (a value set live) β is carried over so that α, and f, stay where they were."""
        key = self.gram.state_key()
        if self._whitening_key == key:
            return self.W, self.evals
        alpha_old = self.W @ self.beta if self._whitening_key is not None else None
        evals, U = torch.linalg.eigh(self.gram.full())
        keep = evals > self.eig_floor * evals[-1].clamp_min(1e-300)
        root = torch.where(keep, evals.clamp_min(1e-300).sqrt(), torch.zeros_like(evals))
        self.W.copy_(U * torch.where(keep, 1.0 / root.clamp_min(1e-300), torch.zeros_like(root)))
        self.evals.copy_(torch.where(keep, evals, torch.zeros_like(evals)))
        if alpha_old is not None:
            self.beta.copy_((U * root).T @ alpha_old)  # β = Λ^{1/2} Uᵀ α: α's component in the range of K
        self.rank = int(keep.sum())
        self._whitening_key = key
        return self.W, self.evals

    def coefficients(self) -> torch.Tensor:
        """α of the representer expansion f = Σ_b α_b z_b (eq. 3): [B, C]."""
        if self.whiten:
            W, _ = self.whitening()
            return W @ self.beta
        return self.alpha

    # -- objective (eq. 4) -------------------------------------------------------------------------------------------
    def objective_terms(self) -> dict[str, torch.Tensor]:
        """The three summands of J(α) (Zhang, Lee & Teh, 2013, eq. 4): `data_loss` λ Σ w ℓ₁, `invariance_loss` ν Σ ℓ₂
        and `norm` ½ αᵀKα, as scalars."""
        if self.whiten:
            W, evals = self.whitening()
            Fv = W @ (evals[:, None] * self.beta)  # K α = U Λ^{1/2} β: every functional's value at f  [B, C]
            norm = 0.5 * (self.beta**2).sum()  # ½ αᵀKα = ½‖f‖²
        else:
            Fv = self.gram.matmul(self.alpha)
            norm = 0.5 * (self.alpha * Fv).sum()
        L = self.num_labelled
        FL = Fv[:L] if self.bias is None else Fv[:L] + self.bias
        l1 = data_loss(self.loss_name, FL, self.targets, self.labels, eps=self.epsilon, h=self.smoothing,
                     **self.loss_options)
        data = self.lam() * (self.weights * l1).sum()
        if Fv.shape[0] > L:
            inv = self.nu() * invariance_loss(self.invariance_loss_name, Fv[L:], eps=self.epsilon,
                                              h=self.smoothing, **self.invariance_loss_options).sum()
        else:
            inv = torch.zeros((), dtype=Fv.dtype, device=Fv.device)
        return {"data_loss": data, "invariance_loss": inv, "norm": norm}

    def loss(self, batch=None) -> Terms:
        """J(α) = data_loss + invariance_loss + norm with its parts; the batch is ignored (the representer expansion is
        fixed when the model is built)."""
        parts = self.objective_terms()
        return Terms(parts["data_loss"] + parts["invariance_loss"] + parts["norm"], parts)

    @torch.no_grad()
    def objective(self) -> float:
        """J(α) at the current coefficients, as a float."""
        return float(self.loss().loss)

    def fit(self, max_iter: int = 1000, tol: float = 1e-12, history_size: int = 50,
            record: bool = True) -> list[dict[str, float]]:
        """Minimise J by L-BFGS with a strong-Wolfe line search, from the current coefficients (a warm start).

        record=True: one `torch.optim.LBFGS` iteration per call, each iterate's parts appended to `self.trace`; stops
        when J changes by < tol·max(1, |J|) twice running. record=False: one call running up to `max_iter`
        iterations with torch's own stopping rules (less overhead, for cross-validation loops)."""
        params = [p for p in self.parameters() if p.requires_grad]
        objective = lambda: self.loss().loss  # noqa: E731
        if not record:
            minimise(objective, params, max_iter=max_iter, tolerance_change=tol * max(1.0, abs(self.objective())),
                     history_size=history_size)
            return []
        self.trace = []
        minimise_recorded(objective, self.objective_terms, params, self.trace, max_iter=max_iter, tol=tol,
                          history_size=history_size)
        return self.trace

    # -- prediction --------------------------------------------------------------------------------------------------
    @torch.no_grad()
    def decision_function(self, X: torch.Tensor) -> torch.Tensor:
        """f(x) (+ b) at X [N, ...] → [N, C]."""
        X = X.reshape(X.shape[0], -1)
        D = self.gram.blocks[0].input_dim
        if X.shape[1] != D:
            raise ShapeError(f"inputs have {X.shape[1]} dimensions, the model was built for {D}")
        alpha = self.coefficients()
        out = torch.cat([self.gram.values(X[s:s + PREDICT_CHUNK], alpha) for s in range(0, X.shape[0], PREDICT_CHUNK)])
        return out if self.bias is None else out + self.bias

    @torch.no_grad()
    def noise_variance(self) -> torch.Tensor:
        """Regression: the mean squared residual at the labelled points, a plug-in predictive variance (the machine
        itself gives none)."""
        FL = self.gram.matmul(self.coefficients())[: self.num_labelled] + (0.0 if self.bias is None else self.bias)
        return ((FL - self.targets) ** 2).mean().clamp_min(1e-6)

    @torch.no_grad()
    def predict_standardised(self, X: torch.Tensor, y: torch.Tensor | None = None) -> Prediction:
        """The decision function f(x) + b at X as the mean (zero variance); for classification, class probabilities
        through the logistic or softmax link."""
        f = self.decision_function(X)
        pred = Prediction(f, torch.zeros_like(f))
        if self.task == "classification":
            logp = torch.cat([nn.functional.logsigmoid(-f), nn.functional.logsigmoid(f)], 1) if f.shape[1] == 1 \
                else torch.log_softmax(f, 1)
            pred.probs = logp.exp()
            if y is not None:
                pred.log_density = logp.gather(1, y.long().reshape(-1, 1))[:, 0]
        else:
            var = self.noise_variance()
            pred.y_mean, pred.y_var = f, var.expand_as(f)
            if y is not None:
                r = y.reshape(-1).to(f.dtype) - f[:, 0]
                pred.log_density = -0.5 * (math.log(2 * math.pi) + torch.log(var) + r * r / var)
        return pred

    # -- what to look at ---------------------------------------------------------------------------------------------
    @torch.no_grad()
    def gram_spectrum(self) -> np.ndarray:
        """The eigenvalues of the representer Gram matrix K (on a subsample of at most SPECTRUM_MAX representers),
        cached until the kernel changes."""
        key = self.gram.state_key()
        if self._spectrum[0] == key:
            return self._spectrum[1]
        B = self.gram.size
        index = None
        if B > SPECTRUM_MAX:
            index = torch.randperm(B, generator=torch.Generator().manual_seed(0))[:SPECTRUM_MAX].sort().values
        values = dg.spectrum_of((self.gram.full() if index is None else self.gram.dense(index.to(self.targets.device)))
                                .cpu().numpy())
        self._spectrum = (key, values)
        return values

    @torch.no_grad()
    def numerics(self) -> Numerics:
        """cond(K) of the representer Gram matrix (1/ε when it is numerically singular, as it usually is with many
        invariance functionals); no jitter: the whitened solve drops the null space instead."""
        extra = {"representers": float(self.gram.size)}
        if self.rank is not None:
            extra["rank"] = float(self.rank)
        return Numerics(condition=condition_number(self.gram_spectrum()), condition_of="K (representers)", extra=extra)

    def tunables(self) -> list[Tunable]:
        """ν (the invariance weight, from 0 = plain kernel regression) and λ (the data weight): set live, never learned
        (frozen: the solve only fits the coefficients)."""
        return [tunable("nu", self.nu, "invariance weight ν", group="invariance", interval=(0.0, 10.0), scale="linear"),
                tunable("lam", self.lam, "data weight λ", group="likelihood", interval=(1e-4, 1e4), scale="log")]

    @torch.no_grad()
    def own_diagnostics(self, data=None) -> dict[str, dg.View]:
        """The family's own views (`rkhs.views.rkhs_views`): the objective and its weights, its terms over the
        solver's iterations, the Gram spectrum, for 2-D data the decision function, and for images the labelled
        images with their tangent vectors (Zhang, Lee & Teh, 2013, Thm 5)."""
        return rkhs_views(self, data)

    @torch.no_grad()
    def decision_field(self, data=None, resolution: int = 60) -> dg.Field2D:
        """f over the plane with the labelled points (their class) and the unlabelled ones (label −1)."""
        return decision_field(self, data, resolution)
