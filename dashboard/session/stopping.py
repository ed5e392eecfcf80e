"""Stopping every page's training when the server itself stops (SIGTERM, Ctrl-C: `invlab.dashboard.serving.signals`),
so that no run is left `running` for a reader to find `killed` and lose the steps since its last checkpoint.

Each training thread is asked to end at its next step (`TrainingSession.stop(wait=False, why=...)`): the trainer
then saves a checkpoint at that step, and the thread marks the run `interrupted`, saying why and how to resume it
(`mark_interrupted`), before it closes its store. `stop_all` asks every live session and waits for their threads.
"""
from __future__ import annotations

import logging
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
    store, run_id, step = trainer.store, trainer.run_id, trainer.step_count
    if store is None or run_id is None:
        return
    try:
        latest = store.latest_checkpoint(run_id)
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
