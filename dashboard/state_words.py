"""The words the pages show for each state, and the tone each is drawn in: one entry for every member of the enums of
`invlab.train.states` (a run's status, a page's training, a sweep, a Compare study, a health verdict).

The engine names the states; how a page says them is the dashboard's. Each enum has its own table: members of two
enums can share their text (`PageState.DIVERGING == HealthState.DIVERGING`), so one table keyed by member would mix
them. A tone is one of `TONES`: quiet (nothing happening), busy (getting ready or waiting), good (training or done
well), held (paused, stopped: resumable), warning (worth a look), error (went wrong).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from invlab.train.states import HealthState, PageState, PlannedRunState, RunStatus, StudyState, SweepStatus

TONES = ("quiet", "busy", "good", "held", "warning", "error")
# quiet takes the theme's own faint text colour: a fixed grey is dark on the dark page
FAINT = "var(--neutral-foreground-hint, #666)"
# the colour a state's word is drawn in on every page, by its tone
TONE_COLOURS = {"quiet": FAINT, "busy": "#9a6a00", "good": "#23843a", "held": "#1f6fb5", "warning": "#9a6a00",
                "error": "#c0392b"}


@dataclass(frozen=True)
class Shown:
    """How a page shows a state: its word and its tone (one of `TONES`)."""

    word: str
    tone: str


RUN_WORDS = {
    RunStatus.CREATED: Shown("created", "quiet"),
    RunStatus.RUNNING: Shown("running", "good"),
    RunStatus.PAUSED: Shown("paused", "held"),
    RunStatus.FINISHED: Shown("finished", "good"),
    RunStatus.FAILED: Shown("failed", "error"),
    RunStatus.INTERRUPTED: Shown("interrupted", "held"),
    RunStatus.KILLED: Shown("killed", "held"),  # its process ended without a word: resumable from a checkpoint
}

PAGE_WORDS = {
    PageState.IDLE: Shown("idle", "quiet"),
    PageState.BUILDING: Shown("building", "busy"),
    PageState.QUEUED: Shown("queued", "busy"),
    PageState.RUNNING: Shown("running", "good"),
    PageState.PAUSING: Shown("pausing…", "held"),
    PageState.PAUSED: Shown("paused", "held"),
    PageState.FINISHED: Shown("finished", "good"),
    PageState.CONVERGED: Shown("converged", "good"),
    PageState.STALLED: Shown("stalled", "warning"),
    PageState.DIVERGING: Shown("diverging", "error"),
    PageState.COLLAPSED: Shown("collapsed", "error"),
    PageState.FAILED: Shown("failed", "error"),
}

SWEEP_WORDS = {
    SweepStatus.CREATED: Shown("created", "quiet"),
    SweepStatus.RUNNING: Shown("running", "good"),
    SweepStatus.FINISHED: Shown("finished", "good"),
    SweepStatus.INCOMPLETE: Shown("incomplete", "warning"),
    SweepStatus.INTERRUPTED: Shown("interrupted", "held"),
}

STUDY_WORDS = {
    StudyState.IDLE: Shown("idle", "quiet"),
    StudyState.STARTING: Shown("starting", "busy"),
    StudyState.RUNNING: Shown("running", "good"),
    StudyState.STOPPING: Shown("stopping…", "held"),
    StudyState.STOPPED: Shown("stopped", "held"),
    StudyState.FINISHED: Shown("finished", "good"),
    StudyState.FAILED: Shown("failed", "error"),
}

PLANNED_WORDS = {
    PlannedRunState.QUEUED: Shown("queued", "busy"),
    PlannedRunState.NOT_RUN: Shown("not run", "quiet"),
}

# a health verdict's tone is its message's: only a collapse is an error, the others are worth a look
HEALTH_WORDS = {
    HealthState.OK: Shown("ok", "good"),
    HealthState.COLLAPSED: Shown("collapsed", "error"),
    HealthState.STALLED: Shown("stalled", "warning"),
    HealthState.CONVERGED: Shown("converged", "good"),
    HealthState.DIVERGING: Shown("diverging", "warning"),
}

WORDS: dict[type[Enum], dict] = {RunStatus: RUN_WORDS, PageState: PAGE_WORDS, SweepStatus: SWEEP_WORDS,
                                 StudyState: STUDY_WORDS, HealthState: HEALTH_WORDS, PlannedRunState: PLANNED_WORDS}


def shown(state, kind: type[Enum]) -> Shown:
    """How a page shows `state` (a member of `kind`, or its text). Text that names no member (a status stored by a
    newer version) is shown as it is, quietly."""
    try:
        return WORDS[kind][kind(state)]
    except ValueError:
        return Shown(str(state), "quiet")


def state_word(state, kind: type[Enum]) -> str:
    """The word a page shows for `state` of `kind` (see `shown`)."""
    return shown(state, kind).word


def state_tone(state, kind: type[Enum]) -> str:
    """The tone `state` of `kind` is drawn in: one of `TONES` (see `shown`)."""
    return shown(state, kind).tone


def state_colour(state, kind: type[Enum]) -> str:
    """The CSS colour `state` of `kind` is drawn in, by its tone (`TONE_COLOURS`)."""
    return TONE_COLOURS[state_tone(state, kind)]


def row_word(status) -> str:
    """The word a sweep's table or a Discover ranking shows for one of its runs: a planned run's state
    (`PlannedRunState`: queued, not run) or a stored run's status (`RunStatus`; text that names neither as it is)."""
    kind = PlannedRunState if status in PLANNED_WORDS else RunStatus
    return state_word(status, kind)
