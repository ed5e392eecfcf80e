"""A second opinion on a discover verdict from held-out data: each candidate's test NLPD (and test error or RMSE) on
the data's test split, which the ELBO never saw.

The ELBO's choice is *contradicted* when the chosen candidate's test NLPD, or its test error / RMSE, is worse than
none's by more than the larger of the two figures' standard deviations over seeds; or, when none is chosen, when some
candidate's test NLPD is better than none's by more than that. With one seed there is no spread and any difference
counts (the text says so). Otherwise the held-out figures agree (they do not contradict the choice); without test
figures for none or the chosen candidate there is nothing to check against, which is said, and counts as agreeing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .discover_names import NONE
from .discover_verdict import chosen
from .plus_minus import plus_minus

if TYPE_CHECKING:
    from .discover_report import CandidateResult


@dataclass(frozen=True)
class SecondOpinion:
    """Whether the held-out test figures agree with the ELBO's choice (`agrees`: they do not contradict it) and the
    sentence that says so with the figures."""

    agrees: bool
    text: str

    def to_dict(self) -> dict:
        """{"agrees": bool, "text": str}."""
        return {"agrees": self.agrees, "text": self.text}


def _gap(a: tuple, b: tuple) -> tuple[float, float] | None:
    """(a − b, their noise: the larger sd, 0 with one seed) of two (mean, sd) figures; None without both means."""
    if a[0] is None or b[0] is None:
        return None
    sds = [s for s in (a[1], b[1]) if s is not None]
    return a[0] - b[0], max(sds) if sds else 0.0


def _figure(value: tuple, percent: bool = False) -> str:
    mean, sd = value
    if sd is not None and mean is not None and abs(sd) <= 1e-9 * max(1.0, abs(mean)):
        sd = 0.0  # equal figures over seeds: their sd is rounding noise, not a spread worth fifteen digits
    return plus_minus(mean, sd, 1, 100, "%") if percent else plus_minus(mean, sd, 3)


def _score(c: CandidateResult) -> tuple[str, tuple, bool]:
    """The candidate's held-out score: ('test RMSE', (mean, sd), False) for regression, else the test error."""
    if c.test_rmse[0] is not None:
        return "test RMSE", c.test_rmse, False
    return "test error", c.test_error, True


def _worse(best: CandidateResult, none: CandidateResult) -> list[str]:
    """The held-out figures on which `best` is worse than none beyond their seeds' spread, as phrases."""
    said = []
    name, score, percent = _score(best)
    for label, mine, theirs, pct in (("test NLPD", best.nlpd, none.nlpd, False),
                                     (name, score, _score(none)[1], percent)):
        gap = _gap(mine, theirs)
        if gap is not None and gap[0] > gap[1]:
            said.append(f"{best.candidate}'s {label} {_figure(mine, pct)} is worse than none's {_figure(theirs, pct)} "
                        "beyond their seeds' spread")
    return said


def _hedge(none: CandidateResult) -> str:
    return " (one seed: no spread to judge it by)" if none.nlpd[1] is None else ""


def _against_none(best: CandidateResult, none: CandidateResult) -> SecondOpinion:
    worse = _worse(best, none)
    if worse:
        return SecondOpinion(False, "the held-out test figures disagree: " + "; ".join(worse) + _hedge(none))
    name, score, percent = _score(best)
    extra = ""
    if score[0] is not None and _score(none)[1][0] is not None:
        extra = f" ({name} {_figure(score, percent)} against {_figure(_score(none)[1], percent)})"
    return SecondOpinion(True, f"the held-out test NLPD agrees: {best.candidate}'s {_figure(best.nlpd)} against "
                               f"none's {_figure(none.nlpd)}, no worse beyond their seeds' spread{extra}")


def _for_none(ranking: list[CandidateResult], none: CandidateResult) -> SecondOpinion:
    better = []
    for c in ranking:
        gap = None if c is none or c.elbo_mean is None else _gap(none.nlpd, c.nlpd)
        if gap is not None and gap[0] > gap[1]:
            better.append((c.nlpd[0], c))
    if not better:
        return SecondOpinion(True, f"the held-out test NLPD agrees: no candidate's is better than none's "
                                   f"{_figure(none.nlpd)} beyond their seeds' spread")
    c = min(better, key=lambda pair: pair[0])[1]
    return SecondOpinion(False, f"the held-out test NLPD disagrees: none is chosen, but {c.candidate}'s test NLPD "
                                f"{_figure(c.nlpd)} is better than none's {_figure(none.nlpd)} beyond their seeds' "
                                "spread" + _hedge(none))


def second_opinion(ranking: list[CandidateResult]) -> SecondOpinion:
    """The held-out test figures' opinion of the verdict's choice among `ranking` (the module's doc)."""
    best = chosen(ranking)
    none = next((c for c in ranking if c.candidate == NONE and c.elbo_mean is not None), None)
    if best is None or none is None or none.nlpd[0] is None or best.nlpd[0] is None:
        return SecondOpinion(True, "no second opinion: the held-out test NLPD of none or of the chosen candidate "
                                   "is not known")
    if best is none:
        return _for_none(ranking, none)
    return _against_none(best, none)


__all__ = ["SecondOpinion", "second_opinion"]
