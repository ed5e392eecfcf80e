"""`invlab sweeps`: the stored sweeps as a table (or JSON lines), newest first."""
from __future__ import annotations

import json
import time

from ..train.states import RunStatus, SweepStatus
from .listing import listing_args, read_store, shown


def resume_note(sweep_id: int, status: str) -> str | None:
    """The line that says how to continue sweep `sweep_id` when it is `interrupted` (stopped, or its process killed:
    the store marks a `running` sweep whose writer is gone so), else None."""
    if status != SweepStatus.INTERRUPTED:
        return None
    return (f"sweep {sweep_id} is interrupted: the process that ran it is gone; continue it with: invlab sweep "
            f"--resume {sweep_id}")


def cmd_sweeps(argv: list[str]) -> int:
    """`invlab sweeps ARGV`; returns the exit status."""
    args = listing_args("invlab sweeps", "List stored sweeps, newest first.", argv)

    def read(store):
        sweeps = store.sweeps.list(args.limit)
        return sweeps, {s.id: sum(r.status == RunStatus.FINISHED for r in store.sweeps.runs(s.id)) for s in sweeps}

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
        print(fmt.format(s.id, shown(s.name)[:28], s.status[:11], f"{counts[s.id]}/{s.total}", started))
    for s in sweeps:
        note = resume_note(s.id, s.status)
        if note:
            print(note)
    return 0

