"""What a running sweep tells its client while it runs: one typed `SweepEvent` per thing that happened (the runs
left counted, the runs submitted to Dask, a run started on a worker, a run's step, a run's result stored with its
`RunStatus`). Its kind is a `SweepEventKind` and any run state a `RunStatus` (`invlab.train.states`), so the CLI,
the Discover study and the Compare page read one vocabulary and none compares a state's text of its own.

A worker's events cross Dask as plain dicts (`to_dict`: msgpack-safe text and numbers); the client reads them back
typed (`from_dict`), leaving out anything it does not know.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..train.states import RunStatus, SweepEventKind

# where a run stands once an event of this kind is told (STORED's is the event's own status)
RUN_STATUS = {SweepEventKind.STARTED: RunStatus.RUNNING, SweepEventKind.STEP: RunStatus.RUNNING}


@dataclass(frozen=True)
class SweepEvent:
    """One thing a sweep tells: its `kind`, the run's `key` (None for the sweep's own events), and what the kind
    carries: `run_id` and `status` (a stored run), `message` (why a run failed), `step` / `steps` / `elbo` / `loss`
    (a run's progress), `runs` (how many were planned or submitted), `worker` (where the run trains)."""

    kind: SweepEventKind
    key: str | None = None
    run_id: int | None = None
    status: RunStatus | None = None
    message: str | None = None
    step: int | None = None
    steps: int | None = None
    elbo: float | None = None
    loss: float | None = None
    runs: int | None = None
    worker: str | None = None

    @property
    def run_status(self) -> RunStatus | None:
        """Where the event's run stands now: running once started or stepping, its stored status once stored; None
        for the sweep's own events."""
        return self.status if self.kind == SweepEventKind.STORED else RUN_STATUS.get(self.kind)

    def to_dict(self) -> dict:
        """The event as plain data (text, numbers, None): what a Dask worker's event carries."""
        return {name: (None if value is None else value.value if hasattr(value, "value") else value)
                for name, value in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict) -> SweepEvent | None:
        """The event `data` (`to_dict`'s) describes, typed; None when it is not a sweep's event."""
        if not isinstance(data, dict):
            return None
        try:
            kind = SweepEventKind(data.get("kind"))
            status = None if data.get("status") is None else RunStatus(data["status"])
        except ValueError:
            return None
        fields = {name: data.get(name) for name in cls.__dataclass_fields__ if name not in ("kind", "status")}
        return cls(kind, status=status, **fields)


__all__ = ["SweepEvent"]
