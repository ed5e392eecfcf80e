"""The names of where a run, a page's training and a sweep stand: one enum each, shared by the engine, the CLI and
the dashboard, so no part compares a state's text of its own.

Each is a `str` enum: a member equals its value ("finished" == RunStatus.FINISHED), prints and formats as it, and is
stored in the run store and in JSON as that text, so runs stored before these names existed read back the same.
"""
from __future__ import annotations

from enum import Enum


class _Named(str, Enum):
    """A state name: equal to, printed and formatted as its text."""

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, spec: str) -> str:
        return str.__format__(str(self), spec)

    @classmethod
    def values(cls) -> list[str]:
        """Every member's text, in declaration order (a selector's choices)."""
        return [member.value for member in cls]


class RunStatus(_Named):
    """A stored run's status (the run store's `runs.status`, `invlab runs`): created by a trainer and not yet
    trained; running (a trainer holds its lease and steps it); paused (let go with its checkpoint, resumable);
    finished; failed (with a message saying why); interrupted (stopped before it could go on: Ctrl-C, a closed page,
    or its process ended before it trained a step); killed (its process ended while it trained — kill -9, a crash,
    the machine rebooted — found so by a later reader of the store; resumable from its latest checkpoint)."""

    CREATED = "created"
    RUNNING = "running"
    PAUSED = "paused"
    FINISHED = "finished"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    KILLED = "killed"


class PageState(_Named):
    """Where a page's (or a notebook `Explorer`'s) training stands, as its status line shows it: idle (nothing
    built), building (the model is being built), queued (waiting for a training slot on a busy server), running,
    pausing… (Pause pressed, the step in progress ends), paused, finished, converged (an L-BFGS solve that has
    converged), stalled / diverging / collapsed (the health verdicts of a running run), failed."""

    IDLE = "idle"
    BUILDING = "building"
    QUEUED = "queued"
    RUNNING = "running"
    PAUSING = "pausing…"
    PAUSED = "paused"
    FINISHED = "finished"
    CONVERGED = "converged"
    STALLED = "stalled"
    DIVERGING = "diverging"
    COLLAPSED = "collapsed"
    FAILED = "failed"


# the states of the training session itself (PageState's others are how the status line words a running session)
SESSION_STATES = (PageState.IDLE, PageState.BUILDING, PageState.QUEUED, PageState.RUNNING, PageState.PAUSED,
                  PageState.FINISHED, PageState.CONVERGED, PageState.FAILED)


class SweepStatus(_Named):
    """A stored sweep's status (`invlab sweeps`, the Compare page): created (planned, nothing submitted yet);
    running; finished (every run finished); incomplete (every run ended, some failed); interrupted (stopped or its
    client ended; `--resume` runs only what is missing)."""

    CREATED = "created"
    RUNNING = "running"
    FINISHED = "finished"
    INCOMPLETE = "incomplete"
    INTERRUPTED = "interrupted"


class HealthState(_Named):
    """A run's health verdict (`invlab.train.health.assess`): ok; collapsed (the posterior fell back to the prior);
    stalled (no progress, still at chance); converged (an L-BFGS solve that has converged); diverging (the loss rises
    steadily)."""

    OK = "ok"
    COLLAPSED = "collapsed"
    STALLED = "stalled"
    CONVERGED = "converged"
    DIVERGING = "diverging"


# the verdicts a page or the CLI warns about
UNHEALTHY = (HealthState.COLLAPSED, HealthState.STALLED, HealthState.DIVERGING)


class StudyState(_Named):
    """Where the Compare page's sweep or Discover study stands, as its status line shows it: idle, starting (the
    cluster is coming up), running, stopping… (Stop pressed, the runs in flight end), stopped (what finished is
    stored; it can be resumed), finished, failed."""

    IDLE = "idle"
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping…"
    STOPPED = "stopped"
    FINISHED = "finished"
    FAILED = "failed"


class SweepEventKind(_Named):
    """What a running sweep tells (`invlab.sweeps.events.SweepEvent`): planned (the runs left to train counted),
    submitted (handed to Dask), started (a worker began a run), step (a run's progress), stored (a run's result is
    stored, its `RunStatus` in the event)."""

    PLANNED = "planned"
    SUBMITTED = "submitted"
    STARTED = "started"
    STEP = "step"
    STORED = "stored"


class PlannedRunState(_Named):
    """A sweep's planned run that the store does not hold yet: queued (waiting for a worker) or not run (the sweep
    ended without it)."""

    QUEUED = "queued"
    NOT_RUN = "not run"


__all__ = ["RunStatus", "PageState", "SweepStatus", "StudyState", "HealthState", "SweepEventKind", "PlannedRunState",
           "SESSION_STATES", "UNHEALTHY"]
