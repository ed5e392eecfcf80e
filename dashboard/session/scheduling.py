"""How the pages of one served dashboard share the machine: how many train at once, how many cores each gets, how
fast each may go, and turns taken step by step so that one page's training never holds another page's click behind it.

- **Run slots** (`--max-training`): a page that presses Start holds one for as long as it trains; a page beyond the
  cap is "queued" until one frees.
- **Threads follow what is training**: a page training alone gets torch threads for every core but the one the
  server keeps (on a machine of one or two cores, all of them); as more pages train the cores are shared equally,
  and every training thread re-balances before its next step when a page starts or stops.
- **Step turns**: every step, of a run or a single "+1 Step", is taken in a turn. There are as many turns as run
  slots, handed out first come, first served, and a thread that has just stepped goes to the back of the line, so a
  single step on a paused page waits for at most one step of each training page, never for a whole run.
- **Short GIL turns**: while pages train, the interpreter hands the GIL over every millisecond
  (`share_the_interpreter`), so the server thread answers a click between a training thread's Python lines instead
  of through a cap on training.
- **Priority**: a training thread runs at the server's own priority by default: a click's handling, on a thread
  that sleeps between clicks, gets a core on waking as it is, and a page keeps its fair share of a machine that
  other programs keep busy (a training thread niced by 10 got a tenth of a core shared with one busy program, and
  clicks were no quicker for it). `INVLAB_TRAINING_NICE` (1 to 19, Linux, per thread; torch's worker threads it
  starts inherit it) lowers it for a server that must favour anything else on the machine.
- **Only for a page someone has open**: while no browser shows a page (its tab closed, the session not yet ended, so
  that a reload can take the run back), its training thread waits before its next step, and goes on where it was when
  a page shows it again: a closed tab stops costing the machine at once, not when its session ends.
- **Pace** (`--max-steps-per-s`): by default no cap, so a page trains at the machine's speed; a server with logins
  (a class) defaults to a per-page cap (`CLASS_STEPS_PER_S`, set by `invlab serve`), and an explicit value wins.

Defaults follow the cores (`ServerPace.for_cores`): a 2-core laptop trains 2 pages at once, a 16-core class server
12. The person running the server sets them with `invlab serve --max-training N --max-steps-per-s R` (environment
variables `INVLAB_MAX_TRAINING`, `INVLAB_MAX_STEPS_PER_S`; 0 steps/s means no cap); `INVLAB_TORCH_THREADS` fixes the
threads of every training page.
"""
from __future__ import annotations

import collections
import contextlib
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from invlab.cli.serve import CLASS_STEPS_PER_S  # noqa: F401 — the per-page cap `invlab serve` sets on a class server

SWITCH_INTERVAL = 0.001  # seconds a thread may hold the GIL while another waits for it (Python's default: 0.005)
TRAINING_NICE = 0  # how much nicer than the server a training thread runs by default (INVLAB_TRAINING_NICE sets it)


_sharing = {"count": 0, "before": None}
_sharing_lock = threading.Lock()


@contextlib.contextmanager
def share_the_interpreter():
    """While a training thread trains (the `with` block): let the server thread take the GIL within
    `SWITCH_INTERVAL` while the training thread runs Python between its torch calls, since a click's handling takes
    and gives back the GIL many times and each wait would otherwise be up to 5 ms. Process-wide and counted: the
    interpreter's own interval comes back when no training thread is training (a notebook kernel whose run
    finished, a server whose pages are all paused)."""
    import sys

    with _sharing_lock:
        if _sharing["count"] == 0:
            _sharing["before"] = sys.getswitchinterval()
            if _sharing["before"] > SWITCH_INTERVAL:
                sys.setswitchinterval(SWITCH_INTERVAL)
        _sharing["count"] += 1
    try:
        yield
    finally:
        with _sharing_lock:
            _sharing["count"] -= 1
            if _sharing["count"] == 0 and _sharing["before"] is not None:
                sys.setswitchinterval(_sharing["before"])


def server_thread_on_one_core() -> None:
    """Give the calling thread (the server's: the served app calls this as it builds a page) one torch thread for
    its own work, the prior page's redraws and building a page. Without it, that thread takes torch's process-wide
    count whenever it first computes, possibly one a training thread just set for itself, and keeps a pool of OpenMP
    workers beside the pages' training threads for the server's lifetime. Training threads set their own share
    before they step (`TrainingSession`), so the process-wide count this also sets (one) changes none of them."""
    import torch

    torch.get_num_threads()  # torch takes its count for this thread on first use: take it now, then set it
    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def warm_optimisers() -> None:
    """Load what a page's first ▶ Start would otherwise load while the user waits: the first `torch.optim` optimiser
    a process builds imports `torch._dynamo` (and sympy with it, some 800 modules: about 3 s of a busy 2-core
    laptop, the first Start's whole cold cost). The served app calls this as Panel's warm-up builds its first page,
    before the server listens; once a process has done it, it costs nothing."""
    import torch

    torch.optim.Adam([torch.zeros(1, requires_grad=True)])


def lower_training_priority(environ=None) -> int:
    """Run the calling thread (a page's training thread, before its first torch call) `INVLAB_TRAINING_NICE` (0 to
    19; default `TRAINING_NICE`, 0: the server's own priority) steps nicer than it is; the intra-op threads torch
    starts from it inherit the setting. Linux schedules threads by their own nice value; elsewhere this does
    nothing. A nicer thread yields more to every other program on the machine, not only to the server: with 10, a
    page sharing a core with one busy program got a tenth of it. Returns the thread's nice value now (unchanged
    where it could not be set)."""
    value = (os.environ if environ is None else environ).get("INVLAB_TRAINING_NICE")
    step = TRAINING_NICE
    if value:
        with contextlib.suppress(ValueError):
            step = min(max(int(value), 0), 19)
    if not hasattr(os, "setpriority") or not hasattr(threading, "get_native_id"):
        return 0
    tid = threading.get_native_id()
    try:
        now = os.getpriority(os.PRIO_PROCESS, tid)
        if step and now < 19:
            os.setpriority(os.PRIO_PROCESS, tid, min(now + step, 19))  # raising nice needs no privilege
        return os.getpriority(os.PRIO_PROCESS, tid)
    except OSError:
        return 0


def machine_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system says, else the machine's count)."""
    with contextlib.suppress(AttributeError, OSError):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class ServerPace:
    """What the server's pages may take: `max_training` pages training at once, each at most `max_steps_per_s`
    steps a second (0: no cap)."""

    max_training: int
    max_steps_per_s: float

    @classmethod
    def for_cores(cls, cores: int | None) -> "ServerPace":
        """The defaults for a machine with `cores` cores: up to one training page per core (all but a few cores on a
        large machine), no steps/s cap."""
        cores = max(1, cores or 1)
        training = cores if cores <= 4 else max(4, cores - 4)  # keep cores for the server thread and its sends
        return cls(max_training=training, max_steps_per_s=0.0)

    @classmethod
    def from_env(cls, environ=None) -> "ServerPace":
        """The defaults for this machine, overridden by `INVLAB_MAX_TRAINING` / `INVLAB_MAX_STEPS_PER_S` (what
        `invlab serve` sets from its flags); a value that is not a number is ignored."""
        env = os.environ if environ is None else environ
        default = cls.for_cores(machine_cores())
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
    """The server-wide cap on pages training at once (`cap`), the turns every step is taken in, the steps/s each
    training page may take (`max_steps_per_s`, 0: no cap), and the torch threads each training page gets now
    (`threads()`: the machine's cores shared by the pages training, re-read at every `generation`)."""

    def __init__(self, cap: int, max_steps_per_s: float = 0.0, cores: int | None = None):
        self.cap = cap
        self.max_steps_per_s = max_steps_per_s
        self.cores = cores or machine_cores()
        self._sem = threading.BoundedSemaphore(cap)
        self.turns = FairTurns(cap)
        self._count_lock = threading.Lock()
        self.training = 0  # pages holding a run slot now
        self.generation = 0  # bumped whenever `training` changes: training threads then re-balance their threads

    def acquire(self, timeout: float) -> bool:
        """Take a run slot (a page pressed Start); False after `timeout` seconds without one."""
        if not self._sem.acquire(timeout=timeout):
            return False
        self._count(+1)
        return True

    def wait(self, interrupted: Callable[[], bool], queued: Callable[[str], None]) -> bool:
        """Take a run slot, waiting as long as it takes; `queued(why)` hears once, in a sentence, that the page waits.
        False when `interrupted()` (Pause, or another command) ended the wait first."""
        if self.acquire(timeout=0):
            return True
        queued(f"waiting for a training slot: another session is training on this server, which trains {self.cap} "
               "at a time (invlab serve --max-training); this run starts when one finishes or pauses")
        while not self.acquire(timeout=0.2):
            if interrupted():
                return False
        return True

    def release(self) -> None:
        """Give the run slot back (the page's run stopped, finished or was reset)."""
        self._count(-1)
        self._sem.release()

    def _count(self, change: int) -> None:
        with self._count_lock:
            self.training += change
            self.generation += 1

    def threads(self, environ=None) -> int:
        """Intra-op torch threads for one training page now: the cores the pages may use (all but one kept for the
        server thread on machines of more than two cores) divided by the pages training, at least one.

        torch's OpenMP threads slow down by orders of magnitude when more of them compete for the cores than there
        are cores, so each training thread takes its share; `INVLAB_TORCH_THREADS` fixes the number."""
        value = (os.environ if environ is None else environ).get("INVLAB_TORCH_THREADS")
        if value:
            with contextlib.suppress(ValueError):
                return max(1, int(value))
        usable = self.cores if self.cores <= 2 else self.cores - 1
        return max(1, usable // max(1, self.training))

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


class CoreShare:
    """One training thread's share of the cores (threads follow what is training, above) and the gate it takes each
    step through. `watched` (a threading.Event, set by default) is cleared while no browser shows the page: the gate
    then holds the next step until it is set again or the run is stopped."""

    def __init__(self):
        self.generation: int | None = None  # the slots' generation this thread's torch threads follow
        self.watched = threading.Event()
        self.watched.set()

    def step_gate(self, slots: TrainingSlots, stop):
        """Around each step: wait while no page is watching and for the steps/s cap (Pause, a close or any command
        that ends the run cuts both waits short), then step in a fair turn."""
        last = [-math.inf]

        @contextlib.contextmanager
        def gate():
            while not self.watched.is_set() and not stop.is_set():
                self.watched.wait(0.05)
            slots.pace(last[0], stop)
            self.balance(slots)
            with slots.turns.turn():
                last[0] = time.perf_counter()
                yield

        return gate

    def balance(self, slots: TrainingSlots) -> None:
        """Take this page's share of the cores before a step when the pages training changed (a page started or
        stopped): all of them when it trains alone."""
        if self.generation != slots.generation:
            import torch  # only when the share changes: this runs before every step

            self.generation = slots.generation
            threads = slots.threads()
            if threads != torch.get_num_threads():
                torch.set_num_threads(threads)


def default_slots() -> TrainingSlots:
    """The slots of this server process (or notebook kernel), from `ServerPace.from_env()`."""
    pace = ServerPace.from_env()
    return TrainingSlots(pace.max_training, pace.max_steps_per_s)
