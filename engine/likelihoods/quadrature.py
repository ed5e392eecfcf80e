"""One-dimensional expectations under Gaussians: Gauss–Hermite for smooth integrands, composite Gauss–Legendre
for the ones with steps and kinks (robust-max / one-hot class probabilities, Bernoulli).

E_{N(μ, σ²)}[g(f)] ≈ Σ_i w_i/√π · g(μ + √2 σ t_i): Gauss–Hermite nodes are scaled by the standard deviation σ,
never by the variance (a known slip in some reference code). That rule is exact for polynomials and fine for smooth
g on the scale of σ, but not for P(f_y is the largest) = ∫ N(x; μ_y, σ_y²) Π_{j≠y} Φ((x − μ_j)/σ_j) dx when a class j
is much more certain than y (σ_j ≪ σ_y): Φ((x − μ_j)/σ_j) is then a step that nodes σ_y apart miss (64 nodes gave
errors of 1e-2 to 7e-2 at σ_j/σ_y = 0.1 to 0.01). Nor for E[log Φ(f)] at large σ: log Φ bends at 0 on a scale of 1
while the nodes lie σ apart.

The rules here cut the real line into panels at the places where the integrand changes — the steps of the other
classes (at μ_j and μ_j ± 6σ_j), the kink of the link at 0 — and put a few Gauss–Legendre nodes in each panel,
weighting by the Gaussian density. Panel ends are computed without gradient (the integral does not depend on where a
panel ends); the density and the integrand carry the gradient. Everything is a fixed number of tensor operations, so
a training step makes no host synchronisation; the nodes are cached per (n, device, dtype).

Accuracy (tests/likelihoods/test_quadrature.py, against scipy `quad` and Monte Carlo, float64): below 1e-6 on
probabilities for σ ratios down to 1e-3 and variances up to 1e4, with every other class's step resolved, on the
training path and for predictions alike (at K = 10 the training call costs ≤ 2× the 64-node Gauss–Hermite rule it
replaced; benchmarks/invariant/README.md). For K = 2 the closed form P(f_1 > f_0) = Φ((μ_1 − μ_0)/√(σ_0² + σ_1²))
is used.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import torch

SQRT_2PI = math.sqrt(2.0 * math.pi)
# Gaussian tails beyond this many standard deviations are dropped (2.6e-12 of the mass)
TAIL = 7.0
# a class j's factor Φ((x − μ_j)/σ_j) is below Φ(−7) = 1.3e-12 left of μ_j − 7σ_j: the product vanishes there
EDGE = 7.0
# panel ends around another class's step, in units of min(σ_j, σ_y)
STEP_OFFSETS = (-6.0, 0.0, 6.0)
# panel ends of y's own density, in units of σ_y (besides ±TAIL)
OWN_OFFSETS = (-2.0, -0.7, 0.7, 2.0)
# the training rule resolves every other class's step (None); an integer m keeps only the m that matter most per row,
# which misses up to 1.7e-4 when more than m classes far sharper than y lie in y's bulk (K = 10)
TRAIN_SLOTS = None
PANEL_NODES = 8


@functools.lru_cache(maxsize=32)
def _hermgauss(n: int):
    t, w = np.polynomial.hermite.hermgauss(n)
    return t, w / math.sqrt(math.pi)


@functools.lru_cache(maxsize=64)
def _cached(kind: str, n: int, device: torch.device, dtype: torch.dtype):
    t, w = _hermgauss(n) if kind == "hermite" else np.polynomial.legendre.leggauss(n)
    return (torch.as_tensor(t, dtype=dtype, device=device), torch.as_tensor(w, dtype=dtype, device=device))


def hermgauss(n: int, like: torch.Tensor):
    """Nodes t and normalised weights w (Σw = 1) on `like`'s device and dtype (cached, not copied per call)."""
    return _cached("hermite", n, like.device, like.dtype)


def leggauss(n: int, like: torch.Tensor):
    """Gauss–Legendre nodes and weights on [−1, 1], on `like`'s device and dtype (cached)."""
    return _cached("legendre", n, like.device, like.dtype)


def gauss_hermite_expectation(fn, mean: torch.Tensor, var: torch.Tensor, n: int = 20) -> torch.Tensor:
    """E[fn(f)] for f ~ N(mean, var) elementwise, for fn smooth on the scale of √var; fn maps [..., n] to [..., n]."""
    t, w = hermgauss(n, mean)
    f = mean[..., None] + math.sqrt(2.0) * var.clamp_min(0.0).sqrt()[..., None] * t  # [..., n]
    return (fn(f) * w).sum(-1)


def panel_rule(ends: torch.Tensor, n: int):
    """Composite Gauss–Legendre on the panels between sorted `ends` [..., B]: nodes and weights [..., (B−1)·n].
    Empty panels (equal ends) get zero weight."""
    x, w = panel_rule_between(ends[..., :-1], ends[..., 1:], n)  # [..., B−1, n]
    return x.flatten(-2), w.flatten(-2)


def panel_rule_between(a: torch.Tensor, b: torch.Tensor, n: int):
    """Gauss–Legendre on each panel [a, b] (`a`, `b` [...]): nodes and weights [..., n]."""
    t, w = leggauss(n, a)
    half = 0.5 * (b - a)[..., None]
    return (a[..., None] + half) + half * t, half * w


def _std(mean, var):
    """√var, floored at a few rounding steps of μ so that a zero variance still leaves panels to integrate over."""
    floor = 16 * torch.finfo(mean.dtype).eps * (1.0 + mean.detach().abs())
    return torch.maximum(var.clamp_min(0.0).sqrt(), floor)


def expectation_with_kinks(fn, mean: torch.Tensor, var: torch.Tensor, kinks=(0.0,), scales=(1.0, 8.0, 64.0),
                           n: int = PANEL_NODES) -> torch.Tensor:
    """E[fn(f)] for f ~ N(mean, var) elementwise, for fn that bends at the points `kinks` on the scales `scales`
    (such as log Φ or log σ at 0) and is smooth elsewhere on the scale of the distance to the kink.

    Panels end at μ + σ·{±7, ±2.5, 0}, at each kink and at kink ± scale (clipped to μ ± 7σ), and are laid out in
    the standardised variable u = (f − μ)/σ so that rounding in f does not move the Gaussian weight."""
    std = _std(mean, var)
    with torch.no_grad():
        own = torch.tensor((-TAIL, -2.5, 0.0, 2.5, TAIL), dtype=mean.dtype, device=mean.device)
        rel = torch.tensor(sorted({k + s * d for k in kinks for s in scales for d in (-1.0, 1.0)} | set(kinks)),
                           dtype=mean.dtype, device=mean.device)
        ends = torch.cat([own.expand(mean.shape + own.shape), (rel - mean[..., None]) / std[..., None]], -1)
        u, w = panel_rule(ends.clamp(-TAIL, TAIL).sort(-1).values, n)  # [..., Q]
    return (fn(mean[..., None] + std[..., None] * u) * (w * torch.exp(-0.5 * u * u) / SQRT_2PI)).sum(-1)


def _two_class(mean, var):
    """P(f_1 > f_0) and its complement, exactly. [N, 2] → [N, 2]"""
    z = (mean[:, 1] - mean[:, 0]) / (var[:, 0] + var[:, 1]).clamp_min(torch.finfo(mean.dtype).tiny).sqrt()
    return torch.stack([torch.special.ndtr(-z), torch.special.ndtr(z)], -1)


def prob_is_largest_at(mean: torch.Tensor, var: torch.Tensor, y: torch.Tensor, n: int | None = None, *,
                       slots: int | None = TRAIN_SLOTS, compact: bool | None = None) -> torch.Tensor:
    """P(f_y > f_j for all j ≠ y) for independent f_j ~ N(mean_j, var_j), one class y per row. [N, K], [N] → [N]

    ∫ N(x; μ_y, σ_y²) Π_{j≠y} Φ((x − μ_j)/σ_j) dx by composite Gauss–Legendre (`n` nodes per panel, at most 16).
    Panels end at y's own μ_y + σ_y·{±7, ±2, ±0.7} and at μ_j + min(σ_j, σ_y)·{−6, 0, 6} for every other class j
    (the default, `slots=None`), or for the `slots` classes whose steps matter most in this row: classes with
    σ_j < σ_y / 2, ranked by the integrand's size at the top of their step times σ_y/σ_j (not accurate to 1e-6 when
    more classes than that are far sharper than y in its bulk). Left of max_j(μ_j − 7σ_j) the product is below
    1e-12 and is skipped. K = 2 is exact (a closed form).

    Panels squeezed to zero width by that cut (about half of them in a trained digits model) add nothing. With
    `compact` (the default on the CPU) they are left out: every row's remaining panels go into one list and each
    row's sum is gathered back, the same sum in another order, which makes a step of the default digits SVGP about a
    fifth faster (`benchmarks.invariant.quadrature`). On a GPU (`compact=False`, its default) every row keeps all
    its panels, so that a step needs no host synchronisation."""
    N, K = mean.shape
    y = y.long().reshape(-1, 1)
    if K == 2:
        return _two_class(mean, var).gather(1, y)[:, 0]
    n = PANEL_NODES if n is None else max(2, min(int(n), 16))
    std = _std(mean, var)  # [N, K]
    my, sy = mean.gather(1, y), std.gather(1, y)  # [N, 1]
    is_y = torch.zeros_like(mean, dtype=torch.bool).scatter_(1, y, True)  # [N, K]
    with torch.no_grad():
        ends = _panel_ends(mean, std, my, sy, is_y, slots)  # [N, B] in u = (x − μ_y)/σ_y
        if compact is None:
            compact = mean.device.type == "cpu"
        if compact:  # only the panels of non-zero width, of every row, in one list
            rows, cols = (ends[:, 1:] > ends[:, :-1]).nonzero(as_tuple=True)  # [T]
            u, w = panel_rule_between(ends[rows, cols], ends[rows, cols + 1], n)  # [T, n]
        else:
            rows = None
            u, w = panel_rule(ends, n)  # [N, Q]
    if rows is not None:  # each panel takes its row's means, scales and class (gathered, so gradients flow back)
        my, sy, mean, std, is_y = my[rows], sy[rows], mean[rows], std[rows], is_y[rows]
    # (x − μ_j)/σ_j with x = μ_y + σ_y u: the gap μ_y − μ_j is formed once, so float32 keeps sharp steps in place
    z = ((my - mean)[:, :, None] + sy[:, :, None] * u[:, None, :]) / std[:, :, None]  # [N or T, K, Q or n]
    # floored above zero so that the product's backward pass takes its fast path (no search for zeros)
    cdf = torch.special.ndtr(z).clamp_min(torch.finfo(z.dtype).tiny).masked_fill(is_y[..., None], 1.0)
    terms = (cdf.prod(1) * w * torch.exp(-0.5 * u * u)).sum(-1) / SQRT_2PI
    if rows is None:
        return terms
    return terms.new_zeros(N).index_add(0, rows, terms)  # each row's panels summed


def _panel_ends(mean, std, my, sy, is_y, slots: int | None) -> torch.Tensor:
    """The sorted panel ends of each row [N, B], in u = (x − μ_y)/σ_y: the integral's range [lo, hi] (left of
    max_j(μ_j − 7σ_j) the product vanishes; y's own ±7σ_y), y's own μ_y + σ_y·{±2, ±0.7}, and μ_j + s_j·{−6, 0, 6}
    (s_j = min(σ_j, σ_y)) for the classes whose steps are resolved (`_step_classes`), all clipped to the range."""
    N = mean.shape[0]
    lo = torch.maximum((mean - EDGE * std).masked_fill(is_y, -math.inf).amax(1, keepdim=True), my - TAIL * sy)
    hi = my + TAIL * sy
    lo = torch.minimum(lo, hi)  # [N, 1]
    s = torch.minimum(std, sy)  # [N, K]: the scale a step is resolved on
    idx, used = _step_classes(mean, std, s, my, sy, is_y, lo, hi, slots)
    o = torch.tensor(STEP_OFFSETS, dtype=mean.dtype, device=mean.device)
    steps = mean.gather(1, idx)[..., None] + s.gather(1, idx)[..., None] * o  # [N, m, 3]
    steps = torch.where(used[..., None], steps, hi[..., None]).reshape(N, -1)
    ends = torch.cat([lo, steps, hi], 1)
    ends = (torch.minimum(torch.maximum(ends, lo), hi) - my) / sy  # [N, B] in u
    own = torch.tensor(OWN_OFFSETS, dtype=mean.dtype, device=mean.device).expand(N, -1)
    return torch.cat([ends, torch.maximum(own, ends[:, :1])], 1).sort(1).values


def _step_classes(mean, std, s, my, sy, is_y, lo, hi, slots: int | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Which other classes' steps get panel ends in each row: indices [N, m] and whether each is used [N, m]. Every
    other class (`slots=None`), or the `slots` classes with σ_j < σ_y / 2 whose steps matter most: ranked by the
    integrand's size at the top of their step (y's density near μ_j times the other classes' factors) × σ_y/s_j."""
    N, K = mean.shape
    m = K - 1 if slots is None else min(int(slots), K - 1)
    if m >= K - 1:
        idx = (~is_y).nonzero()[:, 1].reshape(N, K - 1)
        return idx, torch.ones_like(idx, dtype=torch.bool)
    top, bottom = mean + STEP_OFFSETS[-1] * s, mean + STEP_OFFSETS[0] * s
    zz = (top.clamp(max=hi)[:, :, None] - mean[:, None, :]) / std[:, None, :]  # [N, K(j), K(i)]
    eye = torch.eye(K, dtype=torch.bool, device=mean.device)[None]
    others = torch.special.log_ndtr(zz).masked_fill(eye | is_y[:, None, :], 0.0).sum(2)  # [N, K]
    near = -0.5 * ((torch.minimum(torch.maximum(mean, lo), hi) - my) / sy) ** 2
    eligible = (top > lo) & (bottom < hi) & ~is_y & (s < 0.5 * sy)
    score = torch.where(eligible, (others + near).exp() * (sy / s) + 1e-300, torch.zeros_like(s))
    idx = score.topk(m, dim=1).indices  # [N, m]
    return idx, score.gather(1, idx) > 0


def prob_is_largest(mean: torch.Tensor, var: torch.Tensor, n: int | None = None, *,
                    slots: int | None = None) -> torch.Tensor:
    """P(f_k > f_j for all j ≠ k) for independent f_j ~ N(mean_j, var_j), every k. [N, K] → [N, K]

    Each column is `prob_is_largest_at` for that class, with every other class's step resolved by default (the
    prediction rule). The columns sum to one up to the rule's error (≤ 1e-7 in float64)."""
    N, K = mean.shape
    if K == 2:
        return _two_class(mean, var)
    ks = torch.arange(K, device=mean.device).repeat(N)  # [N·K]
    rows = lambda t: t.repeat_interleave(K, 0)  # noqa: E731
    return prob_is_largest_at(rows(mean), rows(var), ks, n, slots=slots).reshape(N, K)
