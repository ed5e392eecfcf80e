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

PREDICT_CHUNK = 2048
SPECTRUM_MAX = 1500  # eigenvalues of at most this many representers (a principal submatrix beyond)


class RKHSMachine(ModelFamily):
    """f = Σ_b α_b z_b (+ b) over labelled evaluations and invariance functionals; J(α) of eq. 4."""

    def __init__(self, kernel, X_labelled: torch.Tensor, y_labelled: torch.Tensor, invariances: list[Functionals], *,
                 task: str = "classification", num_classes: int | None = 2, loss: str = "auto",
                 invariance_loss: str = "squared", lam: float = 1.0, nu: float = 0.1, bias: bool = True,
                 epsilon: float = 0.1, smoothing: float = 0.5, weights: torch.Tensor | None = None, fast: bool = True,
                 unlabelled: torch.Tensor | None = None, max_dense: int = 8000, whiten: bool = True,
                 eig_floor: float = 1e-12, loss_options: dict | None = None,
                 invariance_loss_options: dict | None = None):
        super().__init__()
        self.task, self.num_classes = task, num_classes
        if task not in TASKS:
            raise ConfigError(f"task must be classification or regression, got {task!r}")
        loss = ("logistic" if task == "classification" else "squared") if loss == "auto" else loss
        if loss not in data_loss_names(task):
            raise ConfigError(f"loss={loss!r} does not suit {task}; choose one of {', '.join(data_loss_names(task))}")
        if invariance_loss not in invariance_loss_names():
            raise ConfigError(f"invariance_loss={invariance_loss!r}; choose one of "
                              f"{', '.join(invariance_loss_names())}")
        if not smoothing > 0:
            raise ConfigError(f"smoothing (the width h of the quadratic smoothing) must be positive, got {smoothing}")
        if epsilon < 0:
            raise ConfigError(f"epsilon must be ≥ 0, got {epsilon}")
        self.loss_name, self.invariance_loss_name = loss, invariance_loss
        self.loss_options, self.invariance_loss_options = dict(loss_options or {}), dict(invariance_loss_options or {})
        self.epsilon, self.smoothing = float(epsilon), float(smoothing)
        self.eig_floor = float(eig_floor)

        XL = X_labelled.reshape(X_labelled.shape[0], -1)
        y = torch.as_tensor(y_labelled, device=XL.device)
        if y.shape != (XL.shape[0],):
            raise ShapeError(f"labels must be [{XL.shape[0]}] to match the labelled inputs, got {tuple(y.shape)}")
        labels, targets = encode_targets(y, task, num_classes, XL.dtype)
        C = self.num_outputs = targets.shape[1]
        self.register_buffer("labels", labels)
        self.register_buffer("targets", targets)
        like = {"dtype": XL.dtype, "device": XL.device}  # everything follows the inputs (CPU or CUDA)
        w = torch.ones(XL.shape[0], **like) if weights is None else torch.as_tensor(weights, **like)
        self.register_buffer("weights", w)
        self.register_buffer("unlabelled", (unlabelled if unlabelled is not None else XL[:0]).reshape(-1, XL.shape[1]))

        kernel = fix(kernel).to(**like)
        self.gram = RepresenterGram(kernel, [Evaluation(XL)] + list(invariances), fast=fast, max_dense=max_dense)
        self.num_labelled = XL.shape[0]
        B = self.gram.size
        self.whiten = bool(whiten)
        if self.whiten and B > max_dense:
            raise ConfigError(f"whiten=True needs the dense {B}×{B} Gram matrix, above max_dense = {max_dense}; use "
                              "whiten=False (the paper's α parametrisation, with eq. 11 for partial derivatives) or "
                              "fewer functionals")
        if self.whiten:  # α = W β with W = U Λ^{-1/2} (see `whitening`)
            self.beta = nn.Parameter(torch.zeros(B, C, **like))
            self.register_buffer("W", torch.zeros(B, B, **like))  # U Λ^{-1/2}, 0 beyond the rank
            self.register_buffer("evals", torch.zeros(B, **like))  # Λ, 0 beyond the rank
            self._whitening_key = None
        else:
            self.alpha = nn.Parameter(torch.zeros(B, C, **like))
        self.rank = None
        self.bias = nn.Parameter(torch.zeros(C, **like)) if bias else None
        self.nu = fix(NonNegative(nu, name="nu")).to(**like)
        self.lam = fix(NonNegative(lam, name="lam")).to(**like)
        self.trace: list[dict[str, float]] = []  # the objective's parts per L-BFGS iteration of `fit`
        self.tangent_preview = None  # (images [n, C, H, W], tangents [n, T, C, H, W], names) for diagnostics
        self._spectrum = (None, None)

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
        """The family's own views: the objective and its weights, its terms over the solver's iterations, the Gram
        spectrum, for 2-D data the decision function, and for images the labelled images with their tangent vectors
        (Zhang, Lee & Teh, 2013, Thm 5)."""
        views: dict[str, dg.View] = {}
        if self.wants("objective"):
            parts = {k: float(v) for k, v in self.objective_terms().items()}
            # one view per quantity: the terms' values are in their curve over the solver's iterations (below)
            views["objective"] = dg.Scalars(title="Objective (eq. 4) and its weights", values={
                "objective": sum(parts.values()), "nu": float(self.nu()), "lambda": float(self.lam()),
                "labelled": float(self.num_labelled),
                "invariance functionals": float(self.gram.size - self.num_labelled)})
        if self.wants("gram_spectrum"):
            B = self.gram.size
            title = "Eigenvalues of the representer Gram matrix K (eq. 4)"
            if B > SPECTRUM_MAX:
                title += f" — a random {SPECTRUM_MAX}×{SPECTRUM_MAX} principal submatrix of {B}×{B}"
            views["gram_spectrum"] = dg.Spectrum(title=title, values=self.gram_spectrum(),
                                                 description="Evaluations and invariance representers together; a "
                                                             "long tail of tiny eigenvalues means directions the norm "
                                                             "barely penalises.")
        if self.wants("solver_trace") and self.trace:
            it = np.arange(len(self.trace))
            views["solver_trace"] = dg.Curves(
                title="Objective terms over L-BFGS iterations (fit)", xlabel="L-BFGS iteration",
                ylabel="objective term",
                logy=True, covers=("data_loss", "invariance_loss", "norm"),  # terms orders of magnitude apart
                labels={"data_loss": "data loss", "invariance_loss": "invariance loss", "norm": "norm penalty λ‖f‖²"},
                series={k: (it, np.array([t[k] for t in self.trace]))
                        for k in ("data_loss", "invariance_loss", "norm")})
        if self.wants("decision_function") and self.gram.blocks[0].input_dim == 2:
            views["decision_function"] = self.decision_field(data)
        if self.wants("tangents") and self.tangent_preview is not None:
            images, tangents, names = self.tangent_preview
            rows = []
            for img, tan in zip(images, tangents):
                scale = max(float(np.abs(tan).max()), 1e-12)
                rows.append(np.concatenate([img[None, 0] * 2.0 - 1.0, tan[:, 0] / scale], 0))
            views["tangents"] = dg.ImageGrid(title="Labelled images and their tangent vectors (Thm 5)",
                                             images=np.stack(rows), col_labels=["image"] + list(names),
                                             vrange=(-1.0, 1.0))
        return views

    @torch.no_grad()
    def decision_field(self, data=None, resolution: int = 60) -> dg.Field2D:
        """f over the plane with the labelled points (their class) and the unlabelled ones (label −1)."""
        XL = self.gram.blocks[0].X
        U = self.unlabelled
        pts = torch.cat([XL, U], 0)
        cloud = pts if data is None else torch.cat([pts, data[0].reshape(data[0].shape[0], -1).to(pts)], 0)
        lo, hi = cloud.min(0).values, cloud.max(0).values
        pad = 0.1 * (hi - lo).clamp_min(1e-6)
        gx = torch.linspace(float(lo[0] - pad[0]), float(hi[0] + pad[0]), resolution, dtype=XL.dtype, device=XL.device)
        gy = torch.linspace(float(lo[1] - pad[1]), float(hi[1] + pad[1]), resolution, dtype=XL.dtype, device=XL.device)
        G = torch.stack(torch.meshgrid(gx, gy, indexing="xy"), -1).reshape(-1, 2)
        f = self.decision_function(G)
        if f.shape[1] == 1:
            values, contour = f[:, 0], (0.0 if self.task == "classification" else None)
            title = "Decision function f(x) (boundary f = 0)" if contour is not None else "f(x)"
        else:
            values, contour, title = f.argmax(1).to(f.dtype), None, "Predicted class"
        labels = torch.cat([self.labels if self.task == "classification" else torch.zeros(len(XL), dtype=torch.long,
                                                                                             device=XL.device),
                            torch.full((len(U),), -1, dtype=torch.long, device=XL.device)])
        return dg.Field2D(title=title, x=gx.cpu().numpy(), y=gy.cpu().numpy(),
                          values=values.reshape(resolution, resolution).cpu().numpy(), points=pts.cpu().numpy(),
                          point_labels=labels.cpu().numpy(), contour=contour,
                          description="Labelled points by class; unlabelled points (label −1) carry invariance "
                                      "functionals in semi-supervised mode.")
