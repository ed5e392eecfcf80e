"""`invlab sweeps`: the stored sweeps as a table (or JSON lines), newest first."""
from __future__ import annotations

import argparse
import json
import sys
import time

from ..errors import InvlabError
from .flags import int_flag


def cmd_sweeps(argv: list[str]) -> int:
    """`invlab sweeps ARGV`; returns the exit status."""
    from ..train.store import NoRunStore, RunStore

    parser = argparse.ArgumentParser(prog="invlab sweeps", description="List stored sweeps, newest first.")
    parser.add_argument("--limit", type=int_flag("--limit", 0, 10**9), default=50,
                        help="Show at most this many (0: all).")
    parser.add_argument("--json", action="store_true", help="One JSON object per line.")
    args = parser.parse_args(argv)
    try:
        with RunStore(create=False) as store:  # listing never creates the data directory
            sweeps, where = store.list_sweeps(args.limit), store.path
            counts = {s.id: sum(r.status == "finished" for r in store.sweep_runs(s.id)) for s in sweeps}
    except NoRunStore as err:
        if err.mistyped:
            print(f"invlab sweeps: {err}", file=sys.stderr)
            return 1
        sweeps, counts, where = [], {}, err.path
    except InvlabError as err:
        print(f"invlab sweeps: {err}", file=sys.stderr)
        return 1
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

