"""The changes a page (or a notebook cell) makes to a running trainer, as values: `SetLearningRate`, `SetValue`,
`Freeze` and `SetTrainSetting`. Each is put on the trainer's one queue (`trainer.edits.put(edit)`, see `live`) and
applied by the training thread between two steps, never in the middle of one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# train settings a running trainer follows from its next step on; the others shape the model, its data or its
# random streams, so a new run (Reset) takes them
LIVE_TRAIN_SETTINGS = ("steps", "eval_every", "log_every", "checkpoint_every", "checkpoint_seconds",
                       "keep_checkpoints", "flush_every")


@dataclass(frozen=True)
class SetLearningRate:
    """Set the learning rate to `lr`: the optimiser takes it at once (scaled by the schedule's current factor) and the
    schedule's base follows."""
    lr: float

    def train_setting(self) -> tuple[str, Any]:
        """The run configuration's train entry this edit changes too."""
        return "learning_rate", self.lr


@dataclass(frozen=True)
class SetValue:
    """Set the learnable named `name` (e.g. "kernel.lengthscale") to `value`, in its own units."""
    name: str
    value: Any

    def train_setting(self) -> None:
        """A model's value, not a train entry."""
        return None


@dataclass(frozen=True)
class Freeze:
    """Freeze (or, with `frozen=False`, free) the learnable named `name`."""
    name: str
    frozen: bool = True

    def train_setting(self) -> None:
        """A model's value, not a train entry."""
        return None


@dataclass(frozen=True)
class SetTrainSetting:
    """Set the train setting `name` (one of `LIVE_TRAIN_SETTINGS`, e.g. steps or eval_every) to `value`."""
    name: str
    value: Any

    def train_setting(self) -> tuple[str, Any]:
        """The run configuration's train entry this edit changes too."""
        return self.name, self.value


Edit = SetLearningRate | SetValue | Freeze | SetTrainSetting

__all__ = ["LIVE_TRAIN_SETTINGS", "Edit", "Freeze", "SetLearningRate", "SetTrainSetting", "SetValue"]
