"""One Dask cluster for every page of a served dashboard.

Under `invlab serve` a whole class may press ▶ Discover (or ▶ Run sweep) at once. A cluster per page would start a
worker process per core for each of them, all on the one server; instead every page of the server process sends its
runs to one `LocalCluster` (`invlab.sweeps.clusters.local_cluster`: one worker process per core, or per GPU), started
by the first page that needs it, and Dask's scheduler shares its workers among all the pages' runs. A page given a
scheduler address uses that one. The cluster closes once no page has used it for `IDLE_SECONDS` (idle Dask workers
still take a share of a core each: heartbeats, memory checks), and when the server process exits; its worker
processes also exit when their parent does. The next page that needs one starts it again (a few seconds).
"""
from __future__ import annotations

import atexit
import contextlib
import threading
import time

IDLE_SECONDS = 120.0  # a cluster no page has used for this long is closed

_lock = threading.Lock()
_cluster = None
_users = 0  # runners using the cluster now (`using_shared`)
_last_use = 0.0  # time.monotonic() when the last of them finished


def shared_scheduler() -> str:
    """The address of this process's shared LocalCluster, started on the first call (from a background thread: it
    takes a few seconds); concurrent first calls wait for the one cluster."""
    global _cluster
    with _lock:
        if _cluster is None or getattr(_cluster, "status", None) is not None and _cluster.status.name == "closed":
            from invlab.sweeps.clusters import local_cluster
            from invlab.sweeps.scheduler import require_dask

            require_dask()
            _cluster = local_cluster()
            atexit.register(close_shared)
        return _cluster.scheduler_address


@contextlib.contextmanager
def using_shared():
    """The shared cluster's address (`shared_scheduler`), held for the work in the `with` block: the cluster is not
    closed as idle while any page's work uses it; `IDLE_SECONDS` after the last use ends, it is."""
    global _users, _last_use
    with _lock:
        _users += 1
    try:
        yield shared_scheduler()
    finally:
        with _lock:
            _users -= 1
            _last_use = time.monotonic()
        timer = threading.Timer(IDLE_SECONDS, close_if_idle)
        timer.daemon = True
        timer.start()


def close_if_idle() -> bool:
    """Close the shared cluster if no page's work uses it and none has for `IDLE_SECONDS`; whether it closed one."""
    global _cluster
    with _lock:
        if _cluster is None or _users > 0 or time.monotonic() - _last_use < IDLE_SECONDS - 0.05:
            return False
        cluster, _cluster = _cluster, None
    with contextlib.suppress(Exception):  # already half closed: nothing more to free
        cluster.close()
    return True


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


__all__ = ["IDLE_SECONDS", "close_if_idle", "close_shared", "shared_scheduler", "using_shared"]
