"""`invlab runs`: the stored runs as a table (or JSON lines), newest first."""
from __future__ import annotations

import argparse
import json
import sys

from ..errors import InvlabError
from .flags import int_flag


def cmd_runs(argv: list[str]) -> int:
    """`invlab runs ARGV`; returns the exit status."""
    from ..train.store import NoRunStore, RunStore

    parser = argparse.ArgumentParser(prog="invlab runs", description="List stored runs, newest first.")
    parser.add_argument("--limit", type=int_flag("--limit", 0, 10**9), default=50,
                        help="Show at most this many (0: all).")
    parser.add_argument("--json", action="store_true", help="One JSON object per line.")
    args = parser.parse_args(argv)
    try:
        with RunStore(create=False) as store:  # listing never creates the data directory
            runs, where = store.list_runs(args.limit), store.path
    except NoRunStore as err:
        if err.mistyped:
            print(f"invlab runs: {err}", file=sys.stderr)
            return 1
        runs, where = [], err.path
    except InvlabError as err:
        print(f"invlab runs: {err}", file=sys.stderr)
        return 1
    if args.json:
        for r in runs:
            print(json.dumps(r.summary()))
        return 0
    if not runs:
        print(f"no runs stored yet in {where}; start one with: invlab train --model svgp --dataset digits")
        return 0
    fmt = "{:>4}  {:<10} {:<14} {:<11} {:>7}  {:>12}  {:>10}  {:>8}  {}"
    print(fmt.format("id", "model", "dataset", "status", "steps", "last ELBO", "test error", "RMSE", "name").rstrip())

    def num(v, f):
        return "-" if v is None else format(v, f)

    for r in runs:
        err = "-" if r.test_error is None else f"{100 * r.test_error:.2f}%"
        print(fmt.format(r.id, r.model[:10], r.dataset[:14], r.status[:11], r.step, num(r.elbo, ".5g"), err,
                         num(r.test_rmse, ".4g"), r.name or "").rstrip())
    return 0

