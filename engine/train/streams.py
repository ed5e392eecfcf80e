"""`TrainingStreams`: a run's own copy of torch's global random streams (the CPU stream and, on a GPU, that device's),
which a `Trainer` swaps in around each step and out after it. What a step draws (sampled orbits, Monte-Carlo
likelihoods) then depends on the run alone, not on evaluations, views or other code drawing in between, and a
checkpoint that keeps `state` makes a resumed run draw exactly what the run never stopped would have."""
from __future__ import annotations

import contextlib

import torch


def global_streams(device: torch.device) -> dict[str, torch.Tensor]:
    """Torch's global random states now: {"cpu": ...} and, on a CUDA `device`, {"cuda": ...} (byte tensors)."""
    streams = {"cpu": torch.get_rng_state()}
    if device.type == "cuda":
        streams["cuda"] = torch.cuda.get_rng_state(device)
    return streams


def set_global_streams(streams: dict[str, torch.Tensor], device: torch.device) -> None:
    """Put `streams` (as `global_streams` returns them) back as torch's global random states."""
    torch.set_rng_state(streams["cpu"])
    if device.type == "cuda" and "cuda" in streams:
        torch.cuda.set_rng_state(streams["cuda"], device)


class TrainingStreams:
    """Training's own random streams on `device`, taken from torch's global ones when made (after the run's seed is
    set); `state` is what a checkpoint saves and `load` takes back."""

    def __init__(self, device: torch.device):
        self.device = device
        self.state: dict[str, torch.Tensor] = global_streams(device)

    @contextlib.contextmanager
    def inside(self):
        """Torch's global streams are training's inside (what a step draws), and what they were outside after."""
        outside = global_streams(self.device)
        set_global_streams(self.state, self.device)
        try:
            yield
        finally:
            self.state = global_streams(self.device)
            set_global_streams(outside, self.device)

    def load(self, saved: dict[str, torch.Tensor]) -> None:
        """Continue from a checkpoint's streams (the CPU's, and this device's where it has one of that kind)."""
        saved = {k: v.to("cpu") for k, v in (saved or {}).items()}
        self.state.update({k: v for k, v in saved.items() if k == "cpu" or self.device.type == k})


__all__ = ["TrainingStreams", "global_streams", "set_global_streams"]
