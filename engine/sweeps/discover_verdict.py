"""Which candidate a discover report names, and the order its table lists them in, so that the two agree.

*Beyond noise*: candidate a beats b when its mean ELBO exceeds b's by more than

    noise(a, b) = sqrt(max(sd_a, sd_b)² + mc_a² + mc_b²),

sd the ELBO's standard deviation over seeds and mc the Monte-Carlo standard error of the mean ELBO over seeds
(mc = sqrt(Σ se_i²) / n from each seed's evaluation, 0 when exact); where either is unknown (a run stored before the
precision was recorded) only the seeds' spread counts. With one seed and no Monte-Carlo error known there is no noise
figure, and any difference counts.

A candidate *helps* when it beats none beyond noise, its learned ranges (if any) hold at least one invariance
(`discover_ranges.no_invariance`), and it also beats each simpler candidate it contains: a combination its first part,
`affine` the `rotation` it contains (where that finished) — van der Wilk et al. 2018: the marginal likelihood prefers
the simpler model unless the data say otherwise. The verdict names the best candidate that helps, by mean ELBO. The
table is ranked by mean ELBO too, except that within noise the simpler group wins: a candidate that does not help yet
has a higher mean than the simpler group it is judged against (none, a combination's first part, or the candidate it
contains) ranks right below that group. So the verdict's candidate is always the table's first row; the report marks
it ✓ and says, per moved row, why.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .discover_names import COMBINED, NONE
from .discover_ranges import describe, no_invariance

if TYPE_CHECKING:
    from .discover_report import CandidateResult

MARK = "✓"  # the table's mark on the verdict's candidate
# A candidate whose group holds another candidate's group: it must beat that one beyond noise to be named (affine's
# rotation range is the rotation candidate's; a plugin's nesting is not known, so it is judged against none only).
CONTAINS: dict[str, tuple[str, ...]] = {"affine": ("rotation",)}


def seed_spread(a: CandidateResult, b: CandidateResult) -> float | None:
    """The larger of the two candidates' ELBO standard deviations over seeds (None with one seed)."""
    sds = [s for s in (a.elbo_sd, b.elbo_sd) if s is not None]
    return max(sds) if sds else None


def mc_error(a: CandidateResult, b: CandidateResult) -> float | None:
    """The Monte-Carlo error of the difference of the two mean ELBOs, sqrt(mc_a² + mc_b²); None unless both are
    known (a run stored before the precision was recorded: its error is unknown, and only the seeds' spread counts)."""
    if a.elbo_mc_se is None or b.elbo_mc_se is None:
        return None
    return math.sqrt(a.elbo_mc_se ** 2 + b.elbo_mc_se ** 2)


def spread(a: CandidateResult, b: CandidateResult) -> float | None:
    """The noise against which the ELBO difference of `a` and `b` is judged: sqrt(max sd² + mc_a² + mc_b²) (the
    module's doc); None with one seed and no Monte-Carlo error known."""
    sd, mc = seed_spread(a, b), mc_error(a, b)
    if sd is None and mc is None:
        return None
    return math.sqrt((sd or 0.0) ** 2 + (mc or 0.0) ** 2)


def noise_words(a: CandidateResult, b: CandidateResult) -> str:
    """The noise of `a` against `b` with its figures: 'seed spread 0.5' where no Monte-Carlo error is known, else
    'noise 1.8: seed spread 0.5, Monte-Carlo error 1.73'."""
    noise, sd, mc = spread(a, b), seed_spread(a, b), mc_error(a, b)
    if noise is None:
        return "no noise figure (one seed)"
    if mc is None:
        return f"seed spread {noise:.3g}"
    return f"noise {noise:.3g}: seed spread {sd or 0.0:.3g}, Monte-Carlo error {mc:.3g}"


def beats(a: CandidateResult, b: CandidateResult | None) -> bool:
    """Whether `a`'s mean ELBO exceeds `b`'s by more than their seed spread (by anything, with one seed)."""
    if b is None or a.elbo_mean is None or b.elbo_mean is None:
        return False
    noise = spread(a, b)
    return a.elbo_mean - b.elbo_mean > (noise if noise is not None else 0.0)


def combined_parts(name: str) -> list[str]:
    """The single candidates a combination is made of ('rotation+flips' → ['rotation', 'flips'])."""
    return name.split(COMBINED)


def _finished(ranking: list[CandidateResult]) -> dict[str, CandidateResult]:
    return {c.candidate: c for c in ranking if c.elbo_mean is not None}


def contained(c: CandidateResult, rows: dict[str, CandidateResult]) -> list[str]:
    """The finished simpler candidates `c` holds and must beat beyond noise to be named (affine: rotation)."""
    return [name for name in CONTAINS.get(c.candidate, ()) if name in rows]


def helps(c: CandidateResult, rows: dict[str, CandidateResult]) -> bool:
    """Whether `c` beats none beyond noise, learned an invariance (where it learns ranges), and beats each simpler
    candidate it holds: a combination's first part, affine's rotation (`rows`: the finished candidates by name)."""
    if c.candidate == NONE or no_invariance(c) or not beats(c, rows.get(NONE)):
        return False
    parts = combined_parts(c.candidate)
    if len(parts) > 1 and not beats(c, rows.get(parts[0])):
        return False
    return all(beats(c, rows[name]) for name in contained(c, rows))


def yields_to(c: CandidateResult, rows: dict[str, CandidateResult]) -> str | None:
    """The simpler group a candidate that does not help is judged against: one that beats none and learned an
    invariance, the simpler candidate it does not beat (a combination's first part, affine's rotation); any other,
    none. None for none itself, a candidate that helps, or without a finished none."""
    if c.candidate == NONE or NONE not in rows or c.elbo_mean is None or helps(c, rows):
        return None
    if no_invariance(c) or not beats(c, rows[NONE]):
        return NONE
    parts = combined_parts(c.candidate)
    simpler = [parts[0]] if len(parts) > 1 else contained(c, rows)
    return next((name for name in simpler if name in rows and not beats(c, rows[name])), NONE)


def chosen(ranking: list[CandidateResult]) -> CandidateResult | None:
    """The candidate the verdict names: the best by mean ELBO that helps, else none (when it finished)."""
    rows = _finished(ranking)
    ok = sorted(rows.values(), key=lambda c: -c.elbo_mean)
    return next((c for c in ok if helps(c, rows)), rows.get(NONE))


def preferred_order(ranking: list[CandidateResult]) -> tuple[list[CandidateResult], dict[str, str]]:
    """`ranking` (best mean ELBO first) in the table's order, where within noise the simpler group wins: each
    candidate that does not help and ranks above the group it yields to moves right below it (a move only ever
    lowers a row; candidates with no ELBO stay last). Returns the order and {moved candidate: the group it yields
    to}."""
    rows = _finished(ranking)
    order, moved = list(ranking), {}
    for _ in range(len(order)):  # a group can itself move below its own simpler group: repeat until nothing moves
        changed = False
        for c in list(order):
            target = yields_to(c, rows)
            names = [r.candidate for r in order]
            if target is None or names.index(c.candidate) > names.index(target):
                continue
            order.remove(c)
            order.insert([r.candidate for r in order].index(target) + 1, c)
            moved[c.candidate], changed = target, True
        if not changed:
            break
    return order, moved


def order_notes(ranking: list[CandidateResult], moved: dict[str, str]) -> list[str]:
    """What the table's order needs said: which row is the verdict's (✓), and why each moved row ranks below a
    group with a lower mean ELBO."""
    rows = _finished(ranking)
    best = chosen(ranking)
    notes = [f"{MARK} marks the verdict's candidate, {best.candidate}"] if best is not None else []
    for name, target in moved.items():
        c, g = rows[name], rows[target]
        higher = f"{name} ranks below {target} though its mean ELBO is {_nats(c.elbo_mean - g.elbo_mean)} nats higher"
        if no_invariance(c):
            notes.append(f"{higher}: its learned ranges are no invariance (see the note on {name})")
            continue
        noise_text = f"the {noise_words(c, g)}" if spread(c, g) is not None else "noise"
        notes.append(f"{higher}: that is within {noise_text}, and within noise the simpler group wins")
    return notes


def _nats(value: float) -> str:
    """A number of nats as a reader takes it in: whole above 100, three significant digits below."""
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _bf_text(c: CandidateResult) -> str:
    from .plus_minus import plus_minus  # mean ± sd: the sd to two figures, the mean to the same place

    shown = plus_minus(c.log_bf, c.log_bf_sd) if c.log_bf_sd is not None else _nats(c.log_bf)
    return f"log BF {shown} over none"


def verdict(ranking: list[CandidateResult]) -> str:
    """One sentence: the best candidate and its log Bayes factor over none, and which candidates do not help (a
    combination only wins where it beats its best part beyond noise); when every candidate loses to none beyond
    noise, that none is best and by how many nats at least. `ranking`: best mean ELBO first."""
    ok = [c for c in ranking if c.elbo_mean is not None]
    if not ok:
        return "no candidate finished: nothing can be said about this data's invariances"
    base = next((c for c in ok if c.candidate == NONE), None)
    if base is None:
        return f"{ok[0].candidate} ranks first, but the baseline none did not finish, so no Bayes factor can be given"
    rows = _finished(ok)
    winners = [c for c in ok if helps(c, rows)]
    empty = [c.candidate for c in ok if no_invariance(c)]
    losers = [c.candidate for c in ok if c.candidate != NONE and not helps(c, rows) and not no_invariance(c)
              and yields_to(c, rows) in (NONE, None)]
    no_help = (f"; {', '.join(losers)} {'does' if len(losers) == 1 else 'do'} not help" if losers else "")
    no_help += f"; {', '.join(empty)} learned no invariance (see the notes)" if empty else ""
    broken = [c.candidate for c in ranking if c.elbo_mean is None and c.failed]
    failed = f"; {', '.join(broken)} failed (see the notes)" if broken else ""
    if not winners:
        best = next((c for c in ok if c.candidate != NONE), None)
        tried = [c for c in ok if c.candidate != NONE]
        if tried and all(beats(base, c) for c in tried) and best.log_bf is not None:  # each loses beyond noise
            return (f"none is best: every invariance tried lowers the ELBO beyond the seeds' spread, by "
                    f"{_nats(base.elbo_mean - best.elbo_mean)} nats or more ({best.candidate} comes closest, "
                    f"{_bf_text(best)})" + failed)
        tail = f" (best: {best.candidate}, {_bf_text(best)})" if best is not None and best.log_bf is not None else ""
        learned = f"; {', '.join(empty)} learned no invariance (see the notes)" if empty else ""
        return "no invariance beats none beyond noise" + tail + learned + failed
    return f"{describe(winners[0])} ({_bf_text(winners[0])})" + no_help + failed


__all__ = ["CONTAINS", "MARK", "beats", "chosen", "combined_parts", "contained", "helps", "mc_error", "noise_words",
           "order_notes", "preferred_order", "seed_spread", "spread", "verdict", "yields_to"]
