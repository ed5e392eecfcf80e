"""`Update`: what the page's server thread takes from its training session at each tick (`TrainingSession.drain`)."""
from __future__ import annotations

from dataclasses import dataclass, field

from invlab.train import RunConfig


@dataclass
class Update:
    """What the server thread takes from the session at each tick."""

    points: dict[str, tuple[list, list]] = field(default_factory=dict)  # metric → (steps, values), new only
    snapshot: object | None = None  # a Snapshot with views, when a new one is ready
    new_run: bool = False  # the trainer was replaced (reset / open): archive the curves first
    run_label: str = ""
    config: RunConfig | None = None  # the new run's configuration (with new_run)
    tunables: list | None = None  # the model's live-settable values (engine Tunables), with a snapshot
    layout: tuple[str, ...] = ()  # the new run's metric names (with new_run): its curves are laid out before data
