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

import contextlib
import os
import re
import warnings
from pathlib import Path

import torch

from ..atomic import private_temporary
from ..errors import InvlabError

FORMAT = 2
READABLE_FORMATS = (1, 2)
REQUIRED_KEYS = ("model", "optimizer", "step", "config", "rng")


class CheckpointError(InvlabError):
    """A checkpoint that cannot be written or loaded; the message names the file."""


class CheckpointWriteError(CheckpointError):
    """A checkpoint that could not be written: its folder (`folder`) was made read-only, replaced by a file or
    removed, or its disk is full (`reason` says which, in words)."""

    def __init__(self, folder: str | Path, reason: str):
        self.folder, self.reason = Path(folder), reason
        super().__init__(f"a checkpoint could not be written to {self.folder} ({reason}); make that folder writable "
                         "(or free space on its disk), then continue the run from its latest checkpoint")


def write_failure(folder: str | Path, err: BaseException) -> CheckpointWriteError:
    """The `CheckpointWriteError` for writing into `folder` failing with `err` (an OSError, or torch's RuntimeError
    from its file writer, whose text carries the errno)."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        return CheckpointWriteError(folder, "it is a file, not a folder")
    if not folder.exists():
        return CheckpointWriteError(folder, "the folder is gone")
    if isinstance(err, OSError) and err.errno:
        return CheckpointWriteError(folder, err.strerror or str(err))
    text = str(err)
    errno = re.search(r"errno (\d+)", text)
    if errno:
        return CheckpointWriteError(folder, os.strerror(int(errno.group(1))))
    if "write failed" in text or "unexpected pos" in text:  # torch's words for a write cut short
        return CheckpointWriteError(folder, "the write was cut short; is its disk full?")
    first = re.sub(r"^\[enforce fail at [^\]]*\]\s*\.?\s*", "", (text.strip().splitlines() or [""])[0])
    return CheckpointWriteError(folder, first or type(err).__name__)


def save_checkpoint(path: str | Path, *, model_state: dict, optimizer_state: dict, step: int, config_json: str,
                    rng_state: torch.Tensor, streams: dict[str, torch.Tensor] | None = None,
                    order: torch.Tensor | None = None, cursor: int = 0) -> Path:
    """`rng_state`: the trainer's generator; `streams`: torch's global random states by name ("cpu", "cuda:0");
    `order` and `cursor`: the current epoch's permutation of the training set and how far the trainer is in it.
    A folder that cannot take the file raises `CheckpointWriteError` (and no file is left behind)."""
    path = Path(path)
    tmp = private_temporary(path)
    payload = {"model": model_state, "optimizer": optimizer_state, "step": int(step), "config": config_json,
               "rng": rng_state, "format": FORMAT, "streams": dict(streams or {}),
               "order": (torch.empty(0, dtype=torch.long) if order is None else order.detach().to("cpu")),
               "cursor": int(cursor)}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(payload, tmp)
        os.replace(tmp, path)
    except (OSError, RuntimeError) as err:  # torch's file writer raises RuntimeError for a file it cannot write
        raise write_failure(path.parent, err) from None
    finally:
        with contextlib.suppress(OSError):  # a folder replaced by a file has no temporary file to remove
            tmp.unlink(missing_ok=True)  # a write cut short (full disk) leaves no stray file
    return path


def _check_container(path: Path) -> None:
    """Refuse, by its first bytes, a file that cannot be a checkpoint written here (torch's zip archive)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as err:
        raise CheckpointError(f"checkpoint {path} cannot be read ({err.strerror or err})") from None
    if not head:
        raise CheckpointError(f"checkpoint {path} is empty (0 bytes): it was cut short while being written, e.g. by a "
                              "full disk or a crash; use another checkpoint of the run")
    if head.startswith(b"\x80"):  # a pickle's PROTO opcode: pickle.dump, or torch's pre-1.6 format
        raise CheckpointError(f"checkpoint {path} is a plain pickle file, not a checkpoint this program writes "
                              "(those are torch zip archives); it is not loaded (unpickling could run code) — use "
                              "another checkpoint of the run")
    if head.startswith(b"PK") and path.stat().st_size < 22:  # shorter than a zip's end record
        raise CheckpointError(f"checkpoint {path} is truncated ({path.stat().st_size} bytes); use another "
                              "checkpoint of the run")


def load_checkpoint(path: str | Path, map_location=None) -> dict:
    """The checkpoint at `path` as a dict (model, optimizer, step, config, rng, streams, order, cursor), loaded with
    `weights_only=True`; a CheckpointError naming the file and what to do when it is missing, empty, truncated, a
    plain pickle, holds code, or lacks a part."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"checkpoint {path} does not exist")
    _check_container(path)
    try:
        with warnings.catch_warnings():  # torch's own advice about files it did not write is not ours to print
            warnings.simplefilter("ignore")
            payload = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as err:  # torch raises several types for truncated or foreign files
        if "GLOBAL" in str(err):  # torch's advice here (load it unsafely) is not ours to repeat
            raise CheckpointError(f"checkpoint {path} holds Python objects besides tensors, so it is not loaded "
                                  "(loading them could run code); it was not written by Invariance Lab or was "
                                  "changed since — use another checkpoint of the run") from None
        if isinstance(err, EOFError) or "central directory" in str(err):  # the end of the file is missing
            raise CheckpointError(f"checkpoint {path} is truncated ({path.stat().st_size:,} bytes): it was cut short "
                                  "while being written, e.g. by a full disk or a crash; use another checkpoint of the "
                                  "run") from None
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
