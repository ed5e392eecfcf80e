"""The Compare page's tables (a sweep's runs, a Discover study's ranking): a Tabulator whose columns never change
in the browser once it is drawn.

Tabulator builds a table in a task of its own after the view that holds it is drawn, and Panel's view hands a
change of the columns straight to that table. A change of the columns (another sweep's settings, another score's
title) reaching a table drawn a moment before — a table just drawn by a link, or redrawn after its titles changed —
threw in Chromium ("Cannot read properties of null (reading 'firstChild')" in `setColumns`) and the table stayed
empty. So a `RunTable` changes a table's rows in place, and shows other columns as a new Tabulator built with its
columns, titles and rows at once, in the same place on the page."""
from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import panel as pn


class RunTable(pn.viewable.Viewer):
    """One table of the Compare page: `widget` is the Tabulator shown now (`widget.value` its rows, `widget.titles`
    its column titles); `options` are the Tabulator's keyword arguments (layout, widths, formatters, CSS classes);
    `on_select(event)` is called with every Tabulator's `selection` events (a click on a row)."""

    def __init__(self, frame: pd.DataFrame, on_select: Callable, **options):
        super().__init__()
        self._options, self._on_select = options, on_select
        self.widget = self._build(frame, {})
        self._slot = pn.Column(self.widget, sizing_mode="stretch_width", margin=0)

    def _build(self, frame: pd.DataFrame, titles: dict) -> pn.widgets.Tabulator:
        table = pn.widgets.Tabulator(frame, titles=dict(titles), **self._options)
        table.param.watch(self._on_select, "selection")
        return table

    def show(self, frame: pd.DataFrame, titles: dict) -> None:
        """Show `frame` with column `titles` ({field: title}): only the rows that changed when the columns and titles
        are the table's own, else a new table in its place (see the module's doc). One update of the page either
        way; nothing is sent when nothing changed."""
        table = self.widget
        if list(frame.columns) == list(table.value.columns) and table.titles == titles:
            if not frame.equals(table.value):
                table.value = frame
            return
        self.widget = self._build(frame, titles)
        self._slot.objects = [self.widget]

    def __panel__(self) -> pn.Column:
        return self._slot
