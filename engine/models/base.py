"""What every model family shares: the `Terms` of its objective, its `Prediction`, metrics, and the base class.

A model family is a `torch.nn.Module` with `loss(batch) -> Terms`, `predict(X) -> Prediction` and
`diagnostics(data, test) -> dict[str, View]` (DESIGN.md). `ModelFamily` adds evaluation metrics on top of
`predict`, the same for all families, and builds `diagnostics` from the family's `own_diagnostics(data)` and the views
every family shares (for regression: the test predictions against the truth, in the target's units);
`diagnostics(..., only=names)` computes just the named views (a family guards each view's work with `wants(name)`,
so a view nobody looks at costs nothing). A variational family (SVGP and its subclasses, the deep kernel processes)
also has `full_elbo(X, y, *, batch_size, seed, num_samples) -> {"elbo", "expected_log_lik", "kl"}`, its ELBO over a
whole data set with any sampling seeded by `seed` (`seeded`); the others (GWI, RKHS) do not.

A family's build function receives what it needs to know of the data besides X and y as one `DataInfo` (task,
classes, image shape, the x and y scalers) and keeps it as `model.data_info`, which metrics and diagnostics read.

Units: a family implements `predict_standardised`, in the model's own units (standardised inputs and targets), which
training, metrics and diagnostics use. `predict(X)` is the public door: X in the data's own units (any float dtype,
any device, numpy or torch), converted to the model's dtype and device and scaled with the data's x scaler; means,
variances and `Prediction.quantile(q)` come back in the target's units.

Two typed answers go from a family to the page and the CLI: `numerics() -> Numerics` (the jitter in use and
the condition number that matters for this family, named) and `tunables() -> list[Tunable]` (the scalar
learnable values a user may set or freeze while training runs, with a label, a natural interval and a scale).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Collection, Sequence

import torch
from torch import nn

from ..diagnostics import AllViewsBut, View, predictions_against_truth
from ..errors import ShapeError
from ..parameters import Bounded, Constrained, Positive
from ..settings import seeded  # noqa: F401 — the families' and evaluation's seeded estimates use it from here


@dataclass(frozen=True)
class DataInfo:
    """What a family's build function knows of the training data besides X and y: `build(config, X, y, info)`."""

    task: str = "regression"  # "regression" or "classification"
    num_classes: int | None = None  # K for classification; None for regression
    image_shape: tuple[int, int, int] | None = None  # (C, H, W) for images; None for vectors
    y_std: float = 1.0  # regression targets are standardised: RMSE and NLPD are reported in original units
    y_mean: float = 0.0  # original target = standardised target · y_std + y_mean
    x_mean: tuple[float, ...] | None = None  # [D] model input = (x − x_mean) / x_std; None: inputs used as given
    x_std: tuple[float, ...] | None = None
    class_names: tuple[str, ...] | None = None  # for labelling per-class diagnostics
    input_shape: tuple[int, ...] | None = None  # one input's shape, (C, H, W) or (D,); None: whatever X has
    target_name: str | None = None  # a table's target column ("price_keur"); None: the data has no names
    input_names: tuple[str, ...] | None = None  # a table's input columns, in order; None: the data has no names

    @classmethod
    def of(cls, dataset) -> "DataInfo":
        """The description of an `invlab.data.Dataset` (or anything with its attributes)."""
        image_shape = getattr(dataset, "image_shape", None)
        names = getattr(dataset, "class_names", None)
        X = getattr(dataset, "X_train", None)
        x_mean, x_std = getattr(dataset, "x_mean", None), getattr(dataset, "x_std", None)
        metadata = getattr(dataset, "metadata", None) or {}
        target, inputs = metadata.get("target"), metadata.get("feature_names")
        return cls(task=dataset.task, num_classes=getattr(dataset, "num_classes", None),
                   image_shape=None if image_shape is None else tuple(int(s) for s in image_shape),
                   y_std=float(getattr(dataset, "y_std", 1.0) or 1.0),
                   y_mean=float(getattr(dataset, "y_mean", 0.0) or 0.0),
                   x_mean=None if x_mean is None else tuple(float(v) for v in x_mean),
                   x_std=None if x_std is None else tuple(float(v) for v in x_std),
                   class_names=None if names is None else tuple(str(n) for n in names),
                   input_shape=None if X is None else tuple(int(s) for s in X.shape[1:]),
                   target_name=None if target is None else str(target),
                   input_names=None if inputs is None else tuple(str(n) for n in inputs))

    def shape_of(self, X: torch.Tensor) -> tuple[int, ...]:
        """One input's shape: X's [N, ...] without N, checked against `input_shape` when that is given."""
        shape = tuple(int(s) for s in X.shape[1:])
        if self.input_shape is not None and tuple(self.input_shape) != shape:
            raise ShapeError(f"inputs are {shape} per point, but the data description says {tuple(self.input_shape)}")
        return shape


@dataclass
class Terms:
    """The scalar to minimise and its named parts (e.g. `elbo`, `expected_log_lik`, `kl`)."""

    loss: torch.Tensor
    parts: dict[str, torch.Tensor] = field(default_factory=dict)


@dataclass
class Prediction:
    """Marginals of the latent function and what follows for y.

    mean, var: q(f) marginals [N, L]. Regression: y_mean, y_var [N, L]. Classification: probs [N, K].
    """

    mean: torch.Tensor
    var: torch.Tensor
    y_mean: torch.Tensor | None = None
    y_var: torch.Tensor | None = None
    probs: torch.Tensor | None = None
    log_density: torch.Tensor | None = None  # log p(y* | data) per test point, when y was given

    def quantile(self, q: float) -> torch.Tensor:
        """Regression: the q-quantile of the Gaussian predictive of y [N, L] (a Gaussian with the predictive's mean
        and variance for a mixture), in the same units as `y_mean`."""
        if self.y_mean is None:
            raise ShapeError("quantiles are for regression; a classifier's prediction has class probabilities")
        if not 0 < q < 1:
            raise ShapeError(f"a quantile needs 0 < q < 1, got {q}")
        z = math.sqrt(2.0) * torch.special.erfinv(torch.tensor(2 * q - 1, dtype=torch.float64)).item()
        return self.y_mean + z * self.y_var.clamp_min(0).sqrt()


@dataclass(frozen=True)
class Numerics:
    """Numerical health of a model for the status bar: the jitter in use and one condition number, named."""

    jitter: float = float("nan")  # jitter in use (after escalation); nan if the family has none
    condition: float = float("nan")  # the condition number that matters for this family
    condition_of: str = "K_uu"  # what it is the condition number of, as the status bar shows it
    extra: dict = field(default_factory=dict)  # other figures by name (e.g. {"representers": 400.0})


def condition_number(eigenvalues: torch.Tensor | Sequence[float]) -> float:
    """λ_max / λ_min of a symmetric PSD matrix from its ascending eigenvalues.

    Eigenvalues below λ_max·ε (ε the dtype's machine epsilon) are round-off, so they count as λ_max·ε: a
    numerically singular matrix reads 1/ε (4.5e15 in float64) rather than a meaningless 1e300."""
    ev = torch.as_tensor(eigenvalues)
    if not ev.dtype.is_floating_point:
        ev = ev.to(torch.float64)
    if ev.numel() == 0:
        return float("nan")
    top = float(ev.max())
    if not top > 0:
        return float("nan")
    floor = top * float(torch.finfo(ev.dtype).eps)
    return top / max(float(ev.min()), floor)


@dataclass(frozen=True)
class Tunable:
    """A scalar learnable value a user may set (a `SetValue(name, v)` edit) or freeze (`Freeze(name)`) live."""

    name: str  # the learnable's full path: what SetValue(name, v) / Freeze(name, f) take
    label: str  # in words, e.g. "rotation half-width"
    value: float  # current constrained value
    lo: float | None = None  # the interval a control should span (natural, e.g. 0..180 for a half-width in degrees;
    hi: float | None = None  # strictly inside the value's open bounds, so both ends can be set)
    scale: str = "linear"  # "linear" or "log"
    unit: str = ""  # "°", "px", ""
    frozen: bool = False  # not being learned now (a Freeze edit)
    group: str = "invariance"  # "invariance" (shown on the Invariance tab) or "kernel" / "likelihood"
    learnable: bool = True  # False for a value that is only ever set, never learned (e.g. the RKHS ν): no learn toggle


def tunable(name: str, p: Constrained, label: str, *, group: str, interval: tuple[float, float] | None = None,
            scale: str | None = None, unit: str = "", value: float | None = None) -> Tunable:
    """A `Tunable` for the scalar constrained value `p` at `name`.

    `interval` is the natural span for a control; it is widened to hold the current value and pulled strictly
    inside the value's open bounds (a `Bounded` range's ends, a `Positive` floor), so every point of it can be
    assigned. The scale defaults to log for positive values (variances, lengthscales) and linear otherwise."""
    v = float(p().detach().reshape(-1)[0]) if value is None else float(value)
    if scale is None:
        scale = "linear" if isinstance(p, Bounded) or not _positive(p) else "log"
    lo, hi = interval if interval is not None else (None, None)
    if lo is not None and math.isfinite(v) and (scale != "log" or v > 0):
        lo = min(lo, v)
    if hi is not None and math.isfinite(v):
        hi = max(hi, v)
    if isinstance(p, Bounded):  # open (p.lo, p.hi): keep a sliver inside both ends
        margin = 1e-4 * (p.hi - p.lo) / 2
        lo = p.lo + margin if lo is None else max(lo, p.lo + margin)
        hi = p.hi - margin if hi is None else min(hi, p.hi - margin)
    elif isinstance(p, Positive) and lo is not None:
        lo = max(lo, p.floor * (1 + 1e-3) if p.floor > 0 else lo)
    return Tunable(name, label, v, lo, hi, scale, unit, bool(p.frozen), group, isinstance(p.raw, nn.Parameter))


def _positive(p: Constrained) -> bool:
    """Whether `p` only takes positive values (its transform maps raw 0 and a very negative raw above zero)."""
    if isinstance(p, Positive):
        return True
    with torch.no_grad():
        probe = p.transform(torch.tensor([-50.0, 0.0, 50.0], dtype=torch.float64))
    return bool((probe > 0).all())


def _random_state(device: torch.device) -> tuple[torch.Tensor, torch.Tensor | None]:
    """torch's global random state: the CPU's and, for a CUDA `device`, that device's (None otherwise)."""
    return torch.get_rng_state(), (torch.cuda.get_rng_state(device) if device.type == "cuda" else None)


def _set_random_state(state: tuple[torch.Tensor, torch.Tensor | None], device: torch.device) -> None:
    """Put torch's global random stream back to `state` (from `_random_state(device)`)."""
    torch.set_rng_state(state[0])
    if state[1] is not None:
        torch.cuda.set_rng_state(state[1], device)


class ModelFamily(nn.Module):
    """Base class: subclasses implement `loss`, `predict_standardised` and `own_diagnostics`; `predict` (the data's
    units), `metrics` and `diagnostics` (the family's own views and the shared ones) are the same for all."""

    task: str = "regression"
    data_info: DataInfo = DataInfo()  # the data the model was built for; its build function sets it

    @property
    def y_std(self) -> float:
        """Regression targets are standardised; RMSE and NLPD are reported in original units."""
        return self.data_info.y_std

    @property
    def image_shape(self) -> tuple[int, int, int] | None:
        """(C, H, W) of the image inputs the model was built for; None for vectors."""
        return self.data_info.image_shape

    @property
    def class_names(self) -> tuple[str, ...] | None:
        """The names of the classes of the data the model was built on, or None for regression."""
        return self.data_info.class_names

    def loss(self, batch) -> Terms:  # pragma: no cover - abstract
        """The objective on one `batch` (X, y): the scalar to minimise and its named parts (a `Terms`)."""
        raise NotImplementedError

    def predict_standardised(self, X: torch.Tensor, y: torch.Tensor | None = None,
                             **options) -> Prediction:  # pragma: no cover - abstract
        """The predictive in the model's own units: X [N, ...] as training sees it, y (optional) likewise."""
        raise NotImplementedError

    def _reference(self) -> torch.Tensor | None:
        """A tensor of the model's (dtype, device): its first floating parameter or buffer."""
        for t in list(self.parameters()) + list(self.buffers()):
            if t.is_floating_point():
                return t
        return None

    @torch.no_grad()
    def predict(self, X, y=None, **options) -> Prediction:
        """The predictive at X given in the data's own units (numpy or torch, any float dtype and device; converted to
        the model's), with means and variances (and `quantile`) in the target's units; y (optional, own units) gives
        `log_density` of the original-unit targets. Options go to the family (e.g. `num_samples`, `tempered`)."""
        ref = self._reference()
        dtype, device = (ref.dtype, ref.device) if ref is not None else (torch.float64, torch.device("cpu"))
        X = torch.as_tensor(X.detach() if isinstance(X, torch.Tensor) else X).to(device=device, dtype=dtype)
        info = self.data_info
        if info.x_mean is not None:
            mean = torch.tensor(info.x_mean, dtype=dtype, device=device)
            X = (X - mean) / torch.tensor(info.x_std, dtype=dtype, device=device)
        regression = self.task != "classification"
        if y is not None:
            y = torch.as_tensor(y.detach() if isinstance(y, torch.Tensor) else y).to(device=device)
            y = (y.to(dtype) - info.y_mean) / info.y_std if regression else y
        pred = self.predict_standardised(X, y, **options)
        if not regression:
            return pred
        scale, shift = info.y_std, info.y_mean
        return Prediction(pred.mean * scale + shift, pred.var * scale ** 2,
                          None if pred.y_mean is None else pred.y_mean * scale + shift,
                          None if pred.y_var is None else pred.y_var * scale ** 2, pred.probs,
                          None if pred.log_density is None else pred.log_density - math.log(scale))

    # the view names the running `diagnostics` call computes (None: all) and torch's random state when it began
    _views_wanted: "frozenset[str] | AllViewsBut | None" = None
    _views_stream: tuple | None = None

    def diagnostics(self, data=None, test=None, only: Collection[str] | None = None) -> dict[str, View]:
        """What is worth looking at now, `{name: View}`: the family's own views (`own_diagnostics(data)`) and those
        every family shares (`shared_diagnostics`). data: (X, y), a training sample in the model's units; test:
        (X_test, y_test), a test subset in the model's units, or None; only: None (every view), the names of the
        views wanted, e.g. those on screen, or `AllViewsBut(names)`: a view not wanted is not computed (`wants`) and
        not returned.

        Each view's random draws start where torch's random stream stood at the call, whatever else is computed, so
        a selected view equals the same view of a call that computes all; the stream is left where it was found."""
        if isinstance(only, str):
            raise TypeError(f"only is a collection of view names, e.g. {{{only!r}}}; got the string {only!r}")
        ref = self._reference()
        device = ref.device if ref is not None else torch.device("cpu")
        outer = self._views_wanted, self._views_stream
        self._views_wanted = None if only is None else only if isinstance(only, AllViewsBut) else frozenset(only)
        self._views_stream = (_random_state(device), device)
        try:
            views = self.own_diagnostics(data)
            views.update(self.shared_diagnostics(data, test))
        finally:
            _set_random_state(*self._views_stream)
            self._views_wanted, self._views_stream = outer
        # a family that guards no view (a plugin's) still returns only what was asked for
        return views if only is None else {name: view for name, view in views.items() if name in only}

    def wants(self, name: str) -> bool:
        """Whether the view `name` is to be computed: True outside `diagnostics` or when it was given no `only`, else
        whether `only` names it. When True inside `diagnostics`, torch's random stream is first put back where it
        stood when that call began, so the view draws the same numbers whichever views were computed before it."""
        if self._views_wanted is not None and name not in self._views_wanted:
            return False
        if self._views_stream is not None:
            _set_random_state(*self._views_stream)
        return True

    def own_diagnostics(self, data=None) -> dict[str, View]:
        """The family's own views of (X, y) in the model's units (or of the model alone when data is None); each
        view's work is guarded by `wants(name)`, so a view not asked for costs nothing."""
        return {}

    def shared_diagnostics(self, data=None, test=None) -> dict[str, View]:
        """The views every family gives: for regression, `predictions` — the predicted mean ± 2 sd against the true
        target, in the target's units, on (at most 500 of) the test points, or on `data`'s points (titled so) when
        no test subset is given. Nothing for classification, without points, or when the view is not wanted."""
        if self.task == "classification" or not self.wants("predictions"):
            return {}
        points, which = (test, "test") if test is not None else (data, "training")
        if points is None or points[0].shape[0] == 0:
            return {}
        return {"predictions": predictions_against_truth(self, points[0], points[1], which=which)}

    def numerics(self) -> Numerics:
        """Numerical health for the status bar: the jitter in use and the condition number that matters here."""
        return Numerics(jitter=float(getattr(self, "last_jitter", float("nan"))))

    def tunables(self) -> list[Tunable]:
        """Scalar learnable values a user may set or freeze while training runs (none by default)."""
        return []

    @torch.no_grad()
    def metrics(self, X: torch.Tensor, y: torch.Tensor, batch_size: int = 1024) -> dict[str, float]:
        """Test metrics: error rate and NLPD (classification) or RMSE (original units) and NLPD (regression)."""
        n, wrong, sq, nll = 0, 0.0, 0.0, 0.0
        for start in range(0, X.shape[0], batch_size):
            xb, yb = X[start:start + batch_size], y[start:start + batch_size]
            p = self.predict_standardised(xb, yb)
            if self.task == "classification":
                wrong += float((p.probs.argmax(-1) != yb.long()).sum())
            else:
                sq += float(((p.y_mean.reshape(yb.shape) - yb) ** 2).sum())
            nll -= float(p.log_density.sum())
            n += xb.shape[0]
        out = {"nlpd": nll / n}
        if self.task == "classification":
            out["error"] = wrong / n
        else:
            out["rmse"] = math.sqrt(sq / n) * self.y_std
            out["nlpd"] += math.log(self.y_std)  # density of the original-unit targets
        return out
