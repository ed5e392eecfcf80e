"""Running a sweep on Dask distributed: one task per run, the client alone writing the run store.

By default the sweep starts a `LocalCluster` of processes, one thread each, as many workers as cores (one per GPU,
each seeing only its own through `CUDA_VISIBLE_DEVICES`, when CUDA is present); `scheduler="tcp://host:port"` runs
it on an existing cluster instead (`dask scheduler` / `dask worker`, dask-jobqueue, Kubernetes). Workers only need
the engine installed: they never touch the store's disk.

Each run is submitted with a deterministic key (the sweep id and a hash of the run's key) and `retries=2`: a worker
that dies mid-run has its task re-run elsewhere under the same key, and the store keeps a run of a sweep at most once
(a unique (sweep_id, sweep_key) index), so nothing is lost or stored twice. A sweep that is interrupted (Ctrl-C, a
killed client, `stop` set) keeps what it stored; `run_sweep(..., sweep_id=ID)` runs only what is missing. A scheduler
lost mid-sweep (scheduler.py) leaves the runs it had not finished stored as interrupted, and the sweep interrupted:
`run_sweep` raises `SchedulerLostError`, whose sentence says so.
"""
from __future__ import annotations

import hashlib
import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..atomic import write_bytes_atomically
from ..errors import ConfigError
from ..train.states import RunStatus, SweepEventKind, SweepStatus
from .events import SweepEvent
from .scheduler import (
    SCHEDULER_TIMEOUT,
    SchedulerLostError,
    check_scheduler,
    close_client,
    connect_client,
    require_dask,
    scheduler_lost,
)
from .spec import PlannedRun, SweepSpec
from .task import train_run

POLL_SECONDS = 0.2
DASK_DONE = "finished"  # the status Dask gives a future whose task returned (Dask's word, not a run's state)
LOST_MESSAGE = "the Dask scheduler was lost before this run finished; resuming the sweep trains it"


@dataclass
class SweepProgress:
    """Where a sweep stands; `event` is what just happened (a `SweepEvent`: a run's step, a run stored, ...) or None."""

    sweep_id: int
    total: int
    done: int = 0
    running: int = 0
    failed: int = 0
    best_elbo: float | None = None
    eta_s: float | None = None
    event: SweepEvent | None = None
    dashboard_link: str | None = None
    running_keys: list[str] = field(default_factory=list)


def dask_key(sweep_id: int, key: str) -> str:
    """The Dask key of a run: the same for every attempt (retries, resumes), different between runs and sweeps."""
    return f"invlab-sweep-{int(sweep_id)}-{hashlib.sha1(key.encode()).hexdigest()[:16]}"


def write_checkpoint(store, run_id: int, step: int, payload: bytes) -> Path:
    """Write a run's checkpoint bytes under the store's checkpoint folder (atomically) and record it."""
    path = store.checkpoints.folder(run_id) / f"step_{int(step):08d}.pt"
    write_bytes_atomically(path, payload)
    store.checkpoints.add(run_id, step, path)
    return path


def store_result(store, sweep_id: int, run: PlannedRun, result: dict) -> tuple[int, bool]:
    """Store what a task returned (once per (sweep, key)); write its checkpoint. (run id, stored now)."""
    info = {k: result.get(k) for k in ("full_elbo", "learned", "ranges", "likelihood", "estimator", "seconds",
                                       "cpu_seconds", "worker", "device", "elbo_mc_se", "elbo_samples",
                                       "elbo_evaluations", "elbo_bias", "elbo_method", "input_shape")}
    info.update(point=run.point, seed=run.seed)
    run_id, stored = store.sweeps.store_run(
        sweep_id, run.key, config_json=result.get("config") or run.config.to_json(), model=run.config.model,
        dataset=result.get("dataset") or run.config.data.get("dataset", ""), status=result["status"],
        step=result.get("step", 0), figures=result.get("figures", {}), history=result.get("history", {}), info=info,
        message=result.get("message"))
    if stored and result.get("checkpoint"):
        write_checkpoint(store, run_id, result.get("step", 0), result["checkpoint"])
    return run_id, stored


def waiting_keys(pending: dict) -> set[str]:
    """The task keys of the runs still pending (submitted and not yet finished)."""
    return {run.key for _, run in pending.values()}


def run_sweep(spec: SweepSpec | None, store=None, scheduler: str | None = None, n_workers: int | None = None,
              sweep_id: int | None = None, progress=None, stop: threading.Event | None = None, *,
              dashboard_address: str | None = None, threads: int = 1, rerun_failed: bool = True) -> int:
    """Run a sweep (or the missing runs of sweep `sweep_id`) and store every run; returns the sweep's id.

    `progress(SweepProgress)` is called from this thread after each event; `stop` (a threading.Event) ends the
    sweep early, cancelling what has not finished (resumable). `threads` is torch's thread count in each task.
    `rerun_failed=False` leaves the stored failed runs of sweep `sweep_id` alone (only runs it lacks are trained)."""
    require_dask()  # before anything is stored
    check_scheduler(scheduler)  # likewise: an address that does not answer as Dask stores no sweep
    from ..train import RunStore

    store = store if store is not None else RunStore()
    sweep = SweepRunner(store, spec, sweep_id, progress=progress, stop=stop, threads=threads,
                        rerun_failed=rerun_failed)
    return sweep.run(scheduler, n_workers, dashboard_address)


def _stored_spec(store, spec: SweepSpec | None, sweep_id: int | None) -> SweepSpec:
    """The specification a sweep runs: `spec`, or sweep `sweep_id`'s stored one (which `spec`, if given, must be)."""
    if sweep_id is not None:
        stored = SweepSpec.from_json(store.sweeps.get(sweep_id).spec)
        if spec is not None and spec.to_json() != stored.to_json():
            raise ConfigError(f"sweep {sweep_id} was started from another specification; resume it without one "
                              "(its stored specification is used)")
        return stored
    if spec is None:
        raise ConfigError("run_sweep needs a SweepSpec, or the id of a stored sweep to resume")
    return spec


class SweepRunner:
    """One sweep being run by `run_sweep`: what is left to train (planned runs the store lacks), the Dask futures
    in flight, and the `SweepProgress` told to `progress` after each event. The client alone writes the store: a
    finished task's result is stored (once per run key) as it is collected, and the sweep's lease renewed every
    `HEARTBEAT_SECONDS` so a second client cannot resume the same sweep beside it."""

    def __init__(self, store, spec: SweepSpec | None, sweep_id: int | None = None, *, progress=None,
                 stop: threading.Event | None = None, threads: int = 1, rerun_failed: bool = True):
        self.store, self.progress, self.stop, self.threads = store, progress, stop, threads
        self.spec = _stored_spec(store, spec, sweep_id)
        planned = self.spec.runs()  # validates every run before anything runs
        if sweep_id is None:
            sweep_id = store.sweeps.create(self.spec.name, self.spec.to_json(), len(planned))
        self.sweep_id = sweep_id
        previous = {r.sweep_key: r for r in store.sweeps.runs(sweep_id)}
        finished = {k for k, r in previous.items()
                    if r.status == RunStatus.FINISHED or (r.status == RunStatus.FAILED and not rerun_failed)}
        # seed-major: every point's first seed before any second one, so a sweep stopped early still covers every
        # point
        seeds = {seed: i for i, seed in enumerate(self.spec.seeds)}
        self.todo = sorted((run for run in planned if run.key not in finished), key=lambda r: seeds.get(r.seed, 0))
        self.state = SweepProgress(sweep_id, len(planned), done=len(finished))
        elbos = [r.full_elbo for r in previous.values() if r.status == RunStatus.FINISHED and r.full_elbo is not None]
        self.state.best_elbo = max(elbos) if elbos else None
        # one transaction: a second resume of this sweep is refused here
        self.lease = store.leases.claim_sweep(sweep_id)
        store.sweeps.update(sweep_id, total=len(planned))
        self.pending: dict = {}
        self.running: set[str] = set()
        self.completed, self.started = 0, time.perf_counter()
        self.events: queue.Queue = queue.Queue()
        self.client, self.scheduler = None, None  # the Dask client and the scheduler address, once connected

    def tell(self, event: SweepEvent | None) -> None:
        """Update the progress's counts and estimate, set its `event`, and call `progress` with it."""
        state = self.state
        state.running, state.running_keys = len(self.running), sorted(self.running)
        if self.completed:
            rate = self.completed / (time.perf_counter() - self.started)
            state.eta_s = len(self.pending) / rate if rate > 0 else None
        state.event = event
        if self.progress is not None:
            self.progress(state)

    def run(self, scheduler: str | None = None, n_workers: int | None = None,
            dashboard_address: str | None = None) -> int:
        """Train what is left on the cluster (`connect_client`), storing each run as it finishes; the sweep ends
        "finished", "incomplete" (some runs failed) or "interrupted" (stopped, or this client failed). Its id."""
        self.tell(SweepEvent(SweepEventKind.PLANNED, runs=len(self.todo)))
        if not self.todo:
            self.store.sweeps.update(self.sweep_id, status=SweepStatus.FINISHED)
            self.tell(self.state.event)
            return self.sweep_id
        status, client, cluster = SweepStatus.INTERRUPTED, None, None
        topic = f"invlab-sweep-{self.sweep_id}"
        try:
            client, cluster = connect_client(scheduler, n_workers, dashboard_address)
            self.client, self.scheduler = client, scheduler
            self.state.dashboard_link = (getattr(client, "dashboard_link", None) if dashboard_address or scheduler
                                         else None)
            client.subscribe_topic(topic, lambda event: self.events.put(event[1]))
            self.submit(client, topic)
            self.follow()
            if not self.pending:
                status = SweepStatus.FINISHED if self.state.failed == 0 else SweepStatus.INCOMPLETE
        finally:
            try:
                self.store.sweeps.update(self.sweep_id, status=status)
            finally:
                _close(client, cluster, topic, lost=scheduler_lost(client))
        return self.sweep_id

    def submit(self, client, topic: str) -> None:
        """One task per run left, under its deterministic key, retried twice on another worker."""
        for run in self.todo:
            future = client.submit(train_run, run.config.to_json(), run.key, topic, threads=self.threads,
                                   key=dask_key(self.sweep_id, run.key), pure=False, retries=2)
            self.pending[future.key] = (future, run)
        self.started = time.perf_counter()
        self.tell(SweepEvent(SweepEventKind.SUBMITTED, runs=len(self.todo)))

    def follow(self) -> None:
        """Until every task is done or `stop` is set: store finished tasks, then pass on the workers' events."""
        from ..train.store import HEARTBEAT_SECONDS

        beat = time.monotonic()
        while self.pending:
            if self.stop is not None and self.stop.is_set():
                return
            if time.monotonic() - beat >= HEARTBEAT_SECONDS:  # this process still runs the sweep
                self.store.leases.claim_sweep(self.sweep_id, self.lease)
                beat = time.monotonic()
            self.collect()
            # events after completions: a worker reports its next run's start only after the last one's result
            self.pass_events()

    def collect(self) -> None:
        """Store the result of every task that has finished (a failed one as a failed run); a lost scheduler ends
        the sweep (`lost`)."""
        for dkey, (future, run) in list(self.pending.items()):
            if not future.done():
                continue
            if future.status != DASK_DONE and scheduler_lost(self.client, future):
                self.lost()  # the task did not fail: its scheduler went away
            result = self._result(future)
            del self.pending[dkey]
            self.running.discard(run.key)
            self.completed += 1
            future.release()
            run_id, _ = store_result(self.store, self.sweep_id, run, result)
            state = self.state
            if result["status"] == RunStatus.FINISHED:
                state.done += 1
                elbo = (result.get("figures") or {}).get("full_elbo")
                if elbo is not None and (state.best_elbo is None or elbo > state.best_elbo):
                    state.best_elbo = elbo
            else:
                state.failed += 1
            self.tell(SweepEvent(SweepEventKind.STORED, key=run.key, run_id=run_id, status=RunStatus(result["status"]),
                                 message=result.get("message")))

    def _result(self, future) -> dict:
        """What a done task gave: its result, or a failed run saying why (it raised after its retries, or its
        workers kept dying: KilledWorker)."""
        if future.status != DASK_DONE:
            error = future.exception() if future.status == "error" else f"task {future.status}"
            return {"status": RunStatus.FAILED, "message": f"{type(error).__name__}: {error}", "step": 0}
        try:
            return future.result()
        except Exception:
            if scheduler_lost(self.client):  # the result comes through the scheduler, gone since the task ended
                self.lost()
            raise

    def lost(self) -> None:
        """The scheduler went away mid-sweep: store every run not yet stored as interrupted (a resume trains it)
        and raise `SchedulerLostError`; the sweep ends interrupted."""
        for _, run in self.pending.values():
            store_result(self.store, self.sweep_id, run,
                         {"status": RunStatus.INTERRUPTED, "message": LOST_MESSAGE, "step": 0})
        left, self.pending = len(self.pending), {}
        self.running.clear()
        raise SchedulerLostError(self.scheduler, self.sweep_id, left)

    def pass_events(self) -> None:
        """The workers' events for runs still pending (waiting up to `POLL_SECONDS` for the first)."""
        try:
            event = self.events.get(timeout=POLL_SECONDS)
        except queue.Empty:
            return
        while event is not None:
            event = SweepEvent.from_dict(event)
            if event is not None and event.key in waiting_keys(self.pending):
                if event.kind == SweepEventKind.STARTED:
                    self.running.add(event.key)
                self.tell(event)
            try:
                event = self.events.get_nowait()
            except queue.Empty:
                event = None


def _close(client, cluster, topic: str, lost: bool = False) -> None:
    """Unsubscribe and close the sweep's client (quietly when its scheduler is `lost`), and close the cluster it
    started (if any)."""
    if client is not None:
        if not lost:
            try:
                client.unsubscribe_topic(topic)
            except Exception:  # noqa: BLE001 — a connection lost since has nothing to unsubscribe
                pass
        close_client(client, lost)
    if cluster is not None:
        cluster.close()


def run_serially(spec: SweepSpec, threads: int | None = None) -> list[dict]:
    """Every planned run trained one after another in this process (no Dask, nothing stored): what the benchmark
    compares the cluster with."""
    return [train_run(run.config.to_json(), run.key, None, threads=threads) for run in spec.runs()]


__all__ = ["run_sweep", "SweepRunner", "SweepProgress", "SCHEDULER_TIMEOUT", "SchedulerLostError", "check_scheduler",
           "connect_client", "dask_key", "require_dask", "store_result", "run_serially"]
