"""What one page of a served dashboard may ask of the server: sizes estimated before anything is built, and the
folders it may read.

Anyone with a link drives the server, so under `invlab serve` every run's configuration is checked before its data
or model is built: the points the data source makes, the inducing points, and a memory estimate (data, q(u) with
its optimiser state, K_uu, and one minibatch's cross-covariances over orbit samples or patches). The user's own files
and folders (`csv:`, `npz:`, `parquet:`, `images:`, `idx:` and bare paths) are read only inside the allowed
directories (the data directory and those the server was started with) — each class folder, image and IDX file a
folder makes the page read included, so a symbolic link out of them is refused — and the run store's database and
checkpoints are never read as data; a file larger than the memory a run may use is refused from its size on disk,
before it is read; the refusal of a path outside reads the same whether the
path exists or not. The person running the server sets the limits with
`invlab serve --max-points / --max-inducing / --max-memory-mb / --allow-data-dir` (environment variables
`INVLAB_MAX_POINTS`, `INVLAB_MAX_INDUCING`, `INVLAB_MAX_MEMORY_MB`, `INVLAB_DATA_DIRS`). The CLI's `train` and a
notebook's Explorer have no limits.

The Dask scheduler the Compare page's runs go to is the server's too: `invlab serve --scheduler ADDRESS`
(`INVLAB_SCHEDULER`; without it, the server's own cluster), and a page may name another only where the server was
started with `--allow-page-scheduler` (`INVLAB_PAGE_SCHEDULER=1`, refused with logins) or its user is an admin
(dashboard/compare/scheduler_choice.py says why).
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

from invlab.data.raw import DataSize
from invlab.data.reads import first_refused, real_path
from invlab.data.sources import file_path, size_of
from invlab.errors import InvlabError
from invlab.models import get_model
from invlab.models.memory import ModelSizes
from invlab.train import RunConfig

DEFAULT_MAX_POINTS = 100_000  # training + test points a source may make (all of MNIST fits)
DEFAULT_MAX_INDUCING = 2_000
DEFAULT_MAX_MEMORY_MB = 2_048

BYTES = 8  # float64
STORE_FILE, CHECKPOINTS = "runs.sqlite", "checkpoints"  # the run store's parts in the data directory (engine.train)
# What a data set whose entry says nothing of its size is taken to hold (a file's is only known once it is read):
# MNIST's 70,000 images of 784 numbers in 10 classes, so an unknown source is estimated large, never small.
SIZE_GUESS = DataSize(points=70_000, train=70_000, dims=784, classes=10)
SIZE_SETTINGS = ("data.dataset", "data.source_options", "data.subset", "data.classes", "model.num_inducing",
                 "model.num_inducing_rbf", "model.num_samples", "model.patch_size", "model.stride",
                 "train.batch_size")


class LimitError(InvlabError):
    """A run this server refuses to build; `keys` are the dotted settings that made it too large."""

    def __init__(self, message: str, keys: list[str]):
        super().__init__(message)
        self.keys = keys


@dataclass(frozen=True)
class SizeEstimate:
    """What a run would ask of the server: points, dimensions, classes, inducing points and estimated memory (MB),
    checked against the server's limits before anything is built."""
    points: int  # training + test points the source makes
    train_points: int  # training points the model sees (after subset)
    dims: int  # numbers per input (C·H·W for images)
    classes: int  # latent functions (1 for regression)
    inducing: int  # M asked for (the model clamps it to the training points)
    memory_mb: float


def data_size(data: dict) -> DataSize:
    """What the run's data would hold, as its data set's registry entry says (`invlab.data.sources.size_of`), with
    the classes kept, odd/even labels and the training subset applied; `SIZE_GUESS` where the entry says nothing."""
    name = data.get("dataset", "digits")
    size = size_of(name, dict(data.get("source_options") or {}), data.get("test_fraction", 0.25)) or SIZE_GUESS
    classes = len(data["classes"]) if data.get("classes") else size.classes
    train = min(size.train, int(data["subset"])) if data.get("subset") else size.train
    return DataSize(size.points, train, size.dims, 2 if data.get("odd_even") else classes)


def estimate(config: RunConfig) -> SizeEstimate:
    """The run's sizes and memory, from its configuration alone (nothing is read or built)."""
    size = data_size(config.data)
    points, n_train, dims, classes = size.points, size.train, size.dims, size.classes
    mc = config.model_config or {}
    asked = int(mc.get("num_inducing", 0) or 0) + int(mc.get("num_inducing_rbf", 0) or 0)
    M = min(asked, max(n_train, 1))
    batch = int((config.train or {}).get("batch_size", 256) or n_train)
    sizes = ModelSizes(train_points=n_train, dims=dims, classes=classes, inducing=M, batch=batch)
    # the source's arrays, the standardised copy and the tensors, plus what the family's entry says its model holds
    numbers = 3 * points * dims + get_model(config.model).memory(mc, sizes)
    return SizeEstimate(points, n_train, dims, classes, asked, numbers * BYTES / 2**20)


@dataclass(frozen=True)
class ServerLimits:
    """What a served page may ask of the server (sizes, folders), and who among its logged-in users is an admin."""

    max_points: int = DEFAULT_MAX_POINTS
    max_inducing: int = DEFAULT_MAX_INDUCING
    max_memory_mb: float = DEFAULT_MAX_MEMORY_MB
    data_dirs: tuple[str, ...] = ()  # folders an `idx:` dataset may be inside
    admins: tuple[str, ...] = ()  # logged-in users who see every user's runs and sweeps (`invlab serve --admin`)
    scheduler: str = ""  # the Dask scheduler every page's runs go to (`invlab serve --scheduler`); "": the server's own
    page_scheduler: bool = False  # a page without logins may name a scheduler (`invlab serve --allow-page-scheduler`)

    @classmethod
    def from_env(cls, environ=None) -> "ServerLimits":
        """The limits `invlab serve` was started with (its flags arrive as environment variables)."""
        env = os.environ if environ is None else environ

        def number(var, default, kind=int):
            raw = env.get(var)
            if raw in (None, ""):
                return default
            try:
                value = kind(raw)
            except ValueError:
                raise InvlabError(f"{var}={raw!r} is not a number") from None
            if not math.isfinite(value) or value < 1:  # nan compares false and inf passes: either means no limit
                raise InvlabError(f"{var} must be a finite number, at least 1, got {raw!r}")
            return value

        from invlab.settings import data_dir

        dirs = [str(data_dir())] + [d for d in env.get("INVLAB_DATA_DIRS", "").split(os.pathsep) if d]
        try:
            admins = json.loads(env.get("INVLAB_ADMINS") or "[]")
        except ValueError:
            admins = None
        if not isinstance(admins, list) or not all(isinstance(a, str) for a in admins):
            raise InvlabError(f"INVLAB_ADMINS={env.get('INVLAB_ADMINS')!r} is not a JSON list of user names; start "
                              "the server with `invlab serve --admin USER` instead")
        return cls(number("INVLAB_MAX_POINTS", DEFAULT_MAX_POINTS),
                   number("INVLAB_MAX_INDUCING", DEFAULT_MAX_INDUCING),
                   number("INVLAB_MAX_MEMORY_MB", DEFAULT_MAX_MEMORY_MB, float), tuple(dirs), tuple(admins),
                   env.get("INVLAB_SCHEDULER", "").strip(), env.get("INVLAB_PAGE_SCHEDULER", "") == "1")

    def check_dataset(self, name: str) -> None:
        """Refuse a file or folder (csv:, npz:, parquet:, images:, idx:, a bare path) outside the allowed directories,
        or of a run store there, without looking at the path on disk; inside them, refuse a folder whose class
        folders, images or IDX files resolve elsewhere (a symbolic link out), and a file larger than a run's memory
        from its size."""
        where = file_path(name)
        if where is None:
            return
        path = real_path(where)
        if not self._inside(path):
            raise LimitError(f"data.dataset={name!r} refused: this server reads files and folders only inside the "
                             "data directories it was started with (the person running it can add one with "
                             "`invlab serve --allow-data-dir DIR`); choose a bundled dataset or a file inside them",
                             ["data.dataset"])
        if self._of_run_store(path):
            raise LimitError(f"data.dataset={name!r} refused: it is part of this server's run store (its database or "
                             "its checkpoints), which a page never reads as data; choose a data file or folder",
                             ["data.dataset"])
        entry = first_refused(name, self.readable)
        if entry is not None:
            raise LimitError(f"data.dataset={name!r} refused: {entry!r} resolves outside the folders this server "
                             "allows (or into its run store), and a link out of them is not followed; copy the files "
                             "into an allowed folder, or choose a bundled dataset", ["data.dataset"])
        size = os.path.getsize(path) if os.path.isfile(path) else 0
        if size > self.max_memory_mb * 2**20:
            raise LimitError(f"data.dataset={name!r} refused: the file is {size / 2**20:,.0f} MB, more than the "
                             f"{self.max_memory_mb:,.0f} MB this server allows a run (the person running it sets "
                             "that with `invlab serve --max-memory-mb`); use a smaller file or a sample of it",
                             ["data.dataset"])

    def readable(self, real: str) -> bool:
        """Whether a page may read the file or folder at real path `real` (links followed): inside an allowed
        directory, and no part of a run store there."""
        return self._inside(real) and not self._of_run_store(real)

    def _inside(self, real: str) -> bool:
        return any(_within(real_path(allowed), real) for allowed in self.data_dirs)

    def _of_run_store(self, real: str) -> bool:
        """A run store's database (`runs.sqlite` with its journal files) or anything in an allowed directory's
        `checkpoints` folder: other users' runs, never data."""
        return os.path.basename(real).startswith(STORE_FILE) or any(
            _within(os.path.join(real_path(allowed), CHECKPOINTS), real) for allowed in self.data_dirs)

    def check(self, config: RunConfig) -> SizeEstimate:
        """The run's estimate, or a LimitError naming the limit, the estimate and the settings to lower."""
        self.check_dataset(config.data.get("dataset", "digits"))
        size = estimate(config)
        flags = "(the person running the server sets it with `invlab serve --{}`)"
        changed = [k for k in SIZE_SETTINGS if _given(config, k)]
        if size.points > self.max_points:
            raise LimitError(f"this data set would have {size.points:,} points; this server allows at most "
                             f"{self.max_points:,} per run {flags.format('max-points')}: lower num_train / "
                             "num_test in data.source_options", [k for k in changed if k.startswith("data.")]
                             or ["data.dataset"])
        if size.inducing > self.max_inducing:
            raise LimitError(f"{size.inducing:,} inducing points asked for; this server allows at most "
                             f"{self.max_inducing:,} {flags.format('max-inducing')}: lower model.num_inducing",
                             [k for k in changed if k.startswith("model.num_inducing")] or ["model.num_inducing"])
        if size.memory_mb > self.max_memory_mb:
            raise LimitError(f"this run would need about {size.memory_mb:,.0f} MB ({size.points:,} points of "
                             f"{size.dims} numbers, {min(size.inducing, size.train_points):,} inducing points × "
                             f"{size.classes} classes); this "
                             f"server allows {self.max_memory_mb:,.0f} MB per run {flags.format('max-memory-mb')}: "
                             "lower the inducing points, the batch size or the data size", changed)
        return size


def _within(root: str, path: str) -> bool:
    return os.path.commonpath([root, path]) == root


def _given(config: RunConfig, dotted: str) -> bool:
    section, _, name = dotted.partition(".")
    values = {"data": config.data, "model": config.model_config, "train": config.train}[section] or {}
    return name in values
