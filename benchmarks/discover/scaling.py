"""`invlab discover` on Dask against serial: the same discover run (rotated digits, every applicable candidate over
seeds, then stage 2's combination) trained one run after another in this process, then on a LocalCluster of 2 worker
processes × 1 thread.

`speedup` = serial / cluster wall time, the cluster started and warmed apart (`startup_s`, paid once per discover run,
reported beside it); `speedup_with_startup` counts it in, which is what a user waits for on a cold machine. Target on
2 cores: `speedup` ≥ 1.6. On a machine other jobs keep busy, wall-clock figures say little; the load average before
and after is in the JSON line, and `run_s_*` / `run_cpu_s_*` (a run's own seconds and CPU seconds, serially and on
the workers) show whether a run costs the same on a worker as in one process.

    python -m benchmarks.discover.scaling [--quick] [--workers 2] [--seeds 2]

scikit-learn's bundled digits (no download), rotated by U[−90°, 90°]. Last line: one JSON object.
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from invlab.sweeps.clusters import local_cluster
from invlab.sweeps.discover import plan_candidates, run_candidates
from invlab.sweeps.discover_report import discover_report
from invlab.sweeps.execute import run_serially
from invlab.train import RunStore

from ..common import arguments, emit, log, parse


def plan(quick: bool, seeds: int, smoke: bool = False):
    """The discover run both sides train: rotated digits, every image candidate (two with --smoke), over seeds."""
    data = {"dataset": "digits", "rotate": 90, "seed": 0, "subset": 200 if quick else 400, "test_subset": 100}
    return plan_candidates(data, seeds=seeds, steps=10 if smoke else 100 if quick else 250,
                           orbits=["rotation"] if smoke else None,
                           model_config={"num_inducing": 20 if quick else 30, "num_samples": 4,
                                         "num_predict_samples": 8})


def main(argv=None) -> dict:
    p = arguments(__doc__, quick="200 digits, 100 steps per run")
    p.add_argument("--workers", type=int, default=2, help="local workers (default: 2)")
    p.add_argument("--seeds", type=int, default=2, help="seeds per candidate (default: 2)")
    args = parse(p, argv)
    if args.smoke:
        args.seeds = 1
    load_before = os.getloadavg()[0]
    discover = plan(args.quick, args.seeds, args.smoke)  # each side gets a fresh plan: stage 2 grows the one it runs
    warm = plan(True, 1, smoke=True).spec
    run_serially(warm, threads=1)  # imports and first-touch costs, paid by the workers too
    with tempfile.TemporaryDirectory(prefix="invlab-discover-bench-") as tmp:
        store = RunStore(Path(tmp) / "runs.sqlite")
        t0 = time.perf_counter()
        serial_id = run_candidates(discover, store, serial=True)
        serial_s = time.perf_counter() - t0
        runs = len(store.sweeps.runs(serial_id))
        log(f"serial: {runs} runs ({', '.join(discover.names)} × {args.seeds} seeds) in {serial_s:.1f} s")
        discover = plan(args.quick, args.seeds, args.smoke)

        t0 = time.perf_counter()
        cluster = local_cluster(args.workers)
        try:
            from distributed import Client

            with Client(cluster, set_as_default=False) as client:
                client.run(run_serially, warm, 1)  # the same warm-up on every worker
            startup_s = time.perf_counter() - t0
            log(f"cluster of {args.workers} workers up and warm in {startup_s:.1f} s")
            t0 = time.perf_counter()
            cluster_id = run_candidates(discover, store, scheduler=cluster.scheduler_address)
            cluster_s = time.perf_counter() - t0
        finally:
            cluster.close()
        serial, parallel = discover_report(store, serial_id), discover_report(store, cluster_id)
        per_run = {name: [store.sweeps.info(r.id) for r in store.sweeps.runs(sweep)]
                   for name, sweep in (("serial", serial_id), ("on_workers", cluster_id))}
        store.close()
    assert not serial.partial and not parallel.partial and len(per_run["on_workers"]) == runs
    log(f"on {args.workers} workers: {cluster_s:.1f} s (+ {startup_s:.1f} s start-up); verdict: {parallel.verdict}")
    same = [c.candidate for c in serial.ranking] == [c.candidate for c in parallel.ranking]
    return emit({"benchmark": "discover_scaling", "runs": runs, "candidates": discover.names, "seeds": args.seeds,
                 "workers": args.workers, "quick": args.quick, "serial_s": round(serial_s, 3),
                 "cluster_s": round(cluster_s, 3), "startup_s": round(startup_s, 3),
                 "speedup": round(serial_s / cluster_s, 3),
                 "speedup_with_startup": round(serial_s / (cluster_s + startup_s), 3),
                 # each run's own seconds and CPU seconds: whether a run costs the same on a worker as in one process
                 **{f"run_s_{name}": round(sum(i["seconds"] for i in infos) / runs, 3)
                    for name, infos in per_run.items()},
                 **{f"run_cpu_s_{name}": round(sum(i["cpu_seconds"] for i in infos) / runs, 3)
                    for name, infos in per_run.items()},
                 "same_ranking": same, "verdict": parallel.verdict, "target": {"speedup": 1.6}},
                load_before=load_before)


if __name__ == "__main__":
    main()
