"""`invlab compare ID`: a stored sweep's points ranked by whole-data ELBO, with test error and NLPD."""
from __future__ import annotations

import argparse
import json
import sys

from ..errors import InvlabError
from .flags import id_flag


def _pm(mean, sd, spec: str = ".4g", scale: float = 1.0, unit: str = "") -> str:
    if mean is None:
        return "-"
    text = format(mean * scale, spec) + unit
    return text + (f" ± {format(sd * scale, spec)}{unit}" if sd is not None else "")


def cmd_compare(argv: list[str]) -> int:
    """`invlab compare ARGV`; returns the exit status."""
    from ..sweeps import comparison
    from ..train import RunStore

    parser = argparse.ArgumentParser(prog="invlab compare", description="A sweep's points sorted by whole-data ELBO "
                                     "(mean ± sd over seeds), with test error and NLPD.")
    parser.add_argument("sweep_id", type=id_flag("sweep"), metavar="ID")
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
    print(f"sweep {cmp.sweep_id} ({cmp.name}): {sum(r['status'] == 'finished' for r in cmp.runs)}/{cmp.total} runs "
          "finished")
    print(("" if cmp.comparable else "WARNING: ") + cmp.reason)
    axes = cmp.axes or ["(base)"]
    regression = all(g["error_mean"] is None for g in cmp.groups) and any(g["rmse_mean"] is not None
                                                                         for g in cmp.groups)
    headers = [*axes, "n", "ELBO (whole data)", "test RMSE" if regression else "test error", "NLPD", "learned"]
    rows = []
    for g in cmp.ranked():
        learned = ", ".join(f"{k} {_pm(v['mean'], v['sd'], '.1f')}" for k, v in g["learned"].items())
        score = (_pm(g["rmse_mean"], g["rmse_sd"], ".4g") if regression
                 else _pm(g["error_mean"], g["error_sd"], ".2f", 100, "%"))
        rows.append([*(json.dumps(g.get(a)) if a in g else "" for a in axes), str(g["n"]),
                     _pm(g["elbo_mean"], g["elbo_sd"], ".5g"), score, _pm(g["nlpd_mean"], g["nlpd_sd"], ".4g"),
                     learned or "-"])
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    return 0

