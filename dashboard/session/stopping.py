"""How a page's run and run store are left when its training thread stops: when the server itself stops (SIGTERM,
Ctrl-C: `invlab.dashboard.serving.signals`), when the page closes, and when the store fails under it.

The server stopping: each training thread is asked to end at its next step (`TrainingSession.stop(wait=False,
why=...)`); the trainer then saves a checkpoint at that step, and the thread marks the run `interrupted`, saying why
and how to resume it (`mark_interrupted`), before it closes its store. `stop_all` asks every live session and waits
for their threads, so no run is left `running` for a reader to find `killed`, losing its steps since its last
checkpoint.

A store that cannot be written (overwritten, damaged, its disk full) stops the page's training with a sentence on
the page and in the log (`store_failed`), never a traceback; the run's checkpoint files stay where they are, and what
can still be marked is (the run `interrupted`, if the store takes that write). A run built and never trained is
marked `interrupted` when its page closes (`abandon`), and the store the session owns is closed (`close_store`).
"""
from __future__ import annotations

import logging
import sqlite3
import time
import weakref

from invlab.errors import InvlabError
from invlab.train.states import RunStatus

log = logging.getLogger("invlab.dashboard")

LIVE: "weakref.WeakSet" = weakref.WeakSet()  # this process's sessions whose training thread has started


def mark_interrupted(trainer, why: str) -> None:
    """Mark `trainer`'s stored run `interrupted` at its step (stopped by `why`, e.g. "SIGTERM"), with how to resume it
    and where its latest checkpoint is when none was written at that step. A store that cannot be written is said
    in the log, in a sentence: its checkpoint files stay, and readers mark the run once this process has ended."""
    store, run_id, step = trainer.record.store, trainer.record.run_id, trainer.step_count
    if store is None or run_id is None:
        return
    try:
        latest = store.checkpoints.latest(run_id)
        saved = "" if latest is not None and latest[0] == step else \
            f" (no checkpoint at that step; the latest is at step {latest[0] if latest else '-'})"
        message = (f"stopped with the server ({why}) at step {step}{saved}; resume with: invlab train --resume "
                   f"{run_id}, or open it on the page")
        trainer.record.write_status(RunStatus.INTERRUPTED, step, message, {})
        trainer.status = RunStatus.INTERRUPTED
    except InvlabError as err:
        log.error("run %s could not be marked interrupted at step %s: %s", run_id, step, err)


def stop_all(why: str, timeout: float) -> list:
    """Ask every live session's training to stop at its next step (its run checkpointed and marked `interrupted`,
    stopped by `why`) and wait up to `timeout` seconds in all for their threads; returns the sessions whose thread
    still runs."""
    sessions = list(LIVE)
    for session in sessions:
        session.stop(wait=False, why=why)
    deadline = time.monotonic() + timeout
    for session in sessions:
        session.thread.join(max(0.0, deadline - time.monotonic()))
    return [session for session in sessions if session.thread.is_alive()]


def store_failed(trainer, err: InvlabError) -> str | None:
    """What the page says when `err` is the run store failing (an sqlite error under it, not a refusal such as a run
    another process trains) while `trainer` used it; None for any other error. The fault is logged in a sentence and
    the run is marked `interrupted` if the store still takes that write."""
    if not isinstance(err.__context__, (sqlite3.Error, OSError)):
        return None
    run_id = None if trainer is None else trainer.record.run_id
    step = getattr(trainer, "step_count", 0)
    store = None if trainer is None else trainer.record.store
    folder = store.checkpoints.folder(run_id) if store is not None and run_id is not None else None
    kept = f"; its checkpoint files stay in {folder}" if folder is not None else ""
    log.error("the run store cannot be written, so run %s stopped at step %s%s: %s", run_id, step, kept, err)
    if trainer is not None:
        mark_interrupted(trainer, "the run store failed")
    return f"The run store cannot be written, so training stopped at step {step}{kept}. {err}"


def abandon(trainer, why: str) -> None:
    """A run a session built and never trained is marked `interrupted` (`why`), not left `created` for ever; a
    store that cannot be written now is said in the log (readers mark the run once this process has ended)."""
    if trainer is None:
        return
    try:
        trainer.abandon(why)
    except InvlabError as err:
        log.error("run %s, never trained, could not be marked interrupted: %s", trainer.record.run_id, err)


def close_store(store) -> None:
    """Close a session's own run store; one that cannot take what was queued for it is said in the log, in a
    sentence (it has nothing more to lose)."""
    if store is None:
        return
    try:
        store.close()
    except InvlabError as err:
        log.error("the run store could not take the page's last writes as it closed: %s", err)
