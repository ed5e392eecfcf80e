"""Checkpoints: a model's state dict, its optimiser state, the step, the RNG state and the run config JSON.

Written atomically (temporary file, then rename) so a crash never leaves half a checkpoint, and read
with `weights_only=True`, so loading a checkpoint can never execute code.
"""
from __future__ import annotations

import os
from pathlib import Path

import torch

from ..errors import InvlabError


class CheckpointError(InvlabError):
    pass


CHECKPOINT_KEYS = ("model", "optimizer", "step", "config", "rng")  # what `save_checkpoint` writes


def save_checkpoint(path: str | Path, *, model_state: dict, optimizer_state: dict, step: int, config_json: str,
                    rng_state: torch.Tensor) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save({"model": model_state, "optimizer": optimizer_state, "step": int(step), "config": config_json,
                "rng": rng_state, "format": 1}, tmp)
    os.replace(tmp, path)
    return path


def load_checkpoint(path: str | Path, map_location=None) -> dict:
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"checkpoint {path} does not exist")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as err:  # torch raises several types for truncated or foreign files
        if "GLOBAL" in str(err):  # torch's advice here (load it unsafely) is not ours to repeat
            raise CheckpointError(f"checkpoint {path} holds Python objects besides tensors, so it is not loaded "
                                  "(loading them could run code); it was not written by Invariance Lab or was "
                                  "changed since — use another checkpoint of the run") from None
        reason = next((line.strip() for line in str(err).splitlines()[1:] if line.strip()
                       and "weights_only" not in line and "torch.load" not in line), "") if "Weights only" in str(err) \
            else (str(err).strip().splitlines() or [""])[0]
        raise CheckpointError(f"checkpoint {path} cannot be read ({type(err).__name__}: {reason}); it may be "
                              "truncated or not a checkpoint of this program") from None
    if not isinstance(payload, dict) or payload.get("format") != 1:
        raise CheckpointError(f"{path} is not an Invariance Lab checkpoint")
    missing = [key for key in CHECKPOINT_KEYS if key not in payload]
    if missing:
        raise CheckpointError(f"checkpoint {path} lacks {', '.join(missing)} (it was cut short or edited); it cannot "
                              "be resumed from — use another checkpoint of the run")
    return payload
