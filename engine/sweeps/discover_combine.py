"""Stage 2 of a discover run: combine the best single candidates (greedy).

The two best single candidates that each help (beat `none` beyond noise with an invariance, and beat any candidate
they contain: affine its rotation; `discover_verdict.helps`) are combined — the first's augmentation, then the
second's (`model.then_augmentation`, `invlab.transforms.compose`) — and the combination is trained like every
candidate; the report keeps it only where its ELBO beats its first part's beyond noise. The engine composes two
augmentations, so the greedy search stops after one addition.
"""
from __future__ import annotations

import copy

from .discover_names import COMBINED, NONE
from .discover_report import discover_report
from .discover_verdict import helps
from .spec import SweepSpec


def next_combination(store, sweep_id: int) -> tuple[str, str] | None:
    """(first, second): the two best single candidates (registered names, no named coordinates) that each help (beat
    none beyond noise with an invariance, and beat any candidate they contain), best first; None when fewer than two
    do, or one already is combined."""
    report = discover_report(store, sweep_id)
    rows = {c.candidate: c for c in report.ranking if c.elbo_mean is not None}
    # helps: beats none beyond noise, learned an invariance, and beats what it contains (affine: rotation)
    singles = [c for c in report.ranking if c.candidate != NONE and COMBINED not in c.candidate
               and ":" not in c.candidate and helps(c, rows)]
    if len(singles) < 2 or any(COMBINED in c.candidate for c in report.ranking):
        return None
    return singles[0].candidate, singles[1].candidate


def with_combination(spec: SweepSpec, first: str, second: str) -> SweepSpec:
    """`spec` with one more point: `first` then `second` (the other points, and so their run keys, unchanged)."""
    grown = SweepSpec.from_dict(copy.deepcopy(spec.to_dict()))
    grown.vary["model.augmentation"].append(first)
    grown.vary["model.then_augmentation"].append(second)
    if "model.orbit_coordinates" in grown.vary:
        grown.vary["model.orbit_coordinates"].append(None)
    return grown.validate()


__all__ = ["next_combination", "with_combination"]
