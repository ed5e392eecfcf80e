"""Reaching a Dask scheduler, and losing it: a sweep's one way to a cluster (`connect_client`), the check an address
passes before anything is stored (`check_scheduler`), and what a sweep sees when its scheduler goes away mid-sweep
(`scheduler_lost`, `close_client`).

**Losing it.** When the connection to the scheduler breaks (its process killed, its machine gone), distributed's
client cancels every future it holds, with the reason `LOST_REASON`, and tries to reconnect for its timeout. A sweep
that read those futures as its runs' results stored each run `failed` with "task cancelled"; the runs did nothing
wrong, so the sweep stores them `interrupted` instead (a resume trains them) and says, in one sentence, that the
scheduler was lost (`SchedulerLostError`). Closing a client in the middle of its reconnection makes distributed log
the cancelled reconnection as two chained tracebacks, which say nothing the sentence does not: `close_client` leaves
those records out.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging

from ..errors import ConfigError, InvlabError

SCHEDULER_TIMEOUT = 10.0  # seconds a scheduler address has to answer as Dask before a sweep gives up on it
LOST_REASON = "scheduler-connection-lost"  # distributed's reason for the futures it cancels when the connection goes
LOST_STATES = ("connecting", "closing", "closed")  # a client's status once its connection to the scheduler broke


class SchedulerLostError(InvlabError):
    """The Dask scheduler a sweep ran on went away mid-sweep; the runs it had not finished are stored as
    interrupted (the sweep resumes them)."""

    def __init__(self, address: str | None, sweep_id: int, interrupted: int):
        where = f"at {address} " if address else ""
        runs = "the run it had not finished is" if interrupted == 1 else \
            f"the {interrupted} runs it had not finished are"
        super().__init__(f"the Dask scheduler {where}was lost mid-sweep (it stopped, or the network to it failed); "
                         f"{runs} stored as interrupted")
        self.address, self.sweep_id, self.interrupted = address, sweep_id, interrupted


def require_dask() -> None:
    """ConfigError naming the extra to install when Dask distributed, which runs every sweep, is not installed."""
    import importlib.util

    if importlib.util.find_spec("dask") is None or importlib.util.find_spec("distributed") is None:
        raise ConfigError("sweeps run on Dask distributed, which is not installed; install it with: "
                          "pip install 'invariance-lab[sweeps]'")


def scheduler_host(address: str, flag: str = "--scheduler") -> tuple[str, int]:
    """(host, port) of a scheduler address (`tcp://host:8786`, or `host:port`), read without contacting it;
    ConfigError naming `flag` for text that is not one."""
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        host, port = parts.hostname, parts.port or 8786
    except ValueError as err:
        raise ConfigError(f"{flag} {address!r} is not an address like tcp://host:8786 ({err})") from None
    if not host:
        raise ConfigError(f"{flag} {address!r} is not an address like tcp://host:8786")
    return host, port


def check_scheduler(address: str | None, timeout: float | None = None) -> None:
    """Refuse a Dask scheduler address (ConfigError naming it) that is not one, that nothing listens at, or where
    what listens does not answer as a Dask scheduler within `timeout` seconds (default `SCHEDULER_TIMEOUT`), before
    anything is stored; None (a LocalCluster) passes."""
    if not address:
        return
    import socket

    timeout = SCHEDULER_TIMEOUT if timeout is None else float(timeout)
    host, port = scheduler_host(address)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as err:
        raise ConfigError(f"no Dask scheduler answered at {address} ({err.strerror or err}); start one with `dask "
                          "scheduler` and workers with `dask worker ADDRESS`, or leave --scheduler out to use this "
                          "machine") from None
    _handshake(address, timeout)


def _handshake(address: str, timeout: float) -> None:
    """Dask's own greeting with the scheduler at `address`, bounded by `timeout` seconds: distributed's `Client` and
    `connect` bound the TCP connection but wait for the greeting's reply for ever, so a listener that never answers
    would hang every sweep. Run on a thread of its own, so that a caller inside an event loop (the page) may call it."""
    from concurrent.futures import ThreadPoolExecutor

    require_dask()
    from distributed.comm import connect

    async def greet():
        comm = await asyncio.wait_for(connect(address, timeout=timeout), timeout)
        await comm.close()

    pool = ThreadPoolExecutor(1, thread_name_prefix="invlab-scheduler-check")
    try:
        pool.submit(asyncio.run, greet()).result()
    except (TimeoutError, asyncio.TimeoutError):
        raise ConfigError(f"the Dask scheduler at {address} did not answer within {timeout:g} s (something listens "
                          "there, but it is not a Dask scheduler, or it is busy); check the address (`dask scheduler` "
                          "prints it), or leave --scheduler out to use this machine") from None
    except Exception as err:  # noqa: BLE001 — whatever a listener that is not Dask says back
        raise ConfigError(f"what listens at {address} is not a Dask scheduler ({type(err).__name__}: {err}); check "
                          "the address (`dask scheduler` prints it), or leave --scheduler out to use this "
                          "machine") from None
    finally:
        pool.shutdown(wait=False)


def connect_client(scheduler: str | None, n_workers: int | None = None, dashboard_address: str | None = None):
    """(Dask client, cluster it started or None): every sweep's one way to a cluster. A `scheduler` address is
    checked first (`check_scheduler`: it must answer as Dask within `SCHEDULER_TIMEOUT` seconds); without one, a
    `local_cluster` is started."""
    from distributed import Client

    from .clusters import local_cluster

    if scheduler:
        check_scheduler(scheduler)
        try:
            return Client(scheduler, timeout=f"{SCHEDULER_TIMEOUT:g}s", set_as_default=False), None
        except (OSError, TimeoutError) as err:
            raise ConfigError(f"no Dask scheduler answered at {scheduler} ({err}); start one with `dask scheduler` "
                              "and workers with `dask worker ADDRESS`, or leave --scheduler out to use this "
                              "machine") from None
    cluster = local_cluster(n_workers, dashboard_address)
    return Client(cluster, set_as_default=False), cluster


def scheduler_lost(client, future=None) -> bool:
    """Whether `client`'s connection to its scheduler broke (or `future` was cancelled because it did), as opposed
    to a task that failed or was cancelled on its own."""
    state = getattr(future, "_state", None)  # distributed keeps a cancelled future's reason only there
    if getattr(getattr(state, "exception", None), "reason", None) == LOST_REASON:
        return True
    return client is not None and getattr(client, "status", "running") in LOST_STATES


class _ReconnectionRecords(logging.Filter):
    """Leaves out distributed's log of a reconnection cut short by closing the client (a cancelled task's chained
    tracebacks) and of the reconnection giving up; every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        cancelled = record.exc_info is not None and isinstance(record.exc_info[1], asyncio.CancelledError)
        return not (cancelled or record.getMessage().startswith("Failed to reconnect to scheduler"))


def close_client(client, lost: bool = False) -> None:
    """Close a Dask client; one whose scheduler is `lost` without distributed's tracebacks of its cut reconnection."""
    if not lost:
        client.close()
        return
    log, quiet = logging.getLogger("distributed.client"), _ReconnectionRecords()
    log.addFilter(quiet)
    try:
        with contextlib.suppress(Exception):  # a client whose scheduler is gone has nothing left to close cleanly
            client.close(timeout=2)
    finally:
        log.removeFilter(quiet)


__all__ = ["LOST_REASON", "SCHEDULER_TIMEOUT", "SchedulerLostError", "check_scheduler", "close_client",
           "connect_client", "require_dask", "scheduler_host", "scheduler_lost"]
