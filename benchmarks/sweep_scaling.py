"""Sweeps on Dask: 8 equal small training runs one after another in this process, against the same 8 runs as a
sweep on the default LocalCluster (2 worker processes × 1 thread on 2 cores; one per core elsewhere).

The sweep's time covers what a user waits for once the cluster is up: submitting, training on the workers, moving
each result (history, figures, checkpoint) back, and storing it in a run store. The cluster's start-up is timed
apart (`startup_s`, paid once per sweep). The targets on 2 cores: `speedup` = serial / sweep ≥ 1.7, and
`overhead_s_per_run` < 1 s: the worker-seconds per run not spent training (workers × sweep time − the runs' own
training time on the workers, over the number of runs: scheduling, transfer, storing, idling). On a machine other
jobs keep busy, wall-clock figures say little; `run_cpu_s_serial` and `run_cpu_s_on_workers` (CPU seconds per run,
the worker's whole process) show whether a run costs the same on a worker as in one process.

    python -m benchmarks.sweep_scaling [--quick]

SVGP on 500 of scikit-learn's bundled digits (no download). Last line: one JSON object.
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from invlab.sweeps import SweepSpec, run_sweep
from invlab.sweeps.clusters import local_cluster
from invlab.sweeps.execute import run_serially
from invlab.train import RunConfig, RunStore

from .common import arguments, emit, log, parse


def equal_runs(n: int, quick: bool) -> SweepSpec:
    """n runs that differ only in their seed, so they cost the same."""
    data = {"dataset": "digits", "subset": 200 if quick else 500, "test_subset": 100}
    model = {"num_inducing": 20 if quick else 50}
    train = {"steps": 30 if quick else 200, "batch_size": 100, "eval_every": 0, "log_every": 10}
    return SweepSpec(name="sweep-scaling", base=RunConfig("svgp", data, model, train), seeds=list(range(n)))


def main(argv=None) -> dict:
    p = arguments(__doc__, quick="runs of 30 steps on 200 digits")
    p.add_argument("--runs", type=int, default=8)
    p.add_argument("--workers", type=int, default=None, help="local workers (default: one per core)")
    args = parse(p, argv)
    if args.smoke:
        args.runs = min(args.runs, 2)
    load_before = os.getloadavg()[0]
    spec = equal_runs(args.runs, args.quick)
    workers = args.workers or os.cpu_count() or 1

    run_serially(equal_runs(1, args.quick), threads=1)  # imports and first-touch costs, paid by the workers too
    t0 = time.perf_counter()
    serial = run_serially(spec, threads=1)
    serial_s = time.perf_counter() - t0
    log(f"serial: {args.runs} runs in {serial_s:.1f} s")

    t0 = time.perf_counter()
    cluster = local_cluster(workers)
    try:
        from distributed import Client

        with Client(cluster, set_as_default=False) as client:
            client.run(run_serially, equal_runs(1, args.quick), 1)  # the same warm-up on every worker
        startup_s = time.perf_counter() - t0
        log(f"cluster of {workers} workers up and warm in {startup_s:.1f} s")
        with tempfile.TemporaryDirectory(prefix="invlab-sweep-bench-") as tmp:
            store = RunStore(Path(tmp) / "runs.sqlite")
            t0 = time.perf_counter()
            sweep_id = run_sweep(spec, store=store, scheduler=cluster.scheduler_address)
            sweep_s = time.perf_counter() - t0
            runs = store.sweeps.runs(sweep_id)
            infos = [store.sweeps.info(r.id) for r in runs]
            task_s = sum(info["seconds"] for info in infos)
            task_cpu_s = sum(info["cpu_seconds"] for info in infos)
            store.close()
    finally:
        cluster.close()
    assert len(runs) == args.runs and all(r.status == "finished" for r in runs)
    log(f"sweep: {args.runs} runs in {sweep_s:.1f} s on {workers} workers ({task_s:.1f} s training on them)")
    serial_task_s = sum(r["seconds"] for r in serial)
    return emit({"benchmark": "sweep_scaling", "runs": args.runs, "workers": workers, "quick": args.quick,
                 "serial_s": round(serial_s, 3), "sweep_s": round(sweep_s, 3), "startup_s": round(startup_s, 3),
                 "speedup": round(serial_s / sweep_s, 3),
                 "overhead_s_per_run": round((workers * sweep_s - task_s) / args.runs, 3),
                 "run_s_serial": round(serial_task_s / args.runs, 3), "run_s_on_workers": round(task_s / args.runs, 3),
                 # CPU seconds per run: what a busy machine does not change, unlike the wall-clock figures above
                 "run_cpu_s_serial": round(sum(r["cpu_seconds"] for r in serial) / args.runs, 3),
                 "run_cpu_s_on_workers": round(task_cpu_s / args.runs, 3),
                 "target": {"speedup": 1.7, "overhead_s_per_run": 1.0}}, load_before=load_before)


if __name__ == "__main__":
    main()
