"""Process-wide defaults: data directory, device, dtype and jitter.

Numerical knobs are settings rather than arguments threaded through every call (as in GPyTorch);
`jitter(value)` is a context manager for code that wants a different value temporarily.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

import torch

DEFAULT_JITTER = 1e-6
MAX_JITTER = 1e-1  # escalation stops here; beyond it the matrix is not "nearly" PSD any more

_state = {"jitter": DEFAULT_JITTER}


def data_dir() -> Path:
    """Where datasets, the run store and checkpoints live: `$INVLAB_DATA`, default `~/.cache/invlab`."""
    path = Path(os.environ.get("INVLAB_DATA", Path.home() / ".cache" / "invlab")).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


def default_jitter() -> float:
    return _state["jitter"]


@contextlib.contextmanager
def jitter(value: float):
    """Temporarily change the default jitter added to K_uu before its Cholesky factorisation."""
    old = _state["jitter"]
    _state["jitter"] = float(value)
    try:
        yield
    finally:
        _state["jitter"] = old


def resolve_device(name: str = "auto") -> torch.device:
    """`auto` picks CUDA when available, else CPU; `cpu` / `cuda` / `cuda:1` force a device."""
    if name in (None, "", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        from .errors import ConfigError

        raise ConfigError(f"device={name!r} was requested but CUDA is not available here; use device='cpu' or 'auto'.")
    return device


def resolve_dtype(name: str = "auto", device: torch.device | None = None) -> torch.dtype:
    """`auto` is float64 on CPU (exactness first) and float32 on GPU (speed); `float32` / `float64` force one."""
    if name in (None, "", "auto"):
        return torch.float32 if device is not None and device.type == "cuda" else torch.float64
    table = {"float32": torch.float32, "float64": torch.float64}
    if name not in table:
        from .errors import ConfigError

        raise ConfigError(f"dtype={name!r} is not supported; choose 'auto', 'float32' or 'float64'.")
    return table[name]
