"""`invlab runs`: the stored runs as a table (or JSON lines), newest first; when `--limit` leaves some out, a last
line says how many of how many are shown. Names are never cut: each column is as wide as its widest entry. A run of
a discover study is named by its study and candidate ("discover #3: rotation, seed 1")."""
from __future__ import annotations

import json
import sys

from .listing import listing_args, read_store, shown

# (title, right-aligned) of the table's columns; the last, the name, is not padded
COLUMNS = (("id", True), ("model", False), ("dataset", False), ("status", False), ("steps", True),
           ("last ELBO", True), ("test error", True), ("RMSE", True), ("name", False))


def discover_candidates(store, runs) -> dict[int, tuple[int, str, int]]:
    """{run id: (sweep id, candidate, training seed)} for those of `runs` that a discover study trained: the
    candidate ('none', 'rotation', 'permutations:0,1', 'rotation+flips') is the augmentation in the run's config."""
    from ..errors import InvlabError
    from ..sweeps.discover_names import point_name
    from ..sweeps.discover_report import is_discover
    from ..sweeps.spec import SweepSpec
    from ..train import RunConfig

    studies: dict[int, bool] = {}
    found = {}
    for r in runs:
        if r.sweep_id is None:
            continue
        if r.sweep_id not in studies:
            try:
                studies[r.sweep_id] = is_discover(SweepSpec.from_json(store.sweeps.get(r.sweep_id).spec))
            except (InvlabError, ValueError, KeyError, TypeError):  # a sweep gone or unreadable: no candidate to say
                studies[r.sweep_id] = False
        if not studies[r.sweep_id]:
            continue
        try:
            config = RunConfig.from_json(r.config)
        except InvlabError:
            continue
        model = config.model_config
        point = {f"model.{k}": model.get(k) for k in ("augmentation", "orbit_coordinates", "then_augmentation")}
        found[r.id] = (r.sweep_id, point_name(point), int(config.train.get("seed", 0)))
    return found


def _read(store, limit):
    runs = store.runs.list(limit)
    return runs, store.runs.count(), discover_candidates(store, runs)


def _cells(r, candidate) -> list[str]:
    def num(v, f):
        return "-" if v is None else format(v, f)

    name = r.name or ""
    if candidate is not None:
        sweep_id, label, seed = candidate
        name = f"discover #{sweep_id}: {label}, seed {seed}" + (f" ({name})" if name else "")
    err = "-" if r.test_error is None else f"{100 * r.test_error:.2f}%"
    return [str(r.id), shown(r.model), shown(r.dataset), shown(r.status), str(r.step), num(r.elbo, ".5g"), err,
            num(r.test_rmse, ".4g"), shown(name)]


def table_lines(rows: list[list[str]]) -> list[str]:
    """The header and `rows` (cells as text, in `COLUMNS`' order) as aligned lines, every column as wide as its
    widest entry so that no name is cut."""
    titles = [title for title, _ in COLUMNS]
    widths = [max(len(cell) for cell in column) for column in zip(titles, *rows)]
    lines = []
    for cells in [titles, *rows]:
        padded = [c.rjust(w) if right else c.ljust(w) for c, w, (_, right) in zip(cells[:-1], widths, COLUMNS)]
        lines.append("  ".join([*padded, cells[-1]]).rstrip())
    return lines


def cmd_runs(argv: list[str]) -> int:
    """`invlab runs ARGV`; returns the exit status."""
    args = listing_args("invlab runs", "List stored runs, newest first.", argv)
    found = read_store("runs", lambda store: _read(store, args.limit), ([], 0, {}))
    if isinstance(found, int):
        return found
    (runs, total, candidates), where = found
    part = (f"showing the newest {len(runs):,} of {total:,} runs; --limit N shows more, --limit 0 all"
            if len(runs) < total else "")
    if args.json:
        for r in runs:
            sweep_id, candidate, _ = candidates.get(r.id, (r.sweep_id, None, None))
            print(json.dumps({**r.summary(), "sweep_id": sweep_id, "candidate": candidate}))
        if part:  # beside the JSON lines, not among them
            print(part, file=sys.stderr)
        return 0
    if not runs:
        print(f"no runs stored yet in {where}; start one with: invlab train --model svgp --dataset digits")
        return 0
    for line in table_lines([_cells(r, candidates.get(r.id)) for r in runs]):
        print(line)
    if part:
        print(part)
    return 0
