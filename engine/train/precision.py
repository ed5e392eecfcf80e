"""The whole-training-set ELBO to a stated precision, so that models scored by it stand on one footing.

A model's `full_elbo(X, y, seed=, num_samples=)` is one evaluation: exact when nothing is sampled, else an estimate
with Monte-Carlo noise (an invariant GP draws S samples of each input's orbit; van der Wilk et al. 2018 eq. 16–21).
`precise_elbo` turns it into an estimate with a known standard error:

- exact, one evaluation, when nothing is sampled, or a finite orbit has at most `EXACT_ORBIT` elements (S = P: the
  whole orbit summed, the estimators' weights become the exact double sum);
- otherwise R ≥ `MIN_EVALUATIONS` evaluations at independent seeds, with S per input starting at the larger of the
  training S and `MIN_SAMPLES`. Every input draws its own samples, so the variance of the total is the sum of the
  inputs' variances, each estimated from its R terms: the standard error is known closely from a few evaluations
  (the spread of 4 totals alone would be off by ~40 %). The per-input variance falls like 1/S (measured on a
  trained affine candidate, 600 images: summed over inputs 0.86, 0.43, 0.21 at S = 6, 24, 96, with no heavy
  tails), so the error falls like 1/√(S·R): until it is at most the target, R grows to what that law asks for
  (the work per unit of variance is about the same at every S: many evaluations at a small S first), and past
  `MAX_EVALUATIONS` S grows instead, up to `MAX_SAMPLES`. The caps bound the work at S·R ≤ 4096 samples per input:
  a digits study (300 images, 10 one-hot outputs) stops there at a standard error of about 0.6–0.8 nats, a
  checkerboard of 600 blob images reaches 0.1 at S·R ≤ 1000.
- For a likelihood the invariant GP can only plug its moment estimates into (anything but the Gaussian and the
  Pólya-Gamma bound, which are linear in f and f²) the estimate is biased. S is doubled and the bias of the estimate
  at S (estimate − limit) is measured from the means at S/2 and S assuming it shrinks like 1/S, until it too is at
  most the target or no larger than its own noise (or S reaches its cap); its direction and size are said in
  `method`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import ConfigError
from ..settings import seeded

EXACT_ORBIT = 256  # a finite orbit up to this size is summed whole (batched so that batch·P² stays bounded)
MIN_SAMPLES = 16  # S starts at the larger of this and the training S
MAX_SAMPLES = 256  # the cap on S per input ([batch, S, S] Gram blocks)
MIN_EVALUATIONS = 4  # R starts here
MAX_EVALUATIONS = 16  # the cap on R, the independent evaluation seeds (S·R ≤ 4096 bounds the work)
BATCH_ELEMENTS = 2 ** 22  # batch·S·(S + input size) stays under this many numbers


@dataclass(frozen=True)
class ElboEstimate:
    """The whole-data ELBO (nats) with its parts, its Monte-Carlo standard error `mc_se`, S `samples` per input,
    R `evaluations`, whether it is `exact`, the measured `bias` (estimate − limit; 0 for an unbiased estimator) and
    `method`, the sentence that says how it was reached and what stopped it. `orbit_size`: P of a finite orbit, None
    for a density, 1 without augmentation."""

    elbo: float
    expected_log_lik: float
    kl: float
    mc_se: float
    samples: int
    evaluations: int
    exact: bool
    bias: float
    method: str
    orbit_size: int | None = 1
    plug_in: bool = False

    def terms(self) -> dict[str, float]:
        """The figures as floats (what `Trainer.final_elbo` holds): elbo, expected_log_lik, kl, mc_se, samples,
        evaluations, exact (1.0 or 0.0) and bias."""
        return {"elbo": self.elbo, "expected_log_lik": self.expected_log_lik, "kl": self.kl, "mc_se": self.mc_se,
                "samples": float(self.samples), "evaluations": float(self.evaluations), "exact": float(self.exact),
                "bias": self.bias}

    def phrase(self) -> str:
        """The estimator in a few words: "exact (whole orbit of 24)", "96 samples per input × 4 evaluation seeds
        (unbiased)", "128 samples per input × 4 evaluation seeds (plug-in, bias −0.03 nats)"."""
        if self.exact:
            whole = (self.orbit_size or 1) > 1
            return f"exact (whole orbit of {self.orbit_size})" if whole else "exact (nothing sampled)"
        if self.orbit_size == 1:  # no orbit: only the likelihood (or the model) samples
            drawn = ""
        else:
            drawn = "whole orbit × " if self.samples == self.orbit_size else f"{self.samples} samples per input × "
        kind = f"plug-in, bias {self.bias:+.2g} nats" if self.plug_in else "unbiased"
        return f"{drawn}{self.evaluations} evaluation seeds ({kind})"


@dataclass(frozen=True)
class Sampling:
    """What a model samples when its ELBO is evaluated: `start` S (None: the model's own, nothing orbit-wise), its
    cap, the orbit size P (None: a density; 1: no augmentation), whether the likelihood or the model draws samples of
    its own (`other`), and whether the estimate is a biased plug-in."""

    start: int | None
    cap: int | None
    orbit_size: int | None
    other: bool
    plug_in: bool

    @property
    def exact(self) -> bool:
        """Nothing is sampled: no orbit, or one summed whole, and no Monte-Carlo likelihood or model."""
        return self.start == self.cap and not self.other


def sampling_of(model) -> Sampling:
    """How `model`'s `full_elbo` samples (see `Sampling`)."""
    from ..likelihoods import Gaussian
    from ..likelihoods.polya_gamma import PolyaGammaLogistic
    from ..models.invariant import InvariantSVGP

    likelihood = getattr(model, "likelihood", None)
    # a Monte-Carlo likelihood (softmax) or a family that propagates samples (deep kernel processes)
    other = isinstance(getattr(likelihood, "num_samples", None), int) or \
        isinstance(getattr(model, "num_samples", None), int)
    augmentation, kernel = getattr(model, "augmentation", None), getattr(model, "kernel", None)
    if augmentation is None or not hasattr(kernel, "num_samples"):
        return Sampling(None, None, 1, other, False)
    P = augmentation.orbit_size
    if P is not None and P <= EXACT_ORBIT:
        return Sampling(P, P, P, other, False)
    start = max(int(kernel.num_samples), MIN_SAMPLES)
    cap = MAX_SAMPLES if P is None else min(MAX_SAMPLES, P)
    plug_in = isinstance(model, InvariantSVGP) and not isinstance(likelihood, (Gaussian, PolyaGammaLogistic))
    return Sampling(min(start, cap), cap, P, other, plug_in)


@dataclass(frozen=True)
class Summary:
    """R evaluations at one S: the mean ELBO and its parts, and the standard error of the mean."""

    S: int | None
    R: int
    elbo: float
    expected_log_lik: float
    kl: float
    se: float


class Evaluations:
    """The evaluations of one model on X [N, ...], y [N], kept by S. Evaluation r at S is `full_elbo(X, y,
    batch_size=b, seed=s)` with its own seed s (from the base `seed`, S and r), kept per input: its expected
    log-likelihood [N] and the KL. A model whose per-input terms are not reachable (no `expected_log_lik`) is kept
    whole, one term."""

    def __init__(self, model, X: torch.Tensor, y: torch.Tensor, batch_size: int, seed: int):
        self.model, self.X, self.y, self.seed = model, X, y, int(seed)
        self.batch_size = int(batch_size)
        self.by_input = all(hasattr(model, a) for a in ("expected_log_lik", "prior_cholesky", "kl", "likelihood"))
        self.done: dict[int | None, list[tuple[np.ndarray, float]]] = {}

    def batch(self, S: int | None) -> int:
        """The batch size at S samples per input: `batch_size`, or less so that batch·S·(S + input size) stays under
        BATCH_ELEMENTS (the [batch, S, S] Gram blocks and the [batch, S, ...] samples)."""
        if S is None:
            return self.batch_size
        size = int(np.prod(self.X.shape[1:])) if self.X.dim() > 1 else 1
        return max(1, min(self.batch_size, BATCH_ELEMENTS // (S * (S + size))))

    def one(self, S: int | None, r: int) -> tuple[np.ndarray, float]:
        """Evaluation `r` at S: (expected log-likelihood per input [N], KL); the same draws and the same total as
        the model's `full_elbo` at this batch size and seed."""
        seed = int(np.random.SeedSequence([self.seed, S or 0, r]).generate_state(1)[0])
        model, b = self.model, self.batch(S)
        if not self.by_input:
            out = model.full_elbo(self.X, self.y, batch_size=b, seed=seed, num_samples=S)
            return np.asarray([out["expected_log_lik"]]), float(out["kl"])
        prior = model.prior_cholesky()
        generator = torch.Generator().manual_seed(seed)
        ells = []
        # as `full_elbo`: the orbit draws from `generator`, a sampled likelihood from the global stream
        with torch.no_grad(), seeded(seed, self.X.device):
            for start in range(0, self.X.shape[0], b):
                Y = model.likelihood.encode(self.y[start:start + b])
                ells.append(model.expected_log_lik(self.X[start:start + b], Y, prior, generator=generator,
                                                   num_samples=S).double().cpu())
            kl = float(model.kl(prior))
        return torch.cat(ells).numpy(), kl

    def summary(self, S: int | None, R: int) -> Summary:
        """The first R evaluations at S (computing those not yet done) and the standard error of their mean."""
        done = self.done.setdefault(S, [])
        while len(done) < R:
            done.append(self.one(S, len(done)))
        ell = np.stack([e for e, _ in done[:R]])  # [R, N] (or [R, 1])
        kl = np.asarray([k for _, k in done[:R]])  # [R]
        totals = ell.sum(1) - kl  # [R]
        if R == 1:  # only where nothing is sampled
            var = 0.0
        elif ell.shape[1] > 1:  # every input draws its own samples: the total's variance is the sum of theirs
            var = ell.var(0, ddof=1).sum() + kl.var(ddof=1)
        else:
            var = totals.var(ddof=1)
        return Summary(S, R, float(totals.mean()), float(ell.sum(1).mean()), float(kl.mean()),
                       float(math.sqrt(max(var, 0.0) / R)))


def precise_elbo(model, X: torch.Tensor, y: torch.Tensor, *, target_se: float, batch_size: int = 1000,
                 seed: int = 0) -> ElboEstimate:
    """The ELBO of `model` over the whole of X [N, ...], y [N] with a Monte-Carlo standard error of at most
    `target_se` nats (or the caps reached, said in `method`); see the module docstring. `seed` is the base of the
    evaluations' seeds, so a call is repeatable and another base gives an independent estimate."""
    if getattr(model, "full_elbo", None) is None:
        raise ConfigError(f"{type(model).__name__} has no whole-data ELBO (full_elbo): it is not a variational model")
    if not (isinstance(target_se, (int, float)) and math.isfinite(target_se) and target_se > 0):
        raise ConfigError(f"target_se must be a positive number of nats, got {target_se!r}")
    plan = sampling_of(model)
    runs = Evaluations(model, X, y, batch_size, seed)
    with torch.no_grad():
        if plan.exact:
            out = model.full_elbo(X, y, batch_size=runs.batch(plan.start), seed=seed, num_samples=plan.start)
            return ElboEstimate(out["elbo"], out["expected_log_lik"], out["kl"], 0.0, plan.start or 1, 1, True, 0.0,
                                _exact_words(plan), plan.orbit_size)
        now, previous, stop = _refine(plan, runs, float(target_se))
        first = runs.summary(plan.start, MIN_EVALUATIONS)  # kept from the first round
    bias = _bias(plan, previous, now)
    words = _sampled_words(plan, now, target_se, stop) + _bias_words(plan, first, previous, now)
    exact = now.S == plan.orbit_size and not plan.other  # S grew to the whole orbit
    return ElboEstimate(now.elbo, now.expected_log_lik, now.kl, now.se, now.S or 1, now.R, exact,
                        0.0 if bias is None else bias[0], words, plan.orbit_size, plan.plug_in)


def _refine(plan: Sampling, runs: Evaluations, target: float) -> tuple[Summary, Summary | None, str]:
    """Grow R, then S, until the standard error is at most `target`, and for a plug-in double S until its bias is
    too, or the caps stop it: (the last summary, the one at the S before it or None, what stopped it)."""
    S, R, previous = plan.start, MIN_EVALUATIONS, None
    while True:
        now = runs.summary(S, R)
        bias = _bias(plan, previous, now)
        # a bias is small enough at most the target, or when the two means cannot tell it from none
        wants_bias = plan.plug_in and (bias is None or abs(bias[0]) > max(target, 2 * bias[1]))
        if now.se <= target and not wants_bias:
            return now, previous, "target met"
        need = (S or 1) * R * (now.se / target) ** 2  # the S·R that meets the target: variance ∝ 1 / (S·R)
        if wants_bias and S is not None and S < plan.cap:
            S, previous = min(2 * S, plan.cap), now
        elif now.se > target and R < MAX_EVALUATIONS and (S is None or S == plan.cap or need <= S * MAX_EVALUATIONS):
            R = min(MAX_EVALUATIONS, max(R + 1, math.ceil(need / (S or 1))))  # the cheapest way: many small S
            continue
        elif now.se > target and S is not None and S < plan.cap:
            S, previous = min(plan.cap, S * _power_of_two(need / (S * MAX_EVALUATIONS))), now
        else:
            if S is None:
                return now, previous, (f"stopped at the cap of {R} evaluation seeds (the samples the likelihood or "
                                       "model draws per input are its own)")
            return now, previous, (f"stopped at the caps: {S} samples per input (at most {MAX_SAMPLES}) and {R} "
                                   f"evaluation seeds (at most {MAX_EVALUATIONS})")
        if S == plan.orbit_size and not plan.other:  # S grew to the whole orbit: exact, one evaluation
            R = 1
        else:
            R = MIN_EVALUATIONS if plan.plug_in else max(MIN_EVALUATIONS, min(MAX_EVALUATIONS, math.ceil(need / S)))


def _power_of_two(ratio: float) -> int:
    """The smallest power of two, at least 2, not below `ratio` (how much more S the 1/S law asks for)."""
    return max(2, 2 ** math.ceil(math.log2(max(ratio, 1.0))))


def _bias(plan: Sampling, previous: Summary | None, now: Summary) -> tuple[float, float] | None:
    """A plug-in's bias at `now`'s S (estimate − limit) and its standard error, from the means at two S under the law
    bias(S) = c·h(S), h(S) = 1/S − 1/P (1/S for a density); (0, 0) for an unbiased estimator, None before two S."""
    if not plan.plug_in:
        return 0.0, 0.0
    if previous is None:
        return None

    def h(s: int) -> float:
        return 1.0 / s - (0.0 if plan.orbit_size is None else 1.0 / plan.orbit_size)

    if h(now.S) == 0.0:  # the whole orbit: the moments are exact, nothing is plugged in
        return 0.0, 0.0
    scale = h(now.S) / (h(previous.S) - h(now.S))
    return (previous.elbo - now.elbo) * scale, math.hypot(previous.se, now.se) * scale


def _exact_words(plan: Sampling) -> str:
    if (plan.orbit_size or 1) > 1:
        return (f"exact: the whole orbit of {plan.orbit_size} elements summed for every input (one evaluation, "
                "no Monte-Carlo error)")
    return "exact: nothing is sampled (one evaluation, no Monte-Carlo error)"


def _sampled_words(plan: Sampling, now: Summary, target: float, stop: str) -> str:
    drawn = f"{now.S} samples per input" if now.S not in (None, plan.orbit_size) else "the whole orbit"
    return (f"Monte Carlo: {drawn} × {now.R} evaluation seeds; standard error {now.se:.3g} nats (target "
            f"{target:.3g}), from the spread of each input's term over the seeds; {stop}")


def _bias_words(plan: Sampling, first: Summary, previous: Summary | None, now: Summary) -> str:
    """How a plug-in estimate moved as S grew (from the first S to the last) and the bias left at the last S."""
    if not plan.plug_in:
        return "; an unbiased estimate"
    bias = _bias(plan, previous, now)
    if bias is None:
        return "; a plug-in estimate (biased), its bias not measured (S could not grow)"
    change, noise = now.elbo - first.elbo, math.hypot(now.se, first.se)
    if abs(change) > 2 * noise:
        moved = (f"the plug-in estimate {'rises' if change > 0 else 'falls'} as S grows by {abs(change):.3g} nats "
                 f"(± {noise:.2g}) from S = {first.S} to {now.S}")
    else:
        moved = (f"the plug-in estimate does not move beyond its noise as S grows from {first.S} to {now.S} "
                 f"({change:+.3g} ± {noise:.2g} nats)")
    if now.S == plan.orbit_size:
        return f"; {moved}; at the whole orbit the moments are exact and no bias is left"
    if abs(bias[0]) <= 2 * bias[1]:
        side = "not told apart from none at this precision"
    else:
        side = "above the limit (it overstates the ELBO)" if bias[0] > 0 else \
            "below the limit (still a lower bound on the evidence)"
    return (f"; {moved}; the bias left at S = {now.S}, if it shrinks like 1/S: {bias[0]:+.3g} ± {bias[1]:.2g} "
            f"nats, {side}")


__all__ = ["ElboEstimate", "precise_elbo", "sampling_of", "EXACT_ORBIT", "MAX_SAMPLES", "MAX_EVALUATIONS"]
