"""Typed views: what a model says is worth looking at, independent of how it is drawn.

A model's `diagnostics(data, test)` returns `{name: View}`: the family's own views and those every family shares (for
regression, `predictions_against_truth` on the test points); the dashboard has one renderer per view type, so a new
model family appears there without dashboard code. Views hold plain numpy arrays and floats
(never tensors), so they can be handed to another thread.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .settings import seeded


class AllViewsBut:
    """A selection of views for `diagnostics(only=...)`: every view but those named in `skipped` (e.g. the views a
    page has scrolled away); `name in AllViewsBut({"posterior"})` is False for "posterior" only, so a view new to
    the caller is computed."""

    def __init__(self, skipped):
        self.skipped = frozenset(skipped)

    def __contains__(self, name) -> bool:
        return name not in self.skipped

    def __repr__(self) -> str:
        return f"AllViewsBut({sorted(self.skipped)})"


@dataclass
class View:
    """Base of the typed diagnostics a model returns for plotting: a title and a one-sentence description; the dashboard
    has one renderer per subclass."""
    title: str = ""
    description: str = ""


@dataclass
class Curves(View):
    """Named series over a shared x axis kind (e.g. step). series: name → (x [T], y [T])."""

    series: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    xlabel: str = "step"
    ylabel: str = ""  # in words with units, e.g. "rotation range (°)"
    logy: bool = False
    min_span: float = 0.0  # the y axis spans at least this much, so a flat series is drawn flat
    covers: tuple[str, ...] = ()  # trainer history metrics this view already shows (the page draws no other curve)
    labels: dict[str, str] = field(default_factory=dict)  # series name → legend label in words (default: the name)
    legend: bool = True  # False when the series are interchangeable draws (prior samples): no legend to read


@dataclass
class ImageGrid(View):
    """images: [rows, cols, H, W] grey or [rows, cols, H, W, 3] colour, values in [0, 1] unless `vrange`."""

    images: np.ndarray = None
    row_labels: list[str] = field(default_factory=list)
    col_labels: list[str] = field(default_factory=list)
    vrange: tuple[float, float] | None = None  # value range of grey maps: symmetric (−a, a) for signed maps (drawn
    #                                            in a diverging colour map centred at 0), else (lo, hi); both get a
    #                                            colour bar

    def __post_init__(self):
        if self.images is None or self.images.ndim not in (4, 5):
            raise ValueError("ImageGrid needs images of shape [rows, cols, H, W(, 3)], "
                             f"got {getattr(self.images, 'shape', None)}")


@dataclass
class Spectrum(View):
    """Eigenvalues (or any positive spectrum) to show as a histogram; `log` hints a log-x axis."""

    values: np.ndarray = None
    log: bool = True


@dataclass
class Heatmap(View):
    """A matrix shown as a colour map (a Gram matrix, a covariance), with axis labels; `symmetric` centres the colour
    map at zero."""
    matrix: np.ndarray = None
    xlabel: str = ""
    ylabel: str = ""
    symmetric: bool = False  # colour map centred at zero


@dataclass
class Field2D(View):
    """A function over a 2-D grid (posterior mean, decision function) with optional points on top.

    x: [W], y: [H] grid coordinates; values: [H, W]; points: [P, 2] with labels [P] (−1 for unlabelled).
    """

    x: np.ndarray = None
    y: np.ndarray = None
    values: np.ndarray = None
    points: np.ndarray | None = None
    point_labels: np.ndarray | None = None
    contour: float | None = None  # level of the decision boundary, if any
    axis_names: tuple[str, str] = ("x₁", "x₂")  # the inputs' names (a table's columns), across and up


@dataclass
class Scatter(View):
    """Paired values, one point each: x [N] against y [N], with optional error bars y ± y_err [N] (half-widths, ≥ 0)
    and, with `identity`, the line y = x (where the points lie when y equals x)."""

    x: np.ndarray = None
    y: np.ndarray = None
    y_err: np.ndarray | None = None
    xlabel: str = ""  # in words with units, e.g. "true price_keur"
    ylabel: str = ""
    identity: bool = False

    def __post_init__(self):
        x, y = np.asarray(self.x, dtype=np.float64), np.asarray(self.y, dtype=np.float64)
        if x.ndim != 1 or x.shape != y.shape or (self.y_err is not None and np.shape(self.y_err) != x.shape):
            raise ValueError("Scatter needs x, y (and y_err) of one shape [N], got "
                             f"{x.shape}, {y.shape}{'' if self.y_err is None else f', {np.shape(self.y_err)}'}")
        self.x, self.y = x, y
        self.y_err = None if self.y_err is None else np.asarray(self.y_err, dtype=np.float64)


@dataclass
class Scalars(View):
    """Named numbers shown as a table: name → value."""

    values: dict[str, float] = field(default_factory=dict)


def spectrum_of(matrix) -> np.ndarray:
    """Eigenvalues of a symmetric matrix, ascending, clipped at zero against rounding.

    Through torch (its thread count is the engine's setting), not numpy: numpy's BLAS starts a thread per core,
    and on a busy 2-core machine a 400 × 400 solve then takes seconds instead of tens of milliseconds."""
    m = torch.as_tensor(np.asarray(matrix, dtype=np.float64))
    return np.clip(torch.linalg.eigvalsh(0.5 * (m + m.T)).numpy(), 0.0, None)


def near_zero(values, rel: float = 1e-10) -> int:
    """How many eigenvalues are zero up to rounding: at most `rel` × the largest."""
    v = np.asarray(values, dtype=np.float64)
    return int((v <= rel * max(float(v.max(initial=0.0)), 1e-300)).sum()) if v.size else 0


def how_many(shown: int, total: int) -> str:
    """What a grid of `shown` of `total` items says in its title: "32 of 100", or "all 20" when none is left out."""
    return f"all {total}" if shown >= total else f"{shown} of {total}"


def image_grid_from_flat(Z: np.ndarray, image_shape: tuple, cols: int = 8, max_images: int = 32) -> np.ndarray:
    """Lay out flattened images [M, C·H·W] as [rows, cols, H, W(, C)] for an ImageGrid (pads with blanks)."""
    C, H, W = image_shape
    n = min(len(Z), max_images)
    imgs = np.asarray(Z[:n], dtype=np.float64).reshape(n, C, H, W)
    imgs = imgs[:, 0] if C == 1 else imgs.transpose(0, 2, 3, 1)
    rows = max(1, -(-n // cols))
    cols = min(cols, n) if n else 1
    out = np.zeros((rows * cols,) + imgs.shape[1:])
    out[:n] = imgs
    return out.reshape((rows, cols) + imgs.shape[1:])


class ThinnedHistory:
    """Named scalars over training (learned ranges, objective parts), kept in a model so `diagnostics` can draw
    them without the trainer.

    Values are stored as detached tensors (no host sync in the training step); at `capacity` entries every
    other one is dropped and the recording stride doubles, so a long run keeps an even, bounded record.
    """

    def __init__(self, capacity: int = 512):
        self.capacity, self.stride, self.calls = capacity, 1, 0
        self.steps: list[int] = []
        self.values: list[dict] = []

    def record(self, values: dict) -> None:
        """Record one step's named scalar tensors (detached); keeps every `stride`-th call and halves the kept points
        when `capacity` is reached."""
        self.calls += 1
        if not values or (self.calls - 1) % self.stride:
            return
        self.steps.append(self.calls)
        self.values.append({k: v.detach() for k, v in values.items()})
        if len(self.steps) >= self.capacity:
            self.steps, self.values, self.stride = self.steps[::2], self.values[::2], self.stride * 2

    def restore(self, series: dict[str, tuple[list, list]], calls: int) -> None:
        """Start again from a stored record: `series` maps each name to (steps, values) as a run store keeps them
        (steps ≤ `calls`), and recording goes on from call `calls` (a run continued from its checkpoint)."""
        steps = sorted({int(s) for xs, _ in series.values() for s in xs if s <= calls})
        lookup = {name: dict(zip(xs, ys)) for name, (xs, ys) in series.items()}
        self.steps, self.values, self.stride, self.calls = [], [], 1, int(calls)
        for step in steps:
            row = {name: torch.tensor(float(values[step])) for name, values in lookup.items() if step in values}
            if len(row) == len(lookup):
                self.steps.append(step)
                self.values.append(row)
        while len(self.steps) >= self.capacity:
            self.steps, self.values, self.stride = self.steps[::2], self.values[::2], self.stride * 2

    def series(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Each recorded name's (steps, values) as numpy arrays, for a `Curves` view."""
        if not self.values:
            return {}
        steps = np.asarray(self.steps, dtype=np.int64)
        return {k: (steps, np.array([float(v[k]) for v in self.values])) for k in self.values[-1]}


# -- views any model family can give ---------------------------------------------------------------------------------
def hyperparameter_values(model) -> dict[str, float]:
    """Scalar summaries of every constrained parameter: an ARD lengthscale by input, named by the data's columns (a
    summary of many), other vectors by their mean (`invlab.input_rows.vector_rows`)."""
    from .input_rows import vector_rows
    from .parameters import learnables

    out = {}
    for name, p in learnables(model).items():
        v = p().detach().reshape(-1)
        out.update({name: float(v[0])} if v.numel() == 1 else
                   vector_rows(name, v.cpu().tolist(), getattr(model, "data_info", None)))
    return out


def hyperparameter_title(model) -> str:
    """The hyper-parameters view's title, saying when its values are those of standardised data: a model trains on
    standardised inputs (tabular data) and a standardised regression target, so its lengthscales, signal and noise
    variances are in those units, not the data's own."""
    info = getattr(model, "data_info", None)
    parts = []
    if info is not None and info.x_mean is not None:
        parts.append("inputs")
    if info is not None and info.task == "regression" and (info.y_std != 1.0 or info.y_mean != 0.0):
        parts.append("target")
    return "Hyper-parameters" + (f" (of the standardised {' and '.join(parts)})" if parts else "")


PREDICTION_POINTS = 500  # at most this many points in the view of predictions against the truth


@torch.no_grad()
def predictions_against_truth(model, X: torch.Tensor, y: torch.Tensor, *, which: str = "test",
                              limit: int = PREDICTION_POINTS, seed: int = 0) -> Scatter:
    """A regression model's predicted mean against the true target on the first `limit` of (X, y), in the target's own
    units, with error bars of ± 2 predictive standard deviations (of y, noise included) and the line y = x.

    X [N, ...] and y [N] are in the model's units (standardised, as a trainer holds them); the model's `data_info`
    scalers give the target's units (target = y · y_std + y_mean). Any sampling in the prediction is seeded by `seed`,
    so the view changes only when the model does. `which` names the points in the title ("test", "training")."""
    X, y = X[:limit], y[:limit]
    info = model.data_info
    with seeded(seed, X.device):
        pred = model.predict_standardised(X)
    mean = pred.y_mean[:, 0] * info.y_std + info.y_mean  # [N], target units
    sd = pred.y_var[:, 0].clamp_min(0).sqrt() * info.y_std  # [N]
    truth = y.reshape(-1).to(mean.dtype) * info.y_std + info.y_mean  # [N]
    n = truth.shape[0]
    name = getattr(info, "target_name", None)  # a table's target column names the axes (its units are its own)
    xlabel, ylabel = ((f"true {name}", f"predicted {name} (± 2 sd)") if name else
                      ("true target (its own units)", "predicted target (± 2 sd)"))
    return Scatter(title=f"{which.capitalize()} predictions against the truth ({n} points)",
                   x=truth.cpu().numpy(), y=mean.cpu().numpy(), y_err=2.0 * sd.cpu().numpy(),
                   xlabel=xlabel, ylabel=ylabel,
                   identity=True,
                   description=f"Each dot is a {which} point: its true target across, the predicted mean up, with bars "
                               "of ± 2 predictive standard deviations. On the dashed line y = x a prediction is exact; "
                               "about 95 % of the bars should cross it when the uncertainty is calibrated.")


@torch.no_grad()
def field_over_plane(model, X: torch.Tensor, y: torch.Tensor, resolution: int = 60) -> Field2D:
    """The posterior mean (regression) or P(class 1) / top class (classification) over the input plane.

    `X` [N, 2] and `y` [N] as the model trains on them; the field, its grid and the points are given in the data's
    own units (the model's `data_info` scalers undone: inputs, and a regression's mean in the target's units)."""
    X2 = X.reshape(X.shape[0], -1)
    lo, hi = X2.min(0).values, X2.max(0).values
    pad = 0.1 * (hi - lo).clamp_min(1e-6)
    gx = torch.linspace(float(lo[0] - pad[0]), float(hi[0] + pad[0]), resolution, dtype=X.dtype, device=X.device)
    gy = torch.linspace(float(lo[1] - pad[1]), float(hi[1] + pad[1]), resolution, dtype=X.dtype, device=X.device)
    G = torch.stack(torch.meshgrid(gx, gy, indexing="xy"), -1).reshape(-1, 2)  # [R², 2]
    pred = model.predict_standardised(G)
    contour = None
    if pred.probs is not None:
        values = pred.probs[:, 1] if pred.probs.shape[1] == 2 else pred.probs.argmax(-1).to(X.dtype)
        contour = 0.5 if pred.probs.shape[1] == 2 else None
        names = getattr(getattr(model, "data_info", None), "class_names", None) or ("0", "1")
        one = "class 1" if str(names[1]).isdigit() else names[1]  # a table's own label ("dog"), else the index
        title = f"P({one})" if pred.probs.shape[1] == 2 else "Predicted class"
    else:
        values, title = pred.y_mean[:, 0], "Posterior mean"
    info = getattr(model, "data_info", None)
    shift, scale = np.zeros(2), np.ones(2)
    if info is not None and info.x_mean is not None:
        shift, scale = np.asarray(info.x_mean, dtype=np.float64), np.asarray(info.x_std, dtype=np.float64)
    values = values.reshape(resolution, resolution).cpu().numpy()
    y = y.cpu().numpy()
    if pred.probs is None and info is not None:
        values = values * info.y_std + info.y_mean
        y = y * info.y_std + info.y_mean
    names = getattr(info, "input_names", None)
    plain = names is None or len(names) != 2 or names[0] == names[1] or {"label", "value"} & set(names)
    axis_names = ("x₁", "x₂") if plain else tuple(names)  # "label" and "value" name the view's own columns
    return Field2D(title=title, x=gx.cpu().numpy() * scale[0] + shift[0], y=gy.cpu().numpy() * scale[1] + shift[1],
                   values=values, points=X2.cpu().numpy() * scale + shift, point_labels=y, contour=contour,
                   axis_names=axis_names)
