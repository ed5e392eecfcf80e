"""`invlab runs`: the stored runs as a table (or JSON lines), newest first; when `--limit` leaves some out, a last
line says how many of how many are shown."""
from __future__ import annotations

import json
import sys

from .listing import listing_args, read_store, shown


def cmd_runs(argv: list[str]) -> int:
    """`invlab runs ARGV`; returns the exit status."""
    args = listing_args("invlab runs", "List stored runs, newest first.", argv)
    found = read_store("runs", lambda store: (store.list_runs(args.limit), store.count_runs()), ([], 0))
    if isinstance(found, int):
        return found
    (runs, total), where = found
    part = (f"showing the newest {len(runs):,} of {total:,} runs; --limit N shows more, --limit 0 all"
            if len(runs) < total else "")
    if args.json:
        for r in runs:
            print(json.dumps(r.summary()))
        if part:  # beside the JSON lines, not among them
            print(part, file=sys.stderr)
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
        print(fmt.format(r.id, shown(r.model)[:10], shown(r.dataset)[:14], r.status[:11], r.step, num(r.elbo, ".5g"),
                         err, num(r.test_rmse, ".4g"), shown(r.name or "")).rstrip())
    if part:
        print(part)
    return 0

