"""What the Compare page's parts share (`CompareContext`): the Training page's settings, the run store, where the
runs train (Dask workers, a scheduler's address, the server's rule for who may choose it), how often a running sweep
is drawn, and the requests a part makes of the page, raised as `param.Event`s the page watches (open a run on the
Training page, re-read the stored sweeps). A part is handed this one object, never the page."""
from __future__ import annotations

from collections.abc import Callable

import param

from invlab.dashboard.compare.scheduler_choice import SchedulerChoice, SchedulerRefused
from invlab.dashboard.state.settings import RunSettings
from invlab.train import RunStore


class CompareContext(param.Parameterized):
    """The Compare page's shared settings and its parts' requests (see the module's doc). `store`: a `RunStore`, a
    function giving one (opened when first needed) or None; `limits`: a server's `ServerLimits` (None in a
    notebook)."""

    settings = param.ClassSelector(class_=RunSettings, doc="The Training page's configuration a sweep varies.")
    n_workers = param.Integer(default=0, bounds=(0, 64), doc="Dask workers on this machine (0: one per core).")
    scheduler = param.String(default="", doc="Address of a running Dask scheduler (empty: a cluster on this machine, "
                                             "or the server's); on a server, only where `choice` allows.")
    tick_ms = param.Integer(default=1000, bounds=(1, None), doc="How often a running sweep or study is drawn (ms).")
    choice = param.ClassSelector(class_=SchedulerChoice, doc="Who may choose the Dask scheduler on this page.")
    scheduler_refusal = param.String(default="", doc="Why the scheduler box's address was refused (empty: it was "
                                                     "not); said beside the box.")
    run_to_open = param.Integer(default=None, allow_None=True, doc="The stored run `open_run` asks to open.")
    open_run = param.Event(doc="A part asks the page to open `run_to_open` on the Training page.")
    sweeps_changed = param.Event(doc="A sweep was stored or ended: the list of stored sweeps is read again.")

    def __init__(self, settings: RunSettings, store: RunStore | Callable[[], RunStore | None] | None = None, *,
                 limits=None, **params):
        super().__init__(settings=settings, **params)
        self._store, self.limits = store, limits
        self._parts: list = []  # the parts that train (each: running() and `busy_words`)
        if self.choice is None:
            self.choice = SchedulerChoice(limits)
        self.scheduler = self.choice.server_address or self.scheduler  # the box shows the server's

    @property
    def store(self) -> RunStore | None:
        """The run store the page reads sweeps from and writes them to (None without one)."""
        return self._store() if callable(self._store) else self._store

    @store.setter
    def store(self, store) -> None:
        self._store = store

    @property
    def store_ready(self) -> bool:
        """Whether the store is open already (not one opened when first needed)."""
        return not callable(self._store)

    @property
    def shared_cluster(self) -> bool:
        """Whether runs without a scheduler address go to the server's one shared cluster (`cluster.py`: under
        `invlab serve` without --scheduler) rather than a cluster of this page's own (a notebook)."""
        return self.limits is not None and not self.choice.server_address

    def where_runs_train(self) -> tuple[str | None, bool]:
        """(the Dask scheduler address the runs go to, or None; whether to the server's shared cluster), by `choice`'s
        rule. An address the page may not choose raises SchedulerRefused, said beside the box (`scheduler_refusal`),
        before anything contacts it."""
        try:
            where = self.choice.resolve(self.scheduler)
        except SchedulerRefused as err:
            self.scheduler_refusal = str(err)
            raise
        self.scheduler_refusal = ""
        return where

    def ask_to_open(self, run_id: int) -> None:
        """Ask the page to open stored run `run_id` on the Training page (`open_run`)."""
        self.param.update(run_to_open=int(run_id), open_run=True)

    def trains(self, part) -> None:
        """Count `part` among those that train on the page (its `running()` and `busy_words`)."""
        self._parts.append(part)

    def busy(self, asking=None) -> str:
        """What another part is training, in words ("a sweep is running: …"); empty when none but `asking` is."""
        return next((part.busy_words for part in self._parts if part is not asking and part.running()), "")


__all__ = ["CompareContext"]
