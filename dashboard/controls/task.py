"""The Data tab's Task: whether a table's target is predicted as classes or as a number.

Your own table (a CSV or Parquet file, a DataFrame handed to the page) has its task inferred from its target:
classification for text or a few whole numbers, regression otherwise, and the data's note says which. This selector
changes that choice where the data has one to make, and stays hidden for data whose task is fixed (the bundled digits,
the generated sets). It writes `task` into the data's source options, so a link and a stored run carry it as
`invlab train --source-option task=regression` and `load(..., task="regression")` do.
"""
from __future__ import annotations

import panel as pn
import param

from invlab.data.sources import resolve

CHOICES = {"inferred from the target": "auto", "classification": "classification", "regression": "regression"}
HELP = ("What the page predicts from your table: classes (classification) or a number (regression). Inferred: "
        "classes for text or a few whole numbers in the target column, a number otherwise.")


def has_task_choice(dataset: str) -> bool:
    """Whether data set `dataset` lets its task be chosen (a table: its source options have `task`)."""
    try:
        options = resolve(dataset).options
    except Exception:  # noqa: BLE001 — data the page cannot read yet has nothing to choose; its load says why
        return False
    return options is not None and "task" in options.param


class TaskControl(pn.viewable.Viewer):
    """The Task selector for `data` (a `DataConfig`): shown for a table, hidden otherwise; its value follows
    `data.source_options['task']` ("auto" when absent) and a choice writes it back."""

    def __init__(self, data: param.Parameterized, **params):
        super().__init__(**params)
        self.data = data
        self.select = pn.widgets.Select(label="Task", options=CHOICES, value="auto", description=HELP, width=300)
        self.select.param.watch(self._chosen, "value")
        data.param.watch(self._sync, ["dataset", "source_options"])
        self._sync()

    def _sync(self, *_) -> None:
        self.select.visible = has_task_choice(str(self.data.dataset))
        task = (self.data.source_options or {}).get("task", "auto")
        self.select.value = task if task in CHOICES.values() else "auto"

    def _chosen(self, event) -> None:
        options = dict(self.data.source_options or {})
        if event.new == "auto":
            options.pop("task", None)
        else:
            options["task"] = event.new
        if options != (self.data.source_options or {}):
            self.data.source_options = options

    def __panel__(self):
        return self.select
