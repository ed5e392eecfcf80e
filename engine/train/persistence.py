"""A `Trainer`'s persistence: its run in the run store (`StoredRun`, the part a trainer holds as `trainer.record`:
the run's id, this trainer's lease on it, its status and heartbeat, its checkpoints written on schedule and pruned),
and training continued from a checkpoint (`trainer_from_checkpoint`, which `Trainer.from_checkpoint` is); a stored run
is continued by `invlab.train.opening.open_run`.

Resume is exact: a run stopped at any step (mid-epoch included) and resumed from its checkpoint, in another process,
takes the same steps as one never stopped. Everything random a step uses is the trainer's own: its generator
(initialisation, minibatch permutations) and its copy of torch's global CPU stream and, on a GPU, that device's
stream (sampled orbits, Monte-Carlo likelihoods), swapped in for each step and out after it. Evaluations draw from
a seeded stream of their own (the same model scores the same) and views from the process's, so neither changes what
training draws. A checkpoint keeps all of these and the position in the current epoch (`EpochOrder`). (Trainers
stepping at the same moment in threads of one process share torch's global stream during their steps, so there the
draws are not reproducible.)

With a run store, checkpoints are written every `checkpoint_seconds` (by default every 30 s, stretched so that
saving takes at most 2 % of the time) and every `checkpoint_every` steps, and the newest `keep_checkpoints` are kept.
`invlab.train.opening.open_run`, the one road the command line and the page continue a run by, continues from the
newest checkpoint that loads, saying which it skipped, or refuses with a `CheckpointError` and changes nothing; only
metrics and views stored after the checkpoint it continues from are dropped.

A run knows its data: the run's stored config and every checkpoint carry the data's identity (`invlab.data.identity`:
source, options, shapes, content hash, a file's path and modification time). Resuming or reloading onto other data
is refused with a message naming both; an explicit `dataset=` with the same shapes is accepted, and the run's config
then records that data's identity.
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import torch

from ..data.identity import describe, identity, refuse_other_data, same_data, same_shapes
from ..errors import ConfigError, DataError
from .checkpoint import load_checkpoint, write_failure
from .config import RunConfig, TrainConfig
from .store import HEARTBEAT_SECONDS, RunStore, StoreLocked

CHECKPOINT_SHARE = 0.02  # time-based checkpoints are spaced so that writing them takes at most this share


def data_for_run(config: RunConfig, dataset, run_id: int | None):
    """(dataset, config recording its identity): `dataset` if given (its shapes checked against the data the config
    was trained on), else the config's data, refused when it is not the data the run was trained on."""
    stored = config.data_identity
    what = f"run {run_id}" if run_id is not None else "this checkpoint"
    if dataset is None:
        if stored and not stored.get("source"):
            raise DataError(f"{what} was trained on the hand-built dataset {stored.get('name', '?')!r} ("
                            f"{stored['shapes']['X_train'][0]} points of {tuple(stored['shapes']['X_train'][1:])}), "
                            "which cannot be loaded again by name; pass that data as dataset= to continue it.")
        dataset = config.data_config().load()
        ident = identity(dataset)
        if stored:
            refuse_other_data(stored, ident, what, "train a new run on this data" if run_id is None else
                              f"train it again on this data as a new run (invlab train --resume {run_id} --restart)")
        return dataset, dataclasses.replace(config, data_identity=ident)
    dataset = dataset.check()
    ident = identity(dataset)
    if stored and not same_shapes(stored, ident):
        raise DataError(f"{what} was trained on {describe(stored)}, but dataset= is {describe(ident)}: the model "
                        "takes other inputs; give data of the same task and input shape.")
    data = dict(config.data)
    if dataset.source and dataset.source != data.get("dataset"):  # the config names the data it now trains on
        own = {k: v for k, v in dataset.options.items() if k not in _VARIANTS}
        data = {"dataset": dataset.source, **{k: dataset.options[k] for k in _VARIANTS if k in dataset.options},
                **({"source_options": own} if own else {})}
    return dataset, dataclasses.replace(config, data=data, data_identity=ident)


def placed_splits(ds, spec, device: torch.device, dtype: torch.dtype):
    """(X [N, D] or [N, C, H, W], y [N], X_test, y_test): `ds`'s splits on `device` in `dtype`, the labels as class
    indices (long) for classification or standardised targets (`dtype`) for regression; ConfigError when model
    family `spec` cannot train on the data."""
    if ds.task not in spec.tasks:
        raise ConfigError(f"model {spec.name!r} does not support {ds.task} data ({ds.name}); "
                          f"it supports {', '.join(spec.tasks)}")
    if spec.image_only and not ds.is_image:
        raise ConfigError(f"model {spec.name!r} needs image data; {ds.name} is tabular")

    def labels(y):
        y = torch.as_tensor(y, device=device)
        return y.long() if ds.task == "classification" else y.to(dtype)

    return (torch.as_tensor(ds.X_train, dtype=dtype, device=device), labels(ds.y_train),
            torch.as_tensor(ds.X_test, dtype=dtype, device=device), labels(ds.y_test))


_VARIANTS = ("rotate", "odd_even", "classes", "subset", "test_subset", "test_fraction", "seed")


class StoredRun:
    """A trainer's run in a run store: the store (None: a run kept nowhere, and every method does nothing), the run's
    id, this trainer's lease on it (`claim`), whether this trainer created it, and when its next heartbeat and
    time-based checkpoint are due. Times are the trainer's clock's seconds (`Trainer._now`)."""

    def __init__(self, store: RunStore | None, run_id: int | None, *, config_json: str, model: str,
                 data_name: str):
        self.store, self.run_id = store, run_id
        self.lease: str | None = None  # this trainer's claim on the run (see `claim`)
        self.created = store is not None and run_id is None  # a new run, made here
        if self.created:
            self.run_id = store.runs.create(config_json, model, data_name)
        self.next_checkpoint = math.inf  # when a time-based checkpoint is due, set by `start`
        self.last_beat = -math.inf

    def claim(self) -> None:
        """Take (or renew) the lease on the run: one transaction that marks it `running` with this process as its
        writer. Raises `RunStoreError` naming the other process when another writer holds the run or took it since
        this trainer last trained."""
        if self.store is None or self.run_id is None:
            return
        try:
            self.lease = self.store.leases.claim_run(self.run_id, self.lease, wait=not self.created)
        except StoreLocked:
            if not self.created:
                raise
            # a run this trainer created (no other process has trained it): training goes on while another program
            # holds the store locked, and its `running` mark waits in the queue with its metrics

    def release(self, status: str) -> None:
        """Give the run back, marked `status`, for another trainer or process to claim; nothing without a claim."""
        if self.store is not None and self.run_id is not None and self.lease is not None:
            self.store.leases.release_run(self.run_id, self.lease, status, None)
            self.lease = None

    def abandon(self, why: str) -> bool:
        """Mark a run this trainer created and never trained `interrupted`, with `why` and how to train its settings
        again; whether the store did (not if another process claimed it since)."""
        if self.store is None or self.run_id is None or not self.created:
            return False
        return self.store.runs.abandon(self.run_id, f"{why}; train these settings as a new run with: invlab train "
                                                   f"--resume {self.run_id} --restart")

    def write_status(self, status: str, step: int, message: str | None, figures: dict) -> None:
        """Store the run's `status` at `step` with `message` and its latest `figures` (test_error, elbo, …; None
        values are left as stored), written at once."""
        if self.store is not None:
            self.store.runs.update(self.run_id, status=status, step=step, message=message,
                                  **{k: v for k, v in figures.items() if v is not None})
            self.store.flush()

    def beat(self, step: int, elbo: float | None, now: float) -> None:
        """Write the queued metrics, the step and the last ELBO: a heartbeat that says this process still trains the
        run."""
        self.store.runs.update(self.run_id, step=step, **({} if elbo is None else {"elbo": elbo}))
        self.store.flush()
        self.last_beat = now

    def start(self, tc: TrainConfig, now: float) -> None:
        """Training (re)starts at `now`: the first time-based checkpoint is due `tc.checkpoint_seconds` later."""
        self.next_checkpoint = now + tc.checkpoint_seconds if tc.checkpoint_seconds else math.inf
        self.last_beat = now

    def due(self, step: int, tc: TrainConfig, now: float) -> str | None:
        """What the store needs after `step`: "checkpoint" (every `checkpoint_every` steps, or its time has come),
        "beat" (every `flush_every` steps, or HEARTBEAT_SECONDS since the last), or None."""
        if self.store is None:
            return None
        if tc.checkpoint_every and step % tc.checkpoint_every == 0 or now >= self.next_checkpoint:
            return "checkpoint"
        if step % tc.flush_every == 0 or now - self.last_beat >= HEARTBEAT_SECONDS:
            return "beat"
        return None

    def checkpoint_path(self, step: int) -> Path:
        """Where the checkpoint at `step` goes in the store's directory."""
        if self.store is None:
            raise ConfigError("save_checkpoint needs a path when the trainer has no run store")
        try:
            folder = self.store.checkpoints.folder(self.run_id)
        except OSError as err:  # the run's folder was replaced by a file, or its parent cannot be written
            raise write_failure(Path(err.filename or self.store.path.parent), err) from None
        return folder / f"step_{step:08d}.pt"

    def checkpoint_written(self, step: int, path: Path, elbo: float | None, tc: TrainConfig, began: float,
                           now: float) -> None:
        """Record the checkpoint at `path`, beat, keep the newest `tc.keep_checkpoints`, and space the next
        time-based one so that writing checkpoints takes at most CHECKPOINT_SHARE of the time (it took `now -
        began`)."""
        if self.store is not None:
            self.store.checkpoints.add(self.run_id, step, path)
            self.beat(step, elbo, now)
            self.prune(tc.keep_checkpoints)
        if tc.checkpoint_seconds:
            self.next_checkpoint = now + max(tc.checkpoint_seconds, (now - began) / CHECKPOINT_SHARE)

    def prune(self, keep: int) -> None:
        """Remove the run's checkpoints in the store's directory beyond the newest `keep` (0: keep all)."""
        if not keep or self.store is None:
            return
        own = self.store.checkpoints.folder(self.run_id).resolve()
        seen: list[Path] = []
        for step, path in self.store.checkpoints.list(self.run_id):
            resolved = path.resolve()
            if resolved in seen:
                continue
            seen.append(resolved)
            if len(seen) > keep and resolved.parent == own:
                self.store.checkpoints.forget(self.run_id, step, path)


def training_state(trainer) -> dict:
    """What a checkpoint of `trainer` holds, as `checkpoint.save_checkpoint`'s keyword arguments: the model's and the
    optimiser's state, the step, the run's config, its generator's and its random streams' states and the epoch's
    order and position (`EpochOrder.state`)."""
    return dict(model_state=trainer.model.state_dict(), optimizer_state=trainer.optimizer.state_dict(),
                step=trainer.step_count, config_json=trainer.config.to_json(), rng_state=trainer.generator.get_state(),
                streams=trainer.streams.state, **trainer.batches.state())


def load_training_state(trainer, payload: dict) -> None:
    """Put a loaded checkpoint's `payload` (`checkpoint.load_checkpoint`) into `trainer`: model, optimiser, step,
    generator, random streams, epoch order; the learning rate is the configured one at the checkpoint's step of the
    schedule (a resume may have changed it). The caller holds the trainer's lock."""
    trainer.model.load_state_dict(payload["model"])
    trainer.optimizer.load_state_dict(payload["optimizer"])
    trainer.step_count = int(payload["step"])
    trainer.generator.set_state(payload["rng"].to("cpu"))
    trainer.streams.load(payload.get("streams"))
    trainer.batches.load(payload.get("order"), payload.get("cursor", 0))
    trainer.scheduler.last_epoch = trainer.step_count
    lr = trainer.tc.learning_rate
    trainer.scheduler.base_lrs = [lr for _ in trainer.optimizer.param_groups]
    for group in trainer.optimizer.param_groups:
        group["initial_lr"] = lr
        group["lr"] = lr * trainer.tc.lr_factor(trainer.step_count)


def trainer_from_checkpoint(cls, path: str | Path, **kwargs):
    """A `cls` (Trainer) continuing from the checkpoint at `path` (`Trainer.from_checkpoint`)."""
    payload = load_checkpoint(path, map_location="cpu")
    config = RunConfig.from_json(payload["config"])
    trainer = cls(config, **kwargs)
    trainer.resume_notes = other_data_note(config.data_identity, trainer.config.data_identity, "the checkpoint")
    trainer.load_state(payload)
    return trainer


def other_data_note(stored: dict | None, now: dict | None, what: str) -> list[str]:
    """The note for a run continued on other data of the same shapes (an explicit dataset=)."""
    if stored and now and not same_data(stored, now):
        return [f"{what} was trained on {describe(stored)}; it continues on {describe(now)} (dataset= given)"]
    return []
