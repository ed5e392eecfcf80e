"""Which candidate a discover report names, and the order its table lists them in, so that the two agree.

A candidate *helps* when its ELBO beats none's by more than the seeds' spread, and a combination only where it also
beats its first part so (van der Wilk et al. 2018: the marginal likelihood prefers the simpler model unless the data
say otherwise). The verdict names the best candidate that helps, by mean ELBO. The table is ranked by mean ELBO too,
except that within the seeds' spread the simpler group wins: a candidate that does not help yet has a higher mean
than the simpler group it is judged against (none, or a combination's first part) ranks right below that group. So
the verdict's candidate is always the table's first row; the report marks it ✓ and says, per moved row, why.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .discover_names import COMBINED, NONE

if TYPE_CHECKING:
    from .discover_report import CandidateResult

MARK = "✓"  # the table's mark on the verdict's candidate


def spread(a: CandidateResult, b: CandidateResult) -> float | None:
    """The seed spread against which the ELBO difference of `a` and `b` is judged (None with one seed)."""
    sds = [s for s in (a.elbo_sd, b.elbo_sd) if s is not None]
    return max(sds) if sds else None


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


def helps(c: CandidateResult, rows: dict[str, CandidateResult]) -> bool:
    """Whether `c` beats none beyond noise and, a combination, its first part too (`rows`: the finished candidates
    by name)."""
    if c.candidate == NONE or not beats(c, rows.get(NONE)):
        return False
    parts = combined_parts(c.candidate)
    return len(parts) < 2 or beats(c, rows.get(parts[0]))


def yields_to(c: CandidateResult, rows: dict[str, CandidateResult]) -> str | None:
    """The simpler group a candidate that does not help is judged against: a combination that beats none, its
    first part; any other, none. None for none itself, a candidate that helps, or without a finished none."""
    if c.candidate == NONE or NONE not in rows or c.elbo_mean is None or helps(c, rows):
        return None
    parts = combined_parts(c.candidate)
    if len(parts) > 1 and beats(c, rows[NONE]) and parts[0] in rows:
        return parts[0]
    return NONE


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
        noise = spread(c, g)
        noise_text = f"the seeds' spread ({_nats(noise)})" if noise is not None else "noise"
        notes.append(f"{name} ranks below {target} though its mean ELBO is {_nats(c.elbo_mean - g.elbo_mean)} nats "
                     f"higher: that is within {noise_text}, and within noise the simpler group wins")
    return notes


def _describe(c: CandidateResult) -> str:
    rotation = c.learned.get("rotation")
    if rotation is not None and rotation["mean"] is not None and c.candidate == "rotation":
        return f"rotation-invariant up to ±{rotation['mean']:.0f}°"
    if rotation is not None and rotation["mean"] is not None and len(c.learned) <= 1:
        return f"invariant under {c.candidate} (rotation up to ±{rotation['mean']:.0f}°)"
    if c.learned:
        shown = ", ".join(f"{k} {v['mean']:.3g}" for k, v in list(c.learned.items())[:3] if v["mean"] is not None)
        return f"invariant under {c.candidate} (learned {shown})"
    return f"invariant under {c.candidate}"


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
    losers = [c.candidate for c in ok if c.candidate != NONE and not helps(c, rows)
              and not (len(combined_parts(c.candidate)) > 1 and beats(c, base))]
    no_help = (f"; {', '.join(losers)} {'does' if len(losers) == 1 else 'do'} not help" if losers else "")
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
        return "no invariance beats none beyond noise" + tail + failed
    return f"{_describe(winners[0])} ({_bf_text(winners[0])})" + no_help + failed


__all__ = ["MARK", "beats", "chosen", "combined_parts", "helps", "order_notes", "preferred_order", "spread",
           "verdict", "yields_to"]
