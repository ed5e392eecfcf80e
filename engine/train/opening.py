"""Opening a stored run to continue it: the one road that `invlab train --resume ID` and the page (`?run=ID`, the
Runs tab's Open run, then ▶ Start) both take (`open_run`, returning an `OpenedRun`).

A run continues from its newest checkpoint that loads: a checkpoint whose file is missing or unreadable, or whose
state does not fit the model, is skipped and named in a note, and the one before it is tried. Its stored history
(metrics up to that checkpoint) comes with it. Continuing it claims it (one writer per run: another holder is
refused, naming it) and, at that moment, drops the metrics and views stored past the checkpoint (the steps after it
are trained again). Opening without claiming (what a page does to show a run before ▶ Start) changes nothing stored.

The refusals are the same on both roads: another process holding the run, its data changed since it was trained
(`DataError`, naming both), a total of `steps` below the step it would continue from, and no checkpoint that loads
(`CheckpointError`; nothing stored is changed)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from .checkpoint import CheckpointError, load_checkpoint
from .config import RunConfig
from .persistence import other_data_note
from .resume import refuse_steps_behind
from .store import RunRecord, RunStore
from .trainer import Trainer

# what a checkpoint that cannot be continued from raises as it is read or loaded into the model
UNUSABLE = (CheckpointError, RuntimeError, KeyError, ValueError, TypeError)


@dataclass
class SkippedCheckpoint:
    """A checkpoint of the run that was not continued from: its step, its file and why (one sentence)."""

    step: int
    path: Path
    why: str

    @property
    def note(self) -> str:
        """What is said of it: the step and why, which names the file."""
        return f"the checkpoint at step {self.step} was skipped: {self.why}"


@dataclass
class OpenedRun:
    """A stored run opened to continue (`open_run`). `trainer` continues it from `step` (its checkpoint's); it is
    None when no checkpoint loads or another process trains the run now (`writer`), and `step` is then the stored
    step. `history` is its stored metrics ({name: (steps, values)}) up to `step`; `skipped` the checkpoints passed
    over and `notes` what to say about them and about other data. `claimed`: this process holds the run's lease
    and the stored metrics and views past `step` were dropped."""

    store: RunStore
    record: RunRecord
    config: RunConfig
    trainer: Trainer | None
    step: int
    history: dict = field(default_factory=dict)
    skipped: list[SkippedCheckpoint] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    writer: str | None = None
    claimed: bool = False

    @property
    def run_id(self) -> int:
        """The stored run's id."""
        return int(self.record.id)

    @property
    def dropped(self) -> int:
        """How many stored steps past the checkpoint continuing it trains again (0 when none)."""
        return max(0, int(self.record.step) - self.step) if self.trainer is not None else 0

    def unusable(self) -> CheckpointError:
        """The refusal to continue a run that has no checkpoint that loads (nothing stored was changed)."""
        kept = sum(len(steps) for steps, _ in self.store.metrics.read(self.run_id).values())
        found = "; ".join(self.notes[:len(self.skipped)]) if self.skipped else "none was written"
        return CheckpointError(f"run {self.run_id} has no usable checkpoint to resume from ({found}). Nothing was "
                               f"changed: its {kept} stored metric values, its status ({self.record.status}) and "
                               f"its step ({self.record.step}) are as they were.")

    def claim(self) -> None:
        """Take the run's lease for this process (`RunStoreError` naming another holder) and drop what it stored
        past `step`, once. A `CheckpointError` when there is nothing to continue from."""
        if self.trainer is None:
            raise self.unusable()
        self.trainer.record.claim()
        if not self.claimed:
            self.store.runs.truncate(self.run_id, self.step)  # its metrics and views past the checkpoint
            self.claimed = True


def open_run(store: RunStore, run_id: int, *, claim: bool = True, dataset=None, train: dict | None = None,
             trainer_cls: type = Trainer) -> OpenedRun:
    """Open stored run `run_id` to continue it (see the module's doc); with `claim`, claim it at once (what
    `invlab train --resume` does; the page claims at ▶ Start, with `OpenedRun.claim`).

    `train`: training settings to change from here on (steps, learning rate, intervals ...), recorded in the stored
    config on claiming; `dataset`: other data of the same shapes to continue on (recorded). Without `claim`, a run
    another process trains is opened with no trainer (`writer` says who). Any refusal leaves the run as it was."""
    record = store.runs.get(run_id)
    if not claim:
        writer = store.leases.live_writer(run_id)
        if writer:
            config = RunConfig.from_json(record.config)
            return OpenedRun(store, record, config, None, int(record.step), store.metrics.read(run_id), writer=writer)
        return _opened(store, record, dataset, train, trainer_cls)
    lease = store.leases.claim_run(run_id)  # one transaction: a second claimant is refused here, naming the holder
    try:
        opened = _opened(store, record, dataset, train, trainer_cls)
        if opened.trainer is None:
            raise opened.unusable()
        opened.trainer.record.lease = lease
        if opened.trainer.config.to_json() != record.config:  # training changes, or the data's identity recorded
            store.runs.update(run_id, config=opened.trainer.config.to_json())
        opened.claim()
    except BaseException:
        store.leases.release_run(run_id, lease, record.status, record.message)  # as it was: nothing trained
        raise
    return opened


def _opened(store: RunStore, record: RunRecord, dataset, train: dict | None, trainer_cls: type) -> OpenedRun:
    """The run as its newest checkpoint that loads leaves it (no trainer when none does); refusals raised."""
    config = RunConfig.from_json(record.config)
    if train:
        config = dataclasses.replace(config, train={**config.train, **train})
    run_id, trainer, skipped = int(record.id), None, []
    for step, path in store.checkpoints.list(run_id):
        try:
            payload = load_checkpoint(path, map_location="cpu")
        except UNUSABLE as err:
            skipped.append(SkippedCheckpoint(int(step), Path(path), str(err).splitlines()[0]))
            continue
        if trainer is None:  # built once a checkpoint reads (a run with none needs no model); its refusals stand
            trainer = trainer_cls(config, store=store, run_id=run_id, dataset=dataset)
        try:
            trainer.load_state(payload)
            break
        except UNUSABLE as err:  # a state that does not fit the model
            skipped.append(SkippedCheckpoint(int(step), Path(path), str(err).splitlines()[0]))
    else:
        trainer = None
    step = int(trainer.step_count) if trainer is not None else int(record.step)
    history = store.metrics.read(run_id)
    if trainer is not None:
        refuse_steps_behind(run_id, config.train_config().steps if train and "steps" in train else None, step)
        history = {name: _upto(steps, values, step) for name, (steps, values) in history.items()}
        for name, points in history.items():
            trainer.history[name] = (list(points[0]), list(points[1]))
        if hasattr(trainer.model, "restore_history"):  # e.g. the learned ranges over training
            trainer.model.restore_history(trainer.history, step)
        config = trainer.config
    notes = [s.note for s in skipped]
    if trainer is not None:
        trained_on = RunConfig.from_json(record.config).data_identity
        notes += other_data_note(trained_on, config.data_identity, f"run {run_id}")
        trainer.resume_notes = list(notes)
    return OpenedRun(store, record, config, trainer, step, history, skipped, notes)


def _upto(steps: list, values: list, step: int) -> tuple[list, list]:
    """One metric's points at or before `step`."""
    kept = [i for i, s in enumerate(steps) if s <= step]
    return [steps[i] for i in kept], [values[i] for i in kept]


__all__ = ["OpenedRun", "SkippedCheckpoint", "open_run"]
