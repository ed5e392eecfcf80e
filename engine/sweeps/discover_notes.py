"""The notes under a discover verdict: what a reader must know to trust the ranking.

The budget every candidate had; whether the report is partial; which neighbours are within noise (with both of its
figures: the seeds' spread and the ELBO's Monte-Carlo error, `discover_verdict.spread`); where the seeds disagree on
the order; the one footing every ELBO stands on (exact, or sampled to a stated Monte-Carlo standard error; a measured
bias and its direction) and where the Monte-Carlo error is not small beside the seeds' spread; which candidates'
learned ranges are no invariance and why; how a combination compares with its first part and `affine` with the
`rotation` it contains; candidates not run, and each failure with its reason.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .discover_names import NONE
from .discover_ranges import no_invariance, no_invariance_note
from .discover_verdict import CONTAINS, beats, combined_parts, noise_words, spread

if TYPE_CHECKING:
    from .discover_report import CandidateResult

NOT_SMALL = 1 / 3  # a Monte-Carlo error above this fraction of the seeds' spread is said to be not small beside it


def statistics_notes(ranking: list[CandidateResult], budget: dict, partial: bool, status: str) -> list[str]:
    """The notes for `ranking` (best mean ELBO first) under `budget` (`discover_report.budget_of`), in the order a
    reader needs them (the module's doc)."""
    notes = [_budget(budget)]
    if partial:
        notes.append(f"partial: the run was {status} before every candidate finished; the ranking covers what did")
    ok = [c for c in ranking if c.elbo_mean is not None]
    if len(budget["seeds"]) < 2 or all(c.elbo_sd is None for c in ok):
        known = any(c.elbo_mc_se for c in ok)
        notes.append("one seed per candidate: there is no seed spread to judge the differences by"
                     + ("; only the ELBOs' Monte-Carlo error judges them" if known else ""))
    for a, b in zip(ok, ok[1:]):
        noise = spread(a, b)
        if noise is not None and a.elbo_mean - b.elbo_mean <= noise:
            notes.append(f"{a.candidate} and {b.candidate} are within noise: ELBO difference "
                         f"{a.elbo_mean - b.elbo_mean:.3g} nats ≤ " + noise_words(a, b))
    notes.extend(_seed_orders(ok))
    notes.extend(footing_notes(ok))
    notes.extend(no_invariance_note(c) for c in ok if no_invariance(c))
    notes.extend(_combination_notes(ranking))
    notes.extend(_nesting_notes(ranking))
    unrun = [c.candidate for c in ranking if not c.finished and not c.failed]
    if unrun:
        notes.append(f"not run before the sweep stopped: {', '.join(unrun)}")
    for c in ranking:
        for message in c.failed:
            notes.append(f"{c.candidate} failed ({message}); it is left out of its mean")
    return notes


def _budget(budget: dict) -> str:
    return (f"every candidate: {budget['steps']} steps of {budget['optimizer']} (learning rate "
            f"{budget['learning_rate']:g}, batch {budget['batch_size'] or 'all'}), M = {budget['num_inducing']} "
            f"inducing points, S = {budget['num_samples']} samples per input (a finite orbit's whole orbit when "
            f"smaller), seeds {', '.join(map(str, budget['seeds']))}")


def _seed_orders(ok: list[CandidateResult]) -> list[str]:
    seeds = sorted({s for c in ok for s in c.elbos})
    overall = [c.candidate for c in ok]
    notes = []
    for s in seeds:
        order = [c.candidate for c in sorted((c for c in ok if s in c.elbos), key=lambda c: -c.elbos[s])]
        if order != [n for n in overall if n in order]:
            notes.append(f"seeds disagree on the order: seed {s} ranks {' > '.join(order)}")
    return notes


def footing_notes(ok: list[CandidateResult]) -> list[str]:
    """The footing every finished candidate's ELBO stands on: exact, or sampled to a Monte-Carlo standard error
    (the largest per run given); the measured bias of a sampled estimate and its direction; where the Monte-Carlo
    error is not small beside the seeds' spread; and which candidates' error is not known (an old sweep)."""
    unknown = [c for c in ok if c.elbo_mc_se is None]
    known = [c for c in ok if c.elbo_mc_se is not None]
    exact = [c.candidate for c in known if not any(c.mc_ses.values())]
    sampled = [c for c in known if any(c.mc_ses.values())]
    notes = []
    if known:
        parts = [f"exact for {', '.join(exact)} (one evaluation: nothing sampled, or the whole orbit)"] if exact else []
        if sampled:
            worst = max(max(c.mc_ses.values()) for c in sampled)
            parts.append(f"sampled to a Monte-Carlo standard error of at most {worst:.3g} nats per run for "
                         + "; ".join(f"{', '.join(names)} ({e})" for e, names in _by_estimator(sampled).items()))
        notes.append("one footing: every candidate's ELBO is on the whole training set, " + "; ".join(parts))
    for c in known:
        if c.elbo_bias:
            way = "an overestimate" if c.elbo_bias > 0 else "an underestimate"
            notes.append(f"{c.candidate}'s sampled ELBO is biased for this likelihood: measured bias "
                         f"{c.elbo_bias:+.3g} nats ({way} of the bound)")
        if c.elbo_sd and c.elbo_mc_se and c.elbo_mc_se > NOT_SMALL * c.elbo_sd:
            notes.append(f"{c.candidate}'s ELBO Monte-Carlo error ({c.elbo_mc_se:.3g} nats) is not small beside its "
                         f"seed spread ({c.elbo_sd:.3g} nats): both count in 'beyond noise'")
    if unknown:
        estimators = "; ".join(f"{e} for {', '.join(names)}" for e, names in _by_estimator(unknown).items())
        notes.append(f"no Monte-Carlo error is known for {', '.join(c.candidate for c in unknown)} (their runs were "
                     f"stored before the ELBO's precision was recorded): {estimators}; 'beyond noise' counts only "
                     "the seeds' spread for them (a sampled estimate is unbiased, with its own Monte-Carlo noise)")
    return notes


def _by_estimator(candidates: list[CandidateResult]) -> dict[str, list[str]]:
    """The candidates' names grouped by their estimator's phrase ('6 samples per input': [rotation, affine])."""
    groups: dict[str, list[str]] = {}
    for c in candidates:
        groups.setdefault(c.estimator or "estimator not recorded", []).append(c.candidate)
    return groups


def _compared(c: CandidateResult, simpler: CandidateResult, kept: str, preferred: str) -> str:
    """How `c` changes the ELBO of the simpler candidate it holds, with the noise, and what follows."""
    gain = c.elbo_mean - simpler.elbo_mean
    noise = f" ({noise_words(c, simpler)})" if spread(c, simpler) is not None else ""
    name = simpler.candidate
    if beats(c, simpler):
        return f"improves the ELBO of {name} by {gain:.3g} nats{noise}: {kept}"
    if beats(simpler, c):
        return f"lowers the ELBO of {name} by {-gain:.3g} nats{noise}: {name} alone is better"
    return f"changes the ELBO of {name} by {gain:.3g} nats, within noise{noise}: {preferred}"


def _combination_notes(ranking: list[CandidateResult]) -> list[str]:
    rows = {c.candidate: c for c in ranking if c.elbo_mean is not None}
    notes = []
    for c in rows.values():
        parts = combined_parts(c.candidate)
        if len(parts) < 2 or parts[0] not in rows:
            continue
        outcome = _compared(c, rows[parts[0]], "kept", f"{parts[0]} alone is preferred")
        notes.append(f"stage 2: {c.candidate} {outcome}; combinations of more than two are not tried")
    return notes


def _nesting_notes(ranking: list[CandidateResult]) -> list[str]:
    rows = {c.candidate: c for c in ranking if c.elbo_mean is not None}
    notes = []
    for c in rows.values():
        if not beats(c, rows.get(NONE)):
            continue  # it does not help on its own: the simpler candidate it holds cannot change that
        for name in CONTAINS.get(c.candidate, ()):
            if name in rows:
                outcome = _compared(c, rows[name], f"{c.candidate} adds to it", f"{name} alone is preferred")
                notes.append(f"{c.candidate} contains {name}: it {outcome}")
    return notes


__all__ = ["NOT_SMALL", "footing_notes", "statistics_notes"]
