"""Checkpoints: a model's state dict, its optimiser state, the step, the run config JSON, and everything random.

"Everything random" is what makes a resumed run the run that was never stopped: the trainer's generator (minibatch
permutations), torch's global CPU stream and, on a GPU, that device's stream (the sampled orbits and Monte-Carlo
likelihoods draw from these), and where the trainer is in the current epoch (the permutation and the position in
it). Random states are stored as tensors, so the file still loads with `weights_only=True`.

Written atomically (temporary file, then rename) so a crash never leaves half a checkpoint, and read with
`weights_only=True`, so loading a checkpoint can never execute code. Format 1 (before the random streams and the
epoch position were kept) still loads; a run resumed from one continues correctly but not bit for bit.
"""
from __future__ import annotations

import os
from pathlib import Path

import torch

from ..errors import InvlabError

FORMAT = 2
READABLE_FORMATS = (1, 2)
REQUIRED_KEYS = ("model", "optimizer", "step", "config", "rng")


class CheckpointError(InvlabError):
    pass


def save_checkpoint(path: str | Path, *, model_state: dict, optimizer_state: dict, step: int, config_json: str,
                    rng_state: torch.Tensor, streams: dict[str, torch.Tensor] | None = None,
                    order: torch.Tensor | None = None, cursor: int = 0) -> Path:
    """`rng_state`: the trainer's generator; `streams`: torch's global random states by name ("cpu", "cuda:0");
    `order` and `cursor`: the current epoch's permutation of the training set and how far the trainer is in it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    payload = {"model": model_state, "optimizer": optimizer_state, "step": int(step), "config": config_json,
               "rng": rng_state, "format": FORMAT, "streams": dict(streams or {}),
               "order": (torch.empty(0, dtype=torch.long) if order is None else order.detach().to("cpu")),
               "cursor": int(cursor)}
    torch.save(payload, tmp)
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
    if not isinstance(payload, dict) or payload.get("format") not in READABLE_FORMATS:
        raise CheckpointError(f"{path} is not an Invariance Lab checkpoint")
    missing = [key for key in REQUIRED_KEYS if key not in payload]
    if missing:
        raise CheckpointError(f"checkpoint {path} lacks {', '.join(missing)} (it was cut short or edited); it cannot "
                              "be resumed from — use another checkpoint of the run")
    payload.setdefault("streams", {})
    payload.setdefault("order", torch.empty(0, dtype=torch.long))
    payload.setdefault("cursor", 0)
    return payload
