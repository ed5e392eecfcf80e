"""Who writes a run: the process (pid, host, boot id + start time) that marks it `running`, and how a reader tells
whether that writer is still alive (and so still holds its lease, see leases.py)."""
from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from ..states import RunStatus

HEARTBEAT_SECONDS = 30.0  # a training process touches its run at least this often (between steps)
STALE_SECONDS = 1800.0  # a writer on another host silent this long is taken for dead
# the writer of a run (or sweep); writer_lease: the id of the claim that made it the writer (see leases.py)
WRITER_COLUMNS = {"writer_pid": "INTEGER", "writer_host": "TEXT", "writer_token": "TEXT", "writer_lease": "TEXT"}


def _process_token(pid: int) -> str | None:
    """This boot's id and the process's start time (Linux): a process id reused later gets another token."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        stat = Path(f"/proc/{int(pid)}/stat").read_text()
        return f"{boot}:{stat.rsplit(')', 1)[1].split()[19]}"  # field 22, starttime (the name may hold spaces)
    except (OSError, IndexError, ValueError):
        return None


def writer_identity() -> dict:
    """The columns that name the current process as a run's writer."""
    pid = os.getpid()
    return {"writer_pid": pid, "writer_host": socket.gethostname(), "writer_token": _process_token(pid)}


def writer_alive(pid: int, host: str | None, token: str | None) -> bool | None:
    """Whether the writer process still runs: True / False, or None where this machine cannot tell."""
    if host != socket.gethostname():
        return None
    if token is not None:
        current = _process_token(pid)
        if current is None and not Path("/proc/self/stat").exists():
            return None  # /proc not readable here
        return current == token
    if os.name != "posix":
        return None
    try:
        os.kill(int(pid), 0)  # signal 0: existence only
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def writer_gone(now: float, updated: float, pid: int | None, host: str | None, token: str | None) -> bool:
    """Whether a row's writer is gone: its process has ended on this machine, or (another machine's, or none
    recorded) it has been silent for `STALE_SECONDS` since `updated`."""
    alive = None if pid is None else writer_alive(pid, host, token)
    return not (alive or (alive is None and heard_within(now, updated, STALE_SECONDS)))


def heard_within(now: float, updated: float, seconds: float) -> bool:
    """Whether a heartbeat stamped `updated` counts as heard within `seconds` of `now`. One stamped further ahead than
    that (another host's clock far ahead, a clock set wrong) counts as stale too, so it cannot hold a run for years."""
    return -seconds < now - updated < seconds


LEASE_SECONDS = STALE_SECONDS  # a holder whose heartbeat is older than this has lost its lease


def holder(status: str, updated: float, pid: int | None, host: str | None, token: str | None, held: str | None,
           lease: str | None = None, now: float | None = None) -> str | None:
    """"pid P on HOST" when a row marked `running` is held by a live writer other than lease `lease`; else None.

    A writer recorded without a lease (by an older version, or a plain `store.runs.update(id, status=RUNNING)`) in
    this very process does not hold it (its own trainer, abandoned or about to be replaced)."""
    if status != RunStatus.RUNNING or pid is None or (lease is not None and held == lease):
        return None
    now = time.time() if now is None else now
    if writer_alive(pid, host, token) is False or not heard_within(now, updated, LEASE_SECONDS):
        return None  # died, or silent too long (or stamped far ahead): its lease is taken over
    if held is None and (pid, host, token) == tuple(writer_identity()[k] for k in ("writer_pid", "writer_host",
                                                                                   "writer_token")):
        return None
    return f"pid {pid} on {host}"
