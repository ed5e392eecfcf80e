"""The words and colours the Compare page shows for each state (`invlab.train.states`): a sweep's or study's state
on its status line, and a run's in the sweep's table and the Discover ranking. The engine names the states; the page
alone says them in words, one word per state."""
from __future__ import annotations

from invlab.train.states import PlannedRunState, RunStatus, StudyState

STATE_WORDS = {StudyState.IDLE: "idle", StudyState.STARTING: "starting", StudyState.RUNNING: "running",
               StudyState.STOPPING: "stopping…", StudyState.STOPPED: "stopped", StudyState.FINISHED: "finished",
               StudyState.FAILED: "failed",
               RunStatus.CREATED: "created", RunStatus.RUNNING: "running", RunStatus.PAUSED: "paused",
               RunStatus.FINISHED: "finished", RunStatus.FAILED: "failed", RunStatus.INTERRUPTED: "interrupted",
               PlannedRunState.QUEUED: "queued", PlannedRunState.NOT_RUN: "not run"}
STATE_COLOURS = {StudyState.IDLE: "#666", StudyState.STARTING: "#9a6a00", StudyState.RUNNING: "#23843a",
                 StudyState.STOPPING: "#1f6fb5", StudyState.STOPPED: "#1f6fb5", StudyState.FINISHED: "#23843a",
                 StudyState.FAILED: "#c0392b"}


def state_words(state) -> str:
    """The words shown for `state` (a member, or a stored run's status as read back); a state this page has no
    words for (a status a later version stores) is shown as its own text."""
    return STATE_WORDS.get(state, str(state or ""))


__all__ = ["STATE_COLOURS", "STATE_WORDS", "state_words"]
