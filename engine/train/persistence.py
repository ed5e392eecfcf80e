"""A `Trainer`'s persistence: run status and metrics in the run store, checkpoints written and pruned, and training
continued from a checkpoint (`from_checkpoint`) or a stored run (`resume`).

A run knows its data: the run's stored config and every checkpoint carry the data's identity (`invlab.data.identity`:
source, options, shapes, content hash, a file's path and modification time). Resuming or reloading onto other data
is refused with a message naming both; an explicit `dataset=` with the same shapes is accepted, and the run's config
then records that data's identity.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import torch

from ..data.identity import describe, identity, refuse_other_data, same_data, same_shapes
from ..errors import ConfigError, DataError
from .checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from .config import RunConfig
from .states import RunStatus
from .store import RunStore, StoreLocked

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


_VARIANTS = ("rotate", "odd_even", "classes", "subset", "test_subset", "test_fraction", "seed")


class TrainerPersistence:
    """The `Trainer`'s run-store and checkpoint methods (mixed into `Trainer`)."""

    def claim(self) -> None:
        """Take (or renew) this trainer's lease on its stored run: one transaction that marks it `running` with this
        process as its writer. Raises `RunStoreError` naming the other process when another writer holds the run or
        took it since this trainer last trained. Nothing to do without a store."""
        if self.store is None or self.run_id is None:
            return
        try:
            self.lease = self.store.claim_run(self.run_id, self.lease, wait=not self._created_run)
        except StoreLocked:
            if not self._created_run:
                raise
            # a run this trainer created (no other process has trained it): training goes on while another program
            # holds the store locked, and its `running` mark waits in the queue with its metrics

    def release(self, status: str = RunStatus.PAUSED) -> None:
        """Give the stored run back without training it further (a resumed trainer that will not run, say in a
        notebook): it is marked `status` and another trainer or process may claim it. Nothing to do without a
        store or a claim."""
        if self.store is not None and self.run_id is not None and self.lease is not None:
            self.store.release_run(self.run_id, self.lease, status, None)
            self.lease = None

    def abandon(self, why: str) -> bool:
        """Mark the run this trainer created `interrupted` if it never trained a step (still `created` in the store),
        with `why` and how to train its settings again; whether it did. A run it continues or opened, or one claimed
        since, is left as it is. What a page does with the run it built when it closes or builds another."""
        if self.store is None or self.run_id is None or not self._created_run or self.status != RunStatus.CREATED:
            return False
        done = self.store.abandon_run(self.run_id, f"{why}; train these settings as a new run with: invlab train "
                                                   f"--resume {self.run_id} --restart")
        if done:
            self.status = RunStatus.INTERRUPTED
        return done

    def _set_status(self, status: str, message: str | None = None) -> None:
        self.status = status
        if self.store is not None:
            summary = {"test_error": self.last_metrics.get("test_error"),
                       "test_rmse": self.last_metrics.get("test_rmse"),
                       "test_nlpd": self.last_metrics.get("test_nlpd"), "elbo": self.last_parts.get("elbo"),
                       "full_elbo": None if self.final_elbo is None else self.final_elbo["elbo"]}
            self.store.update_run(self.run_id, status=status, step=self.step_count, message=message,
                                  **{k: v for k, v in summary.items() if v is not None})
            self.store.flush()

    def _flush(self) -> None:
        elbo = self.last_parts.get("elbo")
        self.store.update_run(self.run_id, step=self.step_count, **({} if elbo is None else {"elbo": elbo}))
        self.store.flush()
        self._last_beat = self._now()

    def save_checkpoint(self, path: str | Path | None = None) -> Path:
        """Save the state a resume needs (model, optimiser, step, every random stream, the epoch's order); without a
        path, into the run store's directory, keeping the newest `keep_checkpoints`."""
        with self.lock:
            if self._torn:
                raise CheckpointError("a step was cut off midway, so the model may be half-updated; no checkpoint was "
                                      "written (the run can resume from its previous checkpoint)")
            if path is None:
                if self.store is None:
                    raise ConfigError("save_checkpoint needs a path when the trainer has no run store")
                path = self.store.checkpoint_dir(self.run_id) / f"step_{self.step_count:08d}.pt"
            t0 = self._now()
            path = save_checkpoint(path, model_state=self.model.state_dict(),
                                   optimizer_state=self.optimizer.state_dict(),
                                   step=self.step_count, config_json=self.config.to_json(),
                                   rng_state=self.generator.get_state(), streams=self.streams.state,
                                   order=self._order, cursor=self._cursor)
            if self.store is not None:
                self.store.add_checkpoint(self.run_id, self.step_count, path)
                self._flush()
                self._prune_checkpoints()
            now = self._now()
            if self.tc.checkpoint_seconds:
                self._next_checkpoint = now + max(self.tc.checkpoint_seconds, (now - t0) / CHECKPOINT_SHARE)
            return path

    def _prune_checkpoints(self) -> None:
        """Remove this run's checkpoints in the store's directory beyond the newest `keep_checkpoints`."""
        keep = self.tc.keep_checkpoints
        if not keep:
            return
        own = self.store.checkpoint_dir(self.run_id).resolve()
        seen: list[Path] = []
        for step, path in self.store.checkpoints(self.run_id):
            resolved = path.resolve()
            if resolved in seen:
                continue
            seen.append(resolved)
            if len(seen) > keep and resolved.parent == own:
                self.store.forget_checkpoint(self.run_id, step, path)

    def load_state(self, payload: dict) -> None:
        """Continue from a checkpoint's state (see `save_checkpoint`). The learning rate is the configured one at
        the checkpoint's step of the schedule (a resume may have changed it)."""
        with self.lock:
            self.model.load_state_dict(payload["model"])
            self.optimizer.load_state_dict(payload["optimizer"])
            self.step_count = int(payload["step"])
            self.generator.set_state(payload["rng"].to("cpu"))
            self.streams.load(payload.get("streams"))
            order = payload.get("order")
            self._order = torch.empty(0, dtype=torch.long) if order is None else order.to("cpu", torch.long)
            self._cursor = int(payload.get("cursor", 0))
            self.scheduler.last_epoch = self.step_count
            lr = self.tc.learning_rate
            self.scheduler.base_lrs = [lr for _ in self.optimizer.param_groups]
            for group in self.optimizer.param_groups:
                group["initial_lr"] = lr
                group["lr"] = lr * self._lr_factor(self.step_count)
            self._torn = False
            self._good = self._capture()

    @classmethod
    def from_checkpoint(cls, path: str | Path, **kwargs) -> "Trainer":  # noqa: F821
        """A trainer continuing from the checkpoint at `path`, on the data it was trained on (reloaded from its source
        and checked against the recorded identity), or on `dataset=` if given (same shapes; recorded)."""
        payload = load_checkpoint(path, map_location="cpu")
        config = RunConfig.from_json(payload["config"])
        trainer = cls(config, **kwargs)
        trainer.resume_notes = _other_data_note(config.data_identity, trainer.config.data_identity, "the checkpoint")
        trainer.load_state(payload)
        return trainer

    @classmethod
    def resume(cls, store: RunStore, run_id: int, dataset=None, train: dict | None = None) -> "Trainer":  # noqa: F821
        """Continue a stored run from its newest checkpoint that loads; metrics logged after it are dropped.

        `train`: training settings to change from here on (steps, learning rate, schedule, intervals ...); the
        stored config records them. Checkpoints that are missing or unreadable are skipped and listed in
        `resume_notes`. Without any usable checkpoint this raises `CheckpointError` and nothing stored changes. The
        run's data is reloaded and must be what it was trained on (a `DataError` names both otherwise); `dataset=`
        with the same shapes is accepted and recorded."""
        record = store.get_run(run_id)
        lease = store.claim_run(run_id)  # one transaction: a second `resume` of the run is refused here
        try:
            trainer = cls._resumed(store, run_id, record, dataset, train)
        except BaseException:
            store.release_run(run_id, lease, record.status, record.message)  # as it was: nothing trained
            raise
        trainer.lease = lease
        return trainer

    @classmethod
    def _resumed(cls, store: RunStore, run_id: int, record, dataset, train: dict | None) -> "Trainer":  # noqa: F821
        """The trainer `resume` builds once it holds the run's lease."""
        config = RunConfig.from_json(record.config)
        if train:
            config = dataclasses.replace(config, train={**config.train, **train})
        trainer = cls(config, store=store, run_id=run_id, dataset=dataset)
        notes = []
        for step, path in store.checkpoints(run_id):
            try:
                trainer.load_state(load_checkpoint(path, map_location="cpu"))
                break
            except (CheckpointError, RuntimeError, KeyError, ValueError, TypeError) as err:
                notes.append(f"the checkpoint at step {step} was skipped: {str(err).splitlines()[0]}")
        else:
            kept = sum(len(steps) for steps, _ in store.metrics(run_id).values())
            found = "; ".join(notes) if notes else "none was written"
            raise CheckpointError(f"run {run_id} has no usable checkpoint to resume from ({found}). Nothing was "
                                  f"changed: its {kept} stored metric values, its status ({record.status}) and its "
                                  f"step ({record.step}) are as they were.")
        trainer.resume_notes = notes + _other_data_note(config.data_identity, trainer.config.data_identity,
                                                        f"run {run_id}")
        if trainer.config.to_json() != record.config:  # training changes, or the data's identity recorded
            store.update_run(run_id, config=trainer.config.to_json())
        store.truncate(run_id, trainer.step_count)
        for name, (steps, values) in store.metrics(run_id).items():
            trainer.history[name] = (list(steps), list(values))
        return trainer


def _other_data_note(stored: dict | None, now: dict | None, what: str) -> list[str]:
    """The note for a run continued on other data of the same shapes (an explicit dataset=)."""
    if stored and now and not same_data(stored, now):
        return [f"{what} was trained on {describe(stored)}; it continues on {describe(now)} (dataset= given)"]
    return []
