"""The lab's own Dask clusters: how they start, idle and start their worker processes.

Every cluster the lab starts itself (a sweep's, Discover's, the Compare page's shared one) is a `LocalCluster` of
worker processes with one thread each: one per core, or one per GPU (each seeing only its own through
`CUDA_VISIBLE_DEVICES`) when CUDA is present.

**Idling.** Dask's own upkeep in every process of a cluster: each worker samples its threads' stacks every 10 ms for
the Dask dashboard's Profile page, and every scheduler, nanny and worker checks its event loop every 20 ms. An idle
LocalCluster of two workers spends about a tenth of a core on it (a Compare page's shared cluster waiting for the next
study, a sweep's workers between tasks); with the profiler off and a 200 ms check (`QUIET_CLUSTER`), under 4 %. The
profiler stays on when a Dask dashboard is asked for, where its page is read.

**Starting workers.** A worker process that Dask spawns (its default) is a fresh interpreter that imports torch, Dask
and the lab before it takes a task: about 2 CPU-seconds a worker, every worker of every cluster at once. On Linux the
CPU clusters fork their workers instead from a fork server (Python's `forkserver` start method, which Dask offers as
`distributed.worker.multiprocessing-method`): one clean process, started with this process's first cluster, that has
imported them once (`FORK_SERVER_PRELOAD`). A later cluster of the same process (the Compare page's next study, a
second sweep from a notebook) has its workers in about a tenth of a second. A forked worker starts from the fork
server's environment, taken when it started; each cluster hands its workers this process's `INVLAB_*` variables as
they are now (`worker_environment`: the data folder, the allocator switch), but one removed since stays. CUDA
workers are spawned as before, and so is every worker on macOS and Windows.
"""
from __future__ import annotations

import multiprocessing
import os
import platform

from ..errors import ConfigError

QUIET_CLUSTER = {"distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "200ms"}
FORK_SERVER_PRELOAD = ("distributed", "numpy", "torch", "invlab.train", "invlab.sweeps.task")
FORK_SERVER = {"distributed.worker.multiprocessing-method": "forkserver"}
_preload = {"set": False}


def cluster_config(dashboard: bool = False) -> dict:
    """The Dask settings (`dask.config.set` keys) the lab's own clusters start with: `QUIET_CLUSTER`, less the
    profiler's switch when a Dask `dashboard` is asked for. The nannies hand them to their worker processes."""
    return {k: v for k, v in QUIET_CLUSTER.items() if not (dashboard and k.startswith("distributed.worker.profile"))}


def forks_workers() -> bool:
    """Whether this machine's CPU clusters fork their workers from a fork server (Linux) rather than spawn them."""
    return platform.system() == "Linux" and "forkserver" in multiprocessing.get_all_start_methods()


def worker_environment() -> dict[str, str]:
    """This process's `INVLAB_*` environment variables now: what a forked worker must see as a spawned one would."""
    return {k: v for k, v in os.environ.items() if k.startswith("INVLAB_")}


def worker_start() -> tuple[dict, dict]:
    """(Dask settings, Nanny options) that start a CPU cluster's workers: forked from the fork server where
    `forks_workers()`, with `worker_environment()`; ({}, {}) elsewhere (Dask spawns them). Sets the fork server's
    preload before its first start."""
    if not forks_workers():
        return {}, {}
    if not _preload["set"]:
        import dask
        from distributed.utils import get_mp_context

        with dask.config.set(FORK_SERVER):
            context = get_mp_context()  # Dask sets its own preload on its first fork-server context ...
        context.set_forkserver_preload(list(FORK_SERVER_PRELOAD))  # ... which this replaces, before the server starts
        _preload["set"] = True
    return dict(FORK_SERVER), {"env": worker_environment()}


def gpu_worker_specs(n_gpus: int, threads: int = 1) -> dict[str, dict]:
    """One Nanny-managed worker process per GPU, each with CUDA_VISIBLE_DEVICES set to its own device."""
    from distributed import Nanny

    return {f"gpu-{i}": {"cls": Nanny, "options": {"nthreads": threads, "env": {"CUDA_VISIBLE_DEVICES": str(i)},
                                                     "dashboard": False, "silence_logs": 40}}
            for i in range(n_gpus)}


def local_cluster(n_workers: int | None = None, dashboard_address: str | None = None):
    """The default cluster: processes with one thread each; one per GPU when CUDA is present, else one per core;
    started with `cluster_config` (Dask's profiler off unless `dashboard_address` asks for Dask's dashboard), its
    CPU workers as `worker_start` says."""
    import dask
    import torch
    from distributed import LocalCluster, Scheduler, SpecCluster

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    n = int(n_workers or os.cpu_count() or 1)
    if n < 1:
        raise ConfigError(f"n_workers={n_workers}: a sweep needs at least one worker")
    if gpus and not n_workers:
        scheduler = {"cls": Scheduler, "options": {"dashboard_address": dashboard_address or ":0",
                                                   "dashboard": dashboard_address is not None}}
        with dask.config.set(cluster_config(dashboard_address is not None)):
            return SpecCluster(workers=gpu_worker_specs(gpus), scheduler=scheduler, silence_logs=40)
    settings, options = worker_start()
    with dask.config.set({**cluster_config(dashboard_address is not None), **settings}):
        # the scheduler's HTTP server always listens (health checks): a free port, so no other cluster's 8787 clashes
        return LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                            dashboard_address=dashboard_address or ":0",
                            scheduler_kwargs={"dashboard": dashboard_address is not None}, silence_logs=40,
                            **options)


__all__ = ["QUIET_CLUSTER", "FORK_SERVER_PRELOAD", "cluster_config", "forks_workers", "worker_environment",
           "worker_start", "gpu_worker_specs", "local_cluster"]
