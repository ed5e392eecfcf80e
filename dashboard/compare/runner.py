"""The Compare page's background threads: `run_sweep` (a sweep) and `run_candidates` (the Discover study) on daemon
threads whose progress the page drains.

Dask does the training; the thread only waits and collects progress reports, and never touches the page.
"""
from __future__ import annotations

import contextlib
import threading
import traceback

from invlab.dashboard.compare.cluster import using_shared
from invlab.errors import InvlabError
from invlab.sweeps import SweepSpec, run_sweep
from invlab.sweeps.scheduler import SchedulerLostError
from invlab.train import RunStore


class BackgroundRunner:
    """Work on Dask from a daemon thread that the page drains (`drain()`) from the server thread; subclasses say what
    the work is (`_work`) and what it reports (`_on_progress`, and the items they put in `_items`).

    The scheduler is the one given, the server's shared cluster (`shared`: under `invlab serve`, cluster.py), or a
    cluster the work starts of its own (`n_workers`). The work writes through its own connection to the page's run
    store (same file, same user), so it outlives the page: a tab closed mid-sweep stops the work cleanly, its
    finished runs stored and the sweep marked interrupted. A scheduler lost mid-sweep stops the work the same way
    (`stop_event` set), its sentence in `lost`: the runs it had not finished are stored interrupted, to resume."""

    name = "invlab-runner"
    after_lost = ""  # what the page offers once the scheduler was lost (the end of `lost`'s sentence)

    def __init__(self, store: RunStore, *, sweep_id: int | None = None, scheduler: str | None = None,
                 n_workers: int | None = None, shared: bool = False):
        self.store, self.sweep_id = store, sweep_id
        self.scheduler, self.n_workers = scheduler or None, n_workers or None
        self.shared = shared and not self.scheduler  # no scheduler given: the server's shared cluster (cluster.py)
        self.stop_event = threading.Event()
        self.error: str | None = None
        self.lost = ""  # the sentence saying the scheduler was lost mid-sweep (the work then stopped)
        self.finished = False
        self._lock = threading.Lock()
        self._progress = None
        self._items: list = []
        self.thread = threading.Thread(target=self._run, name=self.name, daemon=True)

    def start(self):
        """Start the background thread; returns the runner."""
        self.thread.start()
        return self

    def stop(self) -> None:
        """Ask the work to stop: runs in progress are abandoned, finished runs stay stored."""
        self.stop_event.set()

    def _work(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        page_store = self.store
        try:
            # A connection of its own: the page's store is closed with the page (a tab closed mid-study), and the
            # work must still store the runs that finish and mark the sweep stopped.
            self.store = RunStore(page_store.path, owner=page_store.owner, admin=page_store.admin)
            with using_shared() if self.shared else contextlib.nullcontext(self.scheduler) as scheduler:
                self.scheduler = scheduler  # the server's shared cluster, kept open while this work uses it
                self._work()
        except SchedulerLostError as err:
            with self._lock:
                self.lost = f"{err}{self.after_lost}"
            self.stop_event.set()
        except InvlabError as err:
            with self._lock:
                self.error = str(err)
        except BaseException as err:  # noqa: BLE001 — the page shows it; the server stays up
            traceback.print_exc()
            with self._lock:
                self.error = f"{type(err).__name__}: {err}"
        finally:
            if self.store is not page_store:
                try:
                    self.store.close()
                except Exception:  # noqa: BLE001 — what could not be flushed now has nothing more to lose
                    traceback.print_exc()
            with self._lock:
                self.finished = True

    def _on_progress(self, progress) -> None:
        with self._lock:
            self._progress = progress

    def drain(self):
        """(latest progress or None, what was reported since the last drain, finished, error)."""
        with self._lock:
            items, self._items = self._items, []
            return self._progress, items, self.finished, self.error


class SweepRunner(BackgroundRunner):
    """`run_sweep` on a daemon thread; `drain()` gives the sweep's `SweepProgress` and its events (`SweepEvent`s)."""

    name = "invlab-sweep"
    after_lost = "; ▶ Resume runs them once a Dask scheduler answers again"

    def __init__(self, spec: SweepSpec, store: RunStore, **options):
        self.spec = spec
        super().__init__(store, **options)

    def _work(self) -> None:
        sweep_id = run_sweep(self.spec, store=self.store, scheduler=self.scheduler, n_workers=self.n_workers,
                             sweep_id=self.sweep_id, progress=self._on_progress, stop=self.stop_event)
        with self._lock:
            self.sweep_id = sweep_id

    def _on_progress(self, progress) -> None:
        with self._lock:
            self._progress = progress
            if self.sweep_id is None and getattr(progress, "sweep_id", None) is not None:
                self.sweep_id = progress.sweep_id
            if progress.event is not None:
                self._items.append(progress.event)


class DiscoverRunner(BackgroundRunner):
    """`invlab.sweeps.discover.run_candidates` on a daemon thread for the Compare page's Discover study; `drain()`
    gives the sweep's latest `SweepProgress` and each stored run's `(candidate, seed, run_id, status, message)`."""

    name = "invlab-discover"

    def __init__(self, plan, store: RunStore, sweep_id: int, **options):
        self.plan = plan
        super().__init__(store, sweep_id=int(sweep_id), **options)

    def _work(self) -> None:
        from invlab.sweeps.discover import run_candidates

        run_candidates(self.plan, self.store, sweep_id=self.sweep_id, scheduler=self.scheduler,
                       n_workers=self.n_workers, on_result=self._on_result, progress=self._on_progress,
                       stop=self.stop_event)

    def _on_result(self, candidate, seed, run_id, status, message) -> None:
        with self._lock:
            self._items.append((candidate, seed, run_id, status, message))
