"""Watch a training loop you wrote: `watch(model, name=...)` records it in the run store like any other run.

Like TensorBoard's `SummaryWriter`, but writing this lab's run store, so the run is listed by `invlab runs` under
its name and the page's Runs list opens it (its curves keep growing while the loop writes):

    with watch(model, name="my-loop", config=config, data=data) as run:
        for step in range(1, 1001):
            ...                                   # your own optimiser step
            run.log(step, loss=loss, elbo=elbo)   # numbers or one-element tensors
            if step % 100 == 0:
                run.snapshot()                    # the model's views (pictures; scalars also as metrics)

Overhead is bounded: `log` appends to the store's in-memory queue and the queue is written in one transaction at most
`FLUSHES_PER_SECOND` times a second (and when the block ends), so a killed process loses at most the last fraction
of a second. A value that is not a finite number, or not a scalar, is recorded as a gap (a missing value at that
step) with one warning per metric name; the loop goes on.

One writer per run: the watched run is claimed with the store's lease (`store.leases.claim_run`), so no other process
continues it while the loop writes, and a second `watch` of a name whose run another live process is writing is
refused with that process named; a watch nested in another of the same name in this process (a helper that watches
its own loop) records a run of its own. Leaving the block marks the run `finished`, `interrupted` when Ctrl-C (or
another interrupt) stopped it, or `failed` with the exception's message when the block raised (the exception goes
on); a stored message is cut to `MAX_MESSAGE` characters, saying so.
"""
from __future__ import annotations

import math
import numbers
import time
import warnings
from pathlib import Path

from ..errors import ConfigError
from ..ids import MAX_ID as MAX_STEP
from ..ids import shorten
from .config import RunConfig
from .runstore.connection import _writable
from .states import RunStatus
from .store import RunStore, RunStoreError

__all__ = ["watch", "WatchedRun", "WatchWarning", "FLUSHES_PER_SECOND", "MAX_MESSAGE"]

FLUSHES_PER_SECOND = 4.0  # the queue of logged values is written at most this often
RUN_FIGURES = ("elbo", "test_error", "test_rmse", "test_nlpd")  # logged names `invlab runs` shows as last values
MAX_MESSAGE = 4000  # characters of a run's message that are stored: enough to read, never megabytes in every listing
_OPEN: set[tuple[str, int]] = set()  # (store path, run id) of the watched runs this process writes now


def bounded(message: str | None, limit: int = MAX_MESSAGE) -> str | None:
    """`message` itself when at most `limit` characters, else its start with a marker saying how long it was."""
    if message is None or len(message) <= limit:
        return message
    marker = f"… (cut: {len(message):,} characters in all)"
    return message[:limit - len(marker)] + marker


class WatchWarning(UserWarning):
    """A value given to `WatchedRun.log` that cannot be recorded (not finite, not a scalar): it becomes a gap."""


def _scalar(value) -> float | None | str:
    """`value` as a float; None for a non-finite number; a string saying what it is when it is not a scalar."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, numbers.Real):
        try:
            number = float(value)
        except OverflowError:  # a whole number beyond a float's range: not a finite number
            return None
    elif hasattr(value, "numel") and hasattr(value, "detach"):  # a torch tensor
        if value.numel() != 1:
            return f"a tensor of shape {tuple(value.shape)}"
        if getattr(value, "is_meta", False):
            return "a tensor on the meta device (it holds no value)"
        try:
            number = float(value.detach())  # the one host sync a logged step costs
        except (RuntimeError, TypeError, ValueError, NotImplementedError):  # e.g. a complex tensor
            return f"a tensor of dtype {str(value.dtype).replace('torch.', '')} on {value.device}"
    elif hasattr(value, "size") and hasattr(value, "dtype") and hasattr(value, "item"):  # a numpy array or scalar
        if value.size != 1 or value.dtype.kind not in "biuf":
            return f"an array of shape {tuple(getattr(value, 'shape', ()))} and dtype {value.dtype}"
        number = float(value.item())
    else:
        return f"a {type(value).__name__}"
    return number if math.isfinite(number) else None


def _plain(value) -> str:
    """A non-finite number as a short text (nan, inf, -inf), whatever held it; a whole number too large for a float
    by its length."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        digits = len(str(abs(int(value)))) if int(value).bit_length() < 10_000 else "about " + format(
            int(int(value).bit_length() * math.log10(2)) + 1, ",")  # str() refuses ints of over 4,300 digits
        return f"a whole number of {digits} digits, too large for a float"
    try:
        return str(float(value.detach()) if hasattr(value, "detach") else float(value))
    except (TypeError, ValueError):
        return repr(value)


def _shown(value) -> str:
    """`value`'s repr, shortened; a whole number too long for repr() by its size."""
    if isinstance(value, numbers.Integral) and int(value).bit_length() >= 10_000:
        return f"a whole number of {int(value).bit_length():,} bits"
    return shorten(repr(value))


def _checked_step(step, what: str) -> int:
    """`step` as an int; a `ConfigError` naming it and the range when it is not a whole number from 0 to MAX_STEP
    (beyond it SQLite cannot store it, and the run's queued writes would fail with it)."""
    if isinstance(step, bool) or not isinstance(step, numbers.Integral) or not 0 <= int(step) <= MAX_STEP:
        kind = "" if isinstance(step, numbers.Integral) and not isinstance(step, bool) else \
            f" (a {type(step).__name__})"
        raise ConfigError(f"{what}'s step must be a whole number from 0 to {MAX_STEP} (SQLite's largest integer), "
                          f"not {_shown(step)}{kind}: give the optimiser step; nothing of this call was recorded")
    return int(step)


class WatchedRun:
    """A run of your own loop in the run store; made by `watch`, used as a context manager.

    `run_id`: its id in the store; `name`: the name it is listed under; `step`: the last step logged; `status`:
    `running` inside the block, then `finished`, `interrupted` or `failed`."""

    def __init__(self, store: RunStore, run_id: int, lease: str, name: str, model=None, data=None,
                 owns_store: bool = True):
        self.store, self.run_id, self.lease, self.name = store, run_id, lease, name
        self.model, self.data = model, data
        self.step = 0
        self.status = RunStatus.RUNNING
        self._owns_store = owns_store
        self._figures: dict[str, float] = {}
        self._warned: set[str] = set()
        self._interval = 1.0 / FLUSHES_PER_SECOND
        self._last_flush = time.monotonic()
        self._closed = False

    # -- logging ------------------------------------------------------------------------------------------------
    def log(self, step: int, **scalars) -> None:
        """Record `scalars` (name=number or one-element tensor) at `step`; written within 1/FLUSHES_PER_SECOND s.

        A non-finite or non-scalar value (a whole number too large for a float, a meta tensor) is recorded as a gap
        at that step, with one `WatchWarning` per name. A `step` that is not a whole number from 0 to 2**63 - 1 is
        refused with `ConfigError` before anything of the call is recorded."""
        if self._closed:
            raise RunStoreError(f"run {self.run_id} ({self.name!r}) is closed: log inside the `with watch(...)` block")
        step = _checked_step(step, "run.log")
        values: dict[str, float | None] = {}
        for name, value in scalars.items():
            number = _scalar(value)
            if isinstance(number, str) or number is None:
                self._warn_once(name, step, f"{number}, not a single number" if isinstance(number, str) else
                                f"{_plain(value)}, not a finite number")
                number = None
            values[name] = number
            if number is not None and name in RUN_FIGURES:
                self._figures[name] = number
        self.store.metrics.log(self.run_id, step, values)
        self.step = max(self.step, step)
        if time.monotonic() - self._last_flush >= self._interval:
            self.flush()

    def _warn_once(self, name: str, step: int, what: str) -> None:
        if name in self._warned:
            return
        self._warned.add(name)
        warnings.warn(f"run {self.run_id} ({self.name!r}): {name} at step {step} is {what}; it is recorded as a gap "
                      f"(later such values of {name} are too, without another warning)", WatchWarning, stacklevel=3)

    def flush(self) -> None:
        """Write what is queued now, with the run's step, last figures and a heartbeat (one transaction)."""
        self.store.runs.update(self.run_id, step=self.step, **self._figures)  # update_run flushes the metric queue
        self._last_flush = time.monotonic()

    # -- diagnostics ----------------------------------------------------------------------------------------------
    def snapshot(self, step: int | None = None) -> dict:
        """The model's diagnostics views now (an engine family's, or any object's `diagnostics()`), stored with the
        run as its latest views (image grids, spectra, fields, ...: what the page shows when it opens the run; each
        view's previous snapshot is replaced, not kept) and written at once. Their scalar values (`Scalars` views:
        hyper-parameters, learned ranges, ...) are also recorded as metrics named `VIEW/VALUE` at `step` (default:
        the last step logged), so they are drawn over training. Returns the views, {} without a model."""
        step = self.step if step is None else _checked_step(step, "run.snapshot")
        if self.model is None or not hasattr(self.model, "diagnostics"):
            return {}
        from ..diagnostics import Scalars

        data = None
        if self.data is not None and hasattr(self.data, "X_train"):
            import torch

            first = next(iter(self.model.parameters()), None) if hasattr(self.model, "parameters") else None
            kind = {} if first is None else {"dtype": first.dtype, "device": first.device}
            data = (torch.as_tensor(self.data.X_train, **kind), torch.as_tensor(self.data.y_train))
        try:
            views = self.model.diagnostics(data)
        except TypeError:  # a user's object whose diagnostics() takes no data
            views = self.model.diagnostics()
        views = views or {}
        scalars = {f"{key}/{name}": value for key, view in views.items() if isinstance(view, Scalars)
                   for name, value in view.values.items()}
        if scalars:
            self.log(step, **scalars)
        self.store.views.save(self.run_id, step, views)  # the latest of each view, pictures included
        self.flush()
        return views

    # -- the block ------------------------------------------------------------------------------------------------
    def close(self, status: str = RunStatus.FINISHED, message: str | None = None) -> None:
        """Mark the run `status` (with `message`), write everything queued and give the lease back."""
        if self._closed:
            return
        self._closed = True
        self.status = status
        try:
            self.store.runs.update(self.run_id, status=status, step=self.step, message=bounded(message),
                                  **self._figures)
            self.store.flush()
        finally:
            _OPEN.discard((str(self.store.path), self.run_id))
            if self._owns_store:
                self.store.close()

    def __enter__(self) -> "WatchedRun":
        return self

    def __exit__(self, kind, err, tb) -> bool:
        if err is None:
            self.close(RunStatus.FINISHED)
        elif not isinstance(err, Exception):  # Ctrl-C, SystemExit: stopped, not broken; the run can go on
            self.close(RunStatus.INTERRUPTED, f"stopped by {kind.__name__} at step {self.step}")
        else:
            text = str(err).splitlines()[0] if str(err) else ""
            self.close(RunStatus.FAILED, f"{kind.__name__}: {text}" if text else kind.__name__)
        return False  # an exception goes on to the caller

    def __repr__(self) -> str:
        return f"WatchedRun(run_id={self.run_id}, name={self.name!r}, step={self.step}, status={self.status!r})"


def _describe(model, config: RunConfig | None, data) -> tuple[str, str, str]:
    """(config JSON, model name, dataset name) stored with the run: the config's family, else the model's class name;
    without a config the stored one is the default `RunConfig` (what the page shows as the run's settings)."""
    family = config.model if config is not None else type(model).__name__ if model is not None else "-"
    dataset = getattr(data, "name", None) or (config.data.get("dataset") if config is not None else None) or "-"
    return (config or RunConfig()).to_json(), family, str(dataset)


def _gpytorch_watched(model, likelihood):
    """A GPyTorch model wrapped for `snapshot()` (`invlab.gpytorch.views.Watched`), else the model as it is."""
    import sys

    gpytorch = sys.modules.get("gpytorch")  # a GPyTorch model means GPyTorch is imported already
    if gpytorch is not None and isinstance(model, gpytorch.Module):
        from ..gpytorch.views import Watched

        return Watched(model, likelihood)
    if likelihood is not None:
        raise ConfigError("watch's likelihood= is for a GPyTorch model (its noise is shown); this model is a "
                          f"{type(model).__name__}")
    return model


def watch(model=None, *, name: str, config: RunConfig | None = None, data=None,
          data_dir: str | Path | None = None, likelihood=None) -> WatchedRun:
    """Record a loop you wrote as a run of the run store; use the result as a context manager (see the module).

    `model`: an engine model family, a GPyTorch model (`ExactGP`, `ApproximateGP`: its hyperparameters, K_uu
    spectrum and inducing inputs become views, `invlab.gpytorch.views`) or any object with `diagnostics()`, for
    `snapshot()`; `name`: what the run is listed as; `config`: the `RunConfig` it was built from, if any (stored
    with the run, so the page shows its settings); `data`: the `Dataset` it trains on (its name is stored;
    `snapshot()` hands it to the views); `data_dir`: the folder holding the store (default: the data directory,
    `$INVLAB_DATA`); `likelihood`: a GPyTorch model's likelihood, whose noise is shown too.

    Raises `ConfigError` for an empty name and `RunStoreError` when the store cannot be written (a read-only data
    directory) or another live process is writing a run of this name."""
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"watch needs a name to list the run under, e.g. watch(model, name='my-loop'); got {name!r}")
    described, model = model, _gpytorch_watched(model, likelihood)
    if config is not None and not isinstance(config, RunConfig):
        raise ConfigError(f"watch's config must be a RunConfig (or None), not the {type(config).__name__} {config!r}")
    from .. import settings

    folder = settings.data_dir(create=False) if data_dir is None else Path(data_dir).expanduser()
    path = folder / "runs.sqlite"
    if folder.is_dir() and not _writable(folder):
        raise RunStoreError(f"the data directory {folder} is read-only, so run {name!r} cannot be recorded; make it "
                            f"writable (chmod u+w {folder}) or pass data_dir= a folder you can write")
    store = RunStore(path)
    try:
        if store.read_only:
            raise RunStoreError(f"the run store {store.path} is read-only, so run {name!r} cannot be recorded; make it "
                                f"and its folder writable (chmod u+w {store.path.parent}) or pass data_dir= a folder "
                                "you can write")
        for record in store.runs.list():
            if (record.name == name and record.status == RunStatus.RUNNING
                    and (str(store.path), record.id) not in _OPEN):  # an enclosing watch here is no other writer
                holder = store.leases.live_writer(record.id)
                if holder is not None:
                    raise RunStoreError(f"run {record.id} ({name!r}) is being written by another process ({holder}); "
                                        "a run has one writer: stop that loop first, or watch under another name")
        config_json, family, dataset = _describe(described, config, data)
        run_id = store.runs.create(config_json, family, dataset, name=name)
        lease = store.leases.claim_run(run_id)
    except BaseException:
        store.close()
        raise
    _OPEN.add((str(store.path), run_id))
    return WatchedRun(store, run_id, lease, name, model=model, data=data)


