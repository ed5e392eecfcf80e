"""One Dask cluster for every page of a served dashboard.

Under `invlab serve` a whole class may press ▶ Discover (or ▶ Run sweep) at once. A cluster per page would start a
worker process per core for each of them, all on the one server; instead every page of the server process sends its
runs to one `LocalCluster` (`engine.sweeps.execute.local_cluster`: one worker process per core, or per GPU), started
by the first page that needs it, and Dask's scheduler shares its workers among all the pages' runs. A page given a
scheduler address uses that one. The cluster closes when the server process exits; its worker processes also exit
when their parent does.
"""
from __future__ import annotations

import atexit
import threading

_lock = threading.Lock()
_cluster = None


def shared_scheduler() -> str:
    """The address of this process's shared LocalCluster, started on the first call (from a background thread: it
    takes a few seconds); concurrent first calls wait for the one cluster."""
    global _cluster
    with _lock:
        if _cluster is None or getattr(_cluster, "status", None) is not None and _cluster.status.name == "closed":
            from engine.sweeps.execute import local_cluster, require_dask

            require_dask()
            _cluster = local_cluster()
            atexit.register(close_shared)
        return _cluster.scheduler_address


def close_shared() -> None:
    """Close the shared cluster (if one was started); the next `shared_scheduler()` starts a new one."""
    global _cluster
    with _lock:
        cluster, _cluster = _cluster, None
    if cluster is not None:
        try:
            cluster.close()
        except Exception:  # noqa: BLE001 — at exit, a cluster already half closed is no error
            pass


__all__ = ["close_shared", "shared_scheduler"]
