"""Does Discover find a planted invariance? 24 generated data sets with a known answer (images with full and partial
rotation, flips, quarter turns, cyclic shifts, translation, scale; vectors with permutations of all or some
coordinates and sign flips; six with nothing planted) plus the bundled digits turned by ±90°, each studied as a user
would: written as an npz file and given to `plan_candidates({"dataset": "npz:FILE"}, seeds=2)` with every other
setting the product's default (the candidates a user would name for groups on some coordinates), trained with
`run_candidates` (serially in this process, or `--dask` on the default LocalCluster) into a temporary run store and
ranked by `discover_report`.

A set is a *hit* when the report's top candidate is the planted one (a combination's parts in either order); a
candidate that is also a true symmetry (full rotation implies quarter turns) is never counted as a hit. On a set
with nothing planted, a verdict naming any invariance is a *false invariance*. Targets: ≥ 90 % hits, no false
invariance, the ±45° set's learned rotation within ±10° of 45°.

    python -m benchmarks.discover.planted [--quick] [--only NAME ...] [--json FILE] [--dask]

Prints one row per set (planted answer, top candidate, the verdict's candidate, learned ranges beside the planted
ones, seconds) and the summary; the last line is one JSON object. The sets: benchmarks/discover/planted_sets.py.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from invlab.sweeps import discover_verdict
from invlab.sweeps.discover import plan_candidates, run_candidates
from invlab.sweeps.discover_report import discover_report
from invlab.train import RunStore

from ..common import arguments, emit, log, parse
from .planted_sets import DIGITS, DIGITS_DATA, QUICK, SETS, PlantedSet

TARGETS = {"hit_fraction": 0.9, "false_invariances": 0, "rotation_45_error_deg": 10.0}
PARTIAL_ROTATION = "rotation-45"


def learned_ranges(row, keys) -> dict[str, list[float]]:
    """The candidate row's learned ranges for the planted parameters `keys`, each as [lo, hi] in the report's units
    (a symmetric range α as [−α, α]; a range the row does not have is left out)."""
    out = {}
    for key in keys:
        values = getattr(row, "learned", {}) or {}
        if key in values and values[key].get("mean") is not None:
            out[key] = [-abs(values[key]["mean"]), abs(values[key]["mean"])]
        else:
            lo, hi = (values.get(f"{key}.{end}", {}).get("mean") for end in ("lo", "hi"))
            if lo is not None and hi is not None:
                out[key] = [lo, hi]
    return out


def judged(row) -> dict[str, str]:
    """The report's judgement of each learned range of a candidate row ({name: kind}), where the report gives one
    (empty for a report without judgements)."""
    out = {}
    for j in getattr(row, "judgements", None) or []:
        kind = getattr(j, "kind", None)
        out[str(getattr(j, "name", "?"))] = str(getattr(kind, "value", kind))
    return out


def study(pset: PlantedSet, folder: Path, store, *, seeds: int, dask: bool, steps: int | None = None) -> dict:
    """Write `pset` as an npz file in `folder`, study it as a user would and return its row."""
    if pset is DIGITS:
        data = dict(DIGITS_DATA)
    else:
        path = folder / f"{pset.name}.npz"
        pset.write(path)
        data = {"dataset": f"npz:{path}"}
    start = time.perf_counter()
    extra = {} if steps is None else {"steps": steps}
    plan = plan_candidates(data, seeds=seeds, orbits=pset.orbits, **extra)
    sweep = run_candidates(plan, store, serial=not dask)
    report = discover_report(store, sweep)
    seconds = time.perf_counter() - start
    top = report.ranking[0].candidate if report.ranking else None
    chosen = discover_verdict.chosen(report.ranking)
    planted_row = report.row(pset.planted) or next((c for c in report.ranking if pset.hit(c.candidate)), None)
    verdict_name = chosen.candidate if chosen is not None else None
    row = {"set": pset.name, "kind": pset.kind, "planted": pset.planted, "top": top, "verdict_candidate": verdict_name,
           "hit": pset.hit(top), "verdict_hit": pset.hit(verdict_name),
           "planted_ranges": {k: [-v, v] for k, v in pset.ranges.items()},
           "learned": learned_ranges(planted_row, pset.ranges) if planted_row is not None else {},
           "judged": judged(planted_row) if planted_row is not None else {},
           "seconds": round(seconds, 1), "runs": report.stored, "partial": report.partial,
           # [candidate, log BF over none, its sd, test error or RMSE, learned ranges] in the report's order
           "ranking": [[c.candidate, _round(c.log_bf), _round(c.log_bf_sd),
                        _round(c.test_error[0] if c.test_error[0] is not None else c.test_rmse[0], 3),
                        {k: _round(v.get("mean"), 3) for k, v in (c.learned or {}).items()}]
                       for c in report.ranking],
           "verdict": report.verdict, "also_true": pset.also_true, "orbits": pset.orbits}
    if pset.planted == "none":
        row["false_invariance"] = verdict_name not in (None, "none")
    return row


def _round(value, digits: int = 2):
    return None if value is None else round(float(value), digits)


def _range_text(ranges: dict[str, list[float]]) -> str:
    return ", ".join(f"{k} [{lo:.3g}, {hi:.3g}]" for k, (lo, hi) in ranges.items()) or "–"


def print_row(row: dict) -> None:
    """One set's line: planted answer, top, verdict's candidate, hit, learned vs planted ranges, seconds."""
    mark = "hit " if row["hit"] else "MISS"
    ranges = ""
    if row["planted_ranges"]:
        ranges = f"  learned {_range_text(row['learned'])} (planted {_range_text(row['planted_ranges'])})"
    log(f"{mark} {row['set']:<16} planted {row['planted']:<22} top {str(row['top']):<22} "
        f"verdict {str(row['verdict_candidate']):<22} {row['seconds']:6.1f} s{ranges}")


def summary(rows: list[dict]) -> dict:
    """The targets' figures: hit fraction, false invariances on the none-sets, the ±45° set's learned angle."""
    hits = sum(r["hit"] for r in rows)
    nones = [r for r in rows if r["planted"] == "none"]
    out = {"sets": len(rows), "hits": hits, "hit_fraction": round(hits / len(rows), 3) if rows else None,
           "verdict_hits": sum(r["verdict_hit"] for r in rows), "none_sets": len(nones),
           "false_invariances": sum(r["false_invariance"] for r in nones),
           "misses": [r["set"] for r in rows if not r["hit"]],
           "total_s": round(sum(r["seconds"] for r in rows), 1)}
    partial = next((r for r in rows if r["set"] == PARTIAL_ROTATION), None)
    if partial is not None and "rotation" in partial["learned"]:
        angle = partial["learned"]["rotation"][1]
        out["rotation_45_learned_deg"] = round(angle, 1)
        out["rotation_45_error_deg"] = round(abs(angle - 45.0), 1)
    met = {"hit_fraction": out["hit_fraction"] is not None and out["hit_fraction"] >= TARGETS["hit_fraction"],
           "false_invariances": out["false_invariances"] <= TARGETS["false_invariances"]}
    if "rotation_45_error_deg" in out:
        met["rotation_45_error_deg"] = out["rotation_45_error_deg"] <= TARGETS["rotation_45_error_deg"]
    out["targets_met"] = met
    return out


def chosen_sets(args) -> list[PlantedSet]:
    """The sets to study: --only's names, --quick's handful, --smoke's smallest, or all of them."""
    by_name = {s.name: s for s in SETS}
    if args.only:
        unknown = [n for n in args.only if n not in by_name]
        if unknown:
            raise SystemExit(f"--only {unknown[0]!r}: no such set; the sets are {', '.join(by_name)}")
        return [by_name[n] for n in args.only]
    if args.smoke:
        return [by_name["linear-none"]]
    return [by_name[n] for n in QUICK] if args.quick else list(SETS)


def main(argv=None) -> dict:
    p = arguments(__doc__, quick=f"only {', '.join(QUICK)}")
    p.add_argument("--only", action="append", metavar="NAME", help="study only this set (repeatable)")
    p.add_argument("--json", metavar="FILE", help="also write every row and the summary to FILE")
    p.add_argument("--dask", action="store_true", help="train on the default LocalCluster (default: serially)")
    args = parse(p, argv)
    sets = chosen_sets(args)
    load_before = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory(prefix="invlab-planted-") as tmp:
        store = RunStore(Path(tmp) / "runs.sqlite")
        try:
            for pset in sets:
                try:
                    row = study(pset, Path(tmp), store, seeds=1 if args.smoke else 2, dask=args.dask,
                                steps=10 if args.smoke else None)
                except Exception as err:  # noqa: BLE001 — one set's failure is a row of the table, not the end
                    row = {"set": pset.name, "kind": pset.kind, "planted": pset.planted, "top": None,
                           "verdict_candidate": None, "hit": False, "verdict_hit": False, "learned": {},
                           "planted_ranges": {}, "seconds": 0.0, "error": f"{type(err).__name__}: {err}",
                           **({"false_invariance": False} if pset.planted == "none" else {})}
                    log(f"{pset.name}: failed: {row['error']}")
                print_row(row)
                rows.append(row)
        finally:
            store.close()
    result = summary(rows)
    log(f"hits {result['hits']}/{result['sets']} ({result['hit_fraction']:.0%}; target ≥ 90 %), false invariances "
        f"{result['false_invariances']}/{result['none_sets']} none-sets (target 0), ±45° set learned "
        f"{result.get('rotation_45_learned_deg', '–')}° (target 45° ± 10°), total {result['total_s']:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "summary": result}, indent=1, default=str))
    return emit({"benchmark": "discover_planted", "runner": "dask" if args.dask else "serial", **result,
                 "targets": TARGETS, "rows": [{k: r[k] for k in ("set", "planted", "top", "verdict_candidate",
                                                                 "hit", "learned", "seconds")} for r in rows]},
                load_before=load_before)


if __name__ == "__main__":
    main()
