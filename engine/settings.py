"""Process-wide defaults: data directory, device, dtype and jitter, and the CPU allocator setting for training.

A run's jitter is a training setting (`TrainConfig.jitter`, set on the model by the trainer); `default_jitter()`
is what a model built without one uses.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import sys
import threading
from pathlib import Path

import torch

from .errors import ConfigError

DEFAULT_JITTER = 1e-6
MAX_JITTER = 1e-1  # escalation stops here; beyond it the matrix is not "nearly" PSD any more


def data_dir(create: bool = True) -> Path:
    """Where datasets, the run store and checkpoints live: `$INVLAB_DATA`, default `~/.cache/invlab`.

    Created when missing (unless `create` is False: commands that only read never make it, so a mistyped path is
    not silently created); a path that is a file or cannot be created is a `ConfigError` saying what to set.
    """
    given = os.environ.get("INVLAB_DATA")
    path = Path(given or Path.home() / ".cache" / "invlab").expanduser()
    where = f"INVLAB_DATA={given}" if given else f"the data directory {path}"
    fix = ("set INVLAB_DATA to a directory you can write (e.g. export INVLAB_DATA=~/invlab-data)" if given else
           "move it aside or set INVLAB_DATA to a directory you can write")
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{where} is not a directory (it is a file); {fix}")
    if not create:
        return path
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(f"{where} cannot be created ({err.strerror or err}); {fix}") from None
    return path


def default_jitter() -> float:
    """The jitter added to K_uu before its Cholesky factorisation when a model is given none."""
    return DEFAULT_JITTER


# glibc returns freed blocks above its mmap threshold (which adapts, up to 32 MB) to the operating system at
# once and trims free memory at the heap's top, so a training step whose tensors are tens of MB acquires and
# zeroes the same memory again every step (page faults). Keeping freed blocks up to this size for reuse
# made the invariant model's step at S = 32 about 30 % faster (benchmarks/invariant/README.md, section 4).
KEEP_FREED_CPU_BYTES = 1 << 30
_GLIBC_MALLOC_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt parameters (malloc.h)
_malloc_state = {"kept": None}


def keep_freed_cpu_memory() -> bool:
    """Let freed CPU tensors up to 1 GiB stay in the process heap for reuse (Linux with glibc; once per process).

    The trainer calls this for CPU runs. The price is a higher resident size (about 12 % in the invariant
    benchmark). `INVLAB_KEEP_FREED_CPU_MEMORY=0` in the environment turns it off, and it is left alone
    where the user has tuned glibc's allocator (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_,
    MALLOC_TOP_PAD_ or malloc entries of GLIBC_TUNABLES). Returns whether the setting is in force.
    """
    if _malloc_state["kept"] is None:
        _malloc_state["kept"] = _apply_keep_freed()
    return _malloc_state["kept"]


def _apply_keep_freed() -> bool:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    if os.environ.get("INVLAB_KEEP_FREED_CPU_MEMORY", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    tuned = [v for v in _GLIBC_MALLOC_VARIABLES if v in os.environ and not _dask_default(v)]
    if tuned or "malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, KEEP_FREED_CPU_BYTES)) and bool(mallopt(_M_TRIM_THRESHOLD,
                                                                                   KEEP_FREED_CPU_BYTES))


_M_ARENA_MAX = -8  # mallopt parameter (malloc.h)


def one_malloc_arena() -> bool:
    """Let threads started from now on allocate from glibc's main arena (Linux with glibc; `mallopt(M_ARENA_MAX, 1)`).

    A thread other than the first gets an arena of its own, whose heaps give freed tensor memory back and fault it
    in again: a dashboard page's training thread took a quarter more time per step than the same training in the
    main thread (benchmarks/dashboard/README.md). Called before a training thread starts; left alone where the user
    tuned glibc's allocator (`MALLOC_ARENA_MAX`, malloc entries of `GLIBC_TUNABLES`) or turned
    `INVLAB_KEEP_FREED_CPU_MEMORY` off. Returns whether the setting was applied."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc" or "MALLOC_ARENA_MAX" in os.environ:
        return False
    if os.environ.get("INVLAB_KEEP_FREED_CPU_MEMORY", "1").strip().lower() in ("0", "false", "no", "off") \
            or "malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_ARENA_MAX, 1))


def _dask_default(variable: str) -> bool:
    """A Dask worker's own setting (its nanny exports MALLOC_TRIM_THRESHOLD_=65536 into every worker it starts, to
    hand memory back to the OS eagerly), not the user's: training overrides it like glibc's default, or each step's
    large tensors are page-faulted in again (sweep runs took twice the CPU time on workers)."""
    if variable != "MALLOC_TRIM_THRESHOLD_" or "distributed" not in sys.modules:
        return False
    try:
        import dask

        default = dask.config.get("distributed.nanny.pre-spawn-environ", {}).get(variable)
    except Exception:  # an unusual dask configuration: treat the variable as the user's
        return False
    return default is not None and os.environ.get(variable) == str(default)


def resolve_device(name: str = "auto") -> torch.device:
    """`auto` picks CUDA when available, else CPU; `cpu` / `cuda` / `cuda:1` force a device."""
    if name in (None, "", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device={name!r} was requested but CUDA is not available here; use device='cpu' or 'auto'.")
    return device


def resolve_dtype(name: str = "auto", device: torch.device | None = None) -> torch.dtype:
    """`auto` is float64 on CPU (exactness first) and float32 on GPU (speed); `float32` / `float64` force one."""
    if name in (None, "", "auto"):
        return torch.float32 if device is not None and device.type == "cuda" else torch.float64
    table = {"float32": torch.float32, "float64": torch.float64}
    if name not in table:
        raise ConfigError(f"dtype={name!r} is not supported; choose 'auto', 'float32' or 'float64'.")
    return table[name]


# torch's global random stream is the process's, not a thread's: on a served dashboard several pages' threads
# (training, evaluation, the prior page's draws) seed it and draw from it. One seeded block runs at a time.
_SEEDED_BLOCK = threading.RLock()


@contextlib.contextmanager
def seeded(seed: int, device: torch.device | str = "cpu"):
    """Draws from torch's global random stream (CPU and, on a GPU, that device's) start from `seed` inside, and the
    stream is restored after: a whole-data estimate gives the same number twice without moving training's stream.

    Blocks in different threads take turns (a process-wide lock), so that one thread's block never draws numbers
    another thread's seed started; a thread drawing from the global stream outside any block still shares it."""
    device = torch.device(device)
    with _SEEDED_BLOCK, torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(int(seed))
        yield
