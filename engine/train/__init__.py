"""Training: the Trainer loop, its configuration, health verdicts, the SQLite run store, checkpoints, and `watch` for
a loop you wrote."""
from .checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from .config import RunConfig, TrainConfig, apply_values, config_values
from .health import Health, assess
from .opening import OpenedRun, open_run
from .resume import FIXED_ON_RESUME, ResumePlan, plan_resume, restart_config
from .store import RunRecord, RunStore, RunStoreError, SweepRecord
from .trainer import Snapshot, StepResult, Trainer
from .watch import WatchedRun, WatchWarning, watch  # noqa: E402 — after .store: it writes runs there

__all__ = ["Trainer", "Snapshot", "StepResult", "Health", "assess", "RunConfig", "TrainConfig", "RunStore", "RunRecord",
           "RunStoreError", "SweepRecord", "CheckpointError", "load_checkpoint", "save_checkpoint", "apply_values",
           "config_values", "watch", "WatchedRun", "WatchWarning", "FIXED_ON_RESUME", "ResumePlan", "plan_resume",
           "restart_config", "open_run", "OpenedRun"]
