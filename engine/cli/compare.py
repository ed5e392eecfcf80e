"""`invlab compare ID`: a stored sweep's points ranked by whole-data ELBO, with test error and NLPD."""
from __future__ import annotations

import argparse
import json
import math
import sys

from ..errors import InvlabError
from .flags import id_flag
from .listing import shown
from .sweeps import resume_note


def decimals(pairs: list[tuple[float | None, float | None]], scale: float = 1.0) -> int:
    """Decimal places for one column of `mean ± sd` (0 to 6): the smallest non-zero sd to two significant digits,
    else the largest mean to four, so every row of the column shows the same precision."""
    sds = [abs(sd * scale) for mean, sd in pairs if mean is not None and sd is not None and math.isfinite(sd) and sd]
    means = [abs(mean * scale) for mean, _ in pairs if mean is not None and math.isfinite(mean) and mean]
    if sds:
        places = 1 - math.floor(math.log10(min(sds)))
    elif means:
        places = 3 - math.floor(math.log10(max(means)))
    else:
        places = 2
    return max(0, min(6, places))


def _pm(mean, sd, places: int, scale: float = 1.0, unit: str = "") -> str:
    """`mean ± sd` with `places` decimals (the unit once, at the end); "-" without a mean."""
    if mean is None:
        return "-"
    text = f"{mean * scale:.{places}f}"
    return text + (f" ± {sd * scale:.{places}f}" if sd is not None else "") + unit


def cmd_compare(argv: list[str]) -> int:
    """`invlab compare ARGV`; returns the exit status."""
    from ..sweeps import comparison
    from ..train import RunStore
    from ..train.states import RunStatus

    parser = argparse.ArgumentParser(prog="invlab compare", description="A sweep's points sorted by whole-data ELBO "
                                     "(mean ± sd over seeds), with test error and NLPD.")
    parser.add_argument("sweep_id", type=id_flag("sweep"), metavar="ID",
                        help="The stored sweep to compare (its id in `invlab sweeps`).")
    parser.add_argument("--json", action="store_true", help="The whole comparison as one JSON object.")
    args = parser.parse_args(argv)
    try:
        with RunStore() as store:
            cmp = comparison(store, args.sweep_id)
    except InvlabError as err:
        print(f"invlab compare: {err}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(cmp.to_dict()))
        return 0
    print(f"sweep {cmp.sweep_id} ({shown(cmp.name)}): {sum(r['status'] == RunStatus.FINISHED for r in cmp.runs)}/"
          f"{cmp.total} runs finished")
    note = resume_note(cmp.sweep_id, cmp.status)
    if note:
        print(note)
    print(("" if cmp.comparable else "WARNING: ") + cmp.reason)
    axes = cmp.axes or ["(base)"]
    regression = all(g["error_mean"] is None for g in cmp.groups) and any(g["rmse_mean"] is not None
                                                                         for g in cmp.groups)
    headers = [*axes, "n", "ELBO (whole data)", "test RMSE" if regression else "test error", "NLPD", "learned"]
    ranked = cmp.ranked()

    def places(name: str, scale: float = 1.0) -> int:
        return decimals([(g[f"{name}_mean"], g[f"{name}_sd"]) for g in ranked], scale)

    elbo, nlpd = places("elbo"), places("nlpd")
    score_places = places("rmse") if regression else min(2, places("error", 100))
    rows = []
    for g in ranked:
        learned = ", ".join(f"{k} {_pm(v['mean'], v['sd'], 1)}" for k, v in g["learned"].items())
        score = (_pm(g["rmse_mean"], g["rmse_sd"], score_places) if regression
                 else _pm(g["error_mean"], g["error_sd"], score_places, 100, "%"))
        rows.append([*(json.dumps(g.get(a)) if a in g else "" for a in axes), str(g["n"]),
                     _pm(g["elbo_mean"], g["elbo_sd"], elbo), score, _pm(g["nlpd_mean"], g["nlpd_sd"], nlpd),
                     learned or "-"])
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    return 0

