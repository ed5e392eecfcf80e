"""Training: the Trainer loop, its configuration, health verdicts, the SQLite run store and checkpoints."""
from .checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from .config import RunConfig, TrainConfig, apply_values, config_values
from .health import Health, assess
from .store import RunRecord, RunStore, RunStoreError, SweepRecord
from .trainer import Snapshot, StepResult, Trainer

__all__ = ["Trainer", "Snapshot", "StepResult", "Health", "assess", "RunConfig", "TrainConfig", "RunStore", "RunRecord",
           "RunStoreError", "SweepRecord", "CheckpointError", "load_checkpoint", "save_checkpoint", "apply_values",
           "config_values"]
