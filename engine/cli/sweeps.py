"""`invlab sweeps`: the stored sweeps as a table (or JSON lines), newest first."""
from __future__ import annotations

import json
import time

from .listing import listing_args, read_store


def cmd_sweeps(argv: list[str]) -> int:
    """`invlab sweeps ARGV`; returns the exit status."""
    args = listing_args("invlab sweeps", "List stored sweeps, newest first.", argv)

    def read(store):
        sweeps = store.list_sweeps(args.limit)
        return sweeps, {s.id: sum(r.status == "finished" for r in store.sweep_runs(s.id)) for s in sweeps}

    found = read_store("sweeps", read, ([], {}))
    if isinstance(found, int):
        return found
    (sweeps, counts), where = found
    if args.json:
        for s in sweeps:
            print(json.dumps({**s.summary(), "finished": counts[s.id]}))
        return 0
    if not sweeps:
        print(f"no sweeps stored yet in {where}; start one with: invlab sweep --study rotation-choice --quick")
        return 0
    fmt = "{:>4}  {:<28} {:<11} {:>9}  {:<19}"
    print(fmt.format("id", "name", "status", "runs", "started"))
    for s in sweeps:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.created))
        print(fmt.format(s.id, s.name[:28], s.status[:11], f"{counts[s.id]}/{s.total}", started))
    return 0

