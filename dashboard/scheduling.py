"""How the pages of one served dashboard share the machine: how many train at once, how fast each may go, and turns
taken step by step so that one page's training never holds another page's click behind it.

- **Run slots** (`--max-training`): a page that presses Start holds one for as long as it trains; a page beyond the
  cap is "queued" until one frees.
- **Step turns**: every step, of a run or a single "+1 Step", is taken in a turn. There are as many turns as run
  slots, handed out first come, first served, and a thread that has just stepped goes to the back of the line, so a
  single step on a paused page waits for at most one step of each training page, never for a whole run.
- **Pace** (`--max-steps-per-s`): each training page may take at most this many steps a second; between two steps it
  waits (or hands its turn on), which leaves the cores to the server thread that answers clicks.

Defaults follow the cores (`ServerPace.for_cores`): a 2-core laptop trains 2 pages at 25 steps/s each; a 16-core
class server trains 12 pages, also at 25 steps/s, keeping cores for the server thread and the browsers' data. The
person running the server sets them with `invlab serve --max-training N --max-steps-per-s R` (environment variables
`INVLAB_MAX_TRAINING`, `INVLAB_MAX_STEPS_PER_S`; 0 steps/s means no cap).
"""
from __future__ import annotations

import collections
import contextlib
import math
import os
import threading
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class ServerPace:
    """What the server's pages may take: `max_training` pages training at once, each at most `max_steps_per_s`
    steps a second (0: no cap)."""

    max_training: int
    max_steps_per_s: float

    @classmethod
    def for_cores(cls, cores: int | None) -> "ServerPace":
        """The defaults for a machine with `cores` cores: all but a few cores train, one page per core."""
        cores = max(1, cores or 1)
        training = cores if cores <= 4 else max(4, cores - 4)  # keep cores for the server thread and its sends
        return cls(max_training=training, max_steps_per_s=25.0)

    @classmethod
    def from_env(cls, environ=None) -> "ServerPace":
        """The defaults for this machine, overridden by `INVLAB_MAX_TRAINING` / `INVLAB_MAX_STEPS_PER_S` (what
        `invlab serve` sets from its flags); a value that is not a number is ignored."""
        env = os.environ if environ is None else environ
        default = cls.for_cores(os.cpu_count())
        training, rate = default.max_training, default.max_steps_per_s
        with contextlib.suppress(ValueError):
            training = max(1, int(env.get("INVLAB_MAX_TRAINING", training)))
        with contextlib.suppress(ValueError):
            value = float(env.get("INVLAB_MAX_STEPS_PER_S", rate))
            rate = value if math.isfinite(value) and value >= 0 else rate
        return cls(training, rate)


class FairTurns:
    """`permits` turns handed out first come, first served (a FIFO semaphore): a thread that releases its turn
    and asks again queues behind those already waiting."""

    def __init__(self, permits: int):
        self._free = permits
        self._queue: collections.deque = collections.deque()
        self._lock = threading.Lock()

    def acquire(self) -> None:
        """Wait for a turn: at once when one is free and nobody queues, otherwise behind those already waiting."""
        with self._lock:
            if self._free > 0 and not self._queue:
                self._free -= 1
                return
            ticket = threading.Event()
            self._queue.append(ticket)
        ticket.wait()  # release() hands its turn straight to the first in line

    def release(self) -> None:
        """Give the turn back: straight to the first thread in line, or to the free pool when nobody waits."""
        with self._lock:
            if self._queue:
                self._queue.popleft().set()
            else:
                self._free += 1

    @property
    def waiting(self) -> int:
        """Threads waiting for a turn."""
        return len(self._queue)

    @contextlib.contextmanager
    def turn(self):
        """Hold a turn for the duration of the block (one step)."""
        self.acquire()
        try:
            yield
        finally:
            self.release()


class TrainingSlots:
    """The server-wide cap on pages training at once (`cap`), the turns every step is taken in, and the steps/s
    each training page may take (`max_steps_per_s`, 0: no cap)."""

    def __init__(self, cap: int, max_steps_per_s: float = 0.0):
        self.cap = cap
        self.max_steps_per_s = max_steps_per_s
        self._sem = threading.BoundedSemaphore(cap)
        self.turns = FairTurns(cap)

    def acquire(self, timeout: float) -> bool:
        """Take a run slot (a page pressed Start); False after `timeout` seconds without one."""
        return self._sem.acquire(timeout=timeout)

    def release(self) -> None:
        """Give the run slot back (the page's run stopped, finished or was reset)."""
        self._sem.release()

    def pace(self, last_start: float, stop=None) -> None:
        """Wait until a step begun at `last_start` (perf_counter seconds) leaves room for the next under the
        steps/s cap; returns at once when `stop` (anything with `wait(timeout)`, e.g. a threading.Event) is set."""
        if not self.max_steps_per_s:
            return
        wait = last_start + 1.0 / self.max_steps_per_s - time.perf_counter()
        if wait > 0:
            if stop is not None:
                stop.wait(wait)
            else:
                time.sleep(wait)


def default_slots() -> TrainingSlots:
    """The slots of this server process, from `ServerPace.from_env()`."""
    pace = ServerPace.from_env()
    return TrainingSlots(pace.max_training, pace.max_steps_per_s)
