"""The Compare page's background threads: `run_sweep` (a sweep) and `run_candidates` (the Discover study) on daemon
threads whose progress the page drains.

Dask does the training; the thread only waits and collects progress reports, and never touches the page.
"""
from __future__ import annotations

import threading
import traceback

from engine.errors import InvlabError
from engine.sweeps import SweepSpec, run_sweep
from engine.train import RunStore

from .cluster import shared_scheduler


class SweepRunner:
    """`run_sweep` on a daemon thread; the page drains its progress (`drain()`) from the server thread.

    The thread only waits for Dask and collects `SweepProgress` reports; it never touches the page."""

    def __init__(self, spec: SweepSpec, store: RunStore, *, sweep_id: int | None = None,
                 scheduler: str | None = None, n_workers: int | None = None, shared: bool = False):
        self.spec, self.store = spec, store
        self.sweep_id = sweep_id
        self.scheduler, self.n_workers = scheduler or None, n_workers or None
        self.shared = shared and not self.scheduler  # no scheduler given: the server's shared cluster (cluster.py)
        self.stop_event = threading.Event()
        self.error: str | None = None
        self.finished = False
        self._lock = threading.Lock()
        self._progress = None
        self._events: list[dict] = []
        self.thread = threading.Thread(target=self._run, name="invlab-sweep", daemon=True)

    def start(self) -> "SweepRunner":
        """Start the sweep's background thread; returns the runner."""
        self.thread.start()
        return self

    def stop(self) -> None:
        """Ask the sweep to stop: runs in progress are abandoned, finished runs stay stored."""
        self.stop_event.set()

    def _run(self) -> None:
        try:
            if self.shared:
                self.scheduler = shared_scheduler()
            sweep_id = run_sweep(self.spec, store=self.store, scheduler=self.scheduler, n_workers=self.n_workers,
                                 sweep_id=self.sweep_id, progress=self._on_progress, stop=self.stop_event)
            with self._lock:
                self.sweep_id = sweep_id
        except InvlabError as err:
            with self._lock:
                self.error = str(err)
        except BaseException as err:  # noqa: BLE001 — the page shows it; the server stays up
            traceback.print_exc()
            with self._lock:
                self.error = f"{type(err).__name__}: {err}"
        finally:
            with self._lock:
                self.finished = True

    def _on_progress(self, progress) -> None:
        with self._lock:
            self._progress = progress
            if self.sweep_id is None and getattr(progress, "sweep_id", None) is not None:
                self.sweep_id = progress.sweep_id
            if progress.event:
                self._events.append(dict(progress.event))

    def drain(self):
        """(latest progress or None, events since the last drain, finished, error)."""
        with self._lock:
            events, self._events = self._events, []
            return self._progress, events, self.finished, self.error



class DiscoverRunner:
    """`engine.sweeps.discover.run_candidates` on a daemon thread for the Compare page's Discover study; the page
    drains what it reports (`drain()`) from the server thread.

    The thread only waits for Dask (or the scheduler given) and collects each stored run's
    `(candidate, seed, run_id, status, message)` and the sweep's latest `SweepProgress`; it never touches the page."""

    def __init__(self, plan, store: RunStore, sweep_id: int, *, scheduler: str | None = None,
                 n_workers: int | None = None, shared: bool = False):
        self.plan, self.store, self.sweep_id = plan, store, int(sweep_id)
        self.scheduler, self.n_workers = scheduler or None, n_workers or None
        self.shared = shared and not self.scheduler  # no scheduler given: the server's shared cluster (cluster.py)
        self.stop_event = threading.Event()
        self.error: str | None = None
        self.finished = False
        self._lock = threading.Lock()
        self._progress = None
        self._results: list[tuple] = []
        self.thread = threading.Thread(target=self._run, name="invlab-discover", daemon=True)

    def start(self) -> "DiscoverRunner":
        """Start the study's background thread; returns the runner."""
        self.thread.start()
        return self

    def stop(self) -> None:
        """Ask the study to stop: runs in progress are abandoned, finished runs stay stored (the report is partial)."""
        self.stop_event.set()

    def _run(self) -> None:
        from engine.sweeps.discover import run_candidates

        try:
            if self.shared:
                self.scheduler = shared_scheduler()
            run_candidates(self.plan, self.store, sweep_id=self.sweep_id, scheduler=self.scheduler,
                           n_workers=self.n_workers, on_result=self._on_result, progress=self._on_progress,
                           stop=self.stop_event)
        except InvlabError as err:
            with self._lock:
                self.error = str(err)
        except BaseException as err:  # noqa: BLE001 — the page shows it; the server stays up
            traceback.print_exc()
            with self._lock:
                self.error = f"{type(err).__name__}: {err}"
        finally:
            with self._lock:
                self.finished = True

    def _on_result(self, candidate, seed, run_id, status, message) -> None:
        with self._lock:
            self._results.append((candidate, seed, run_id, status, message))

    def _on_progress(self, progress) -> None:
        with self._lock:
            self._progress = progress

    def drain(self):
        """(latest progress or None, runs stored since the last drain, finished, error)."""
        with self._lock:
            results, self._results = self._results, []
            return self._progress, results, self.finished, self.error
