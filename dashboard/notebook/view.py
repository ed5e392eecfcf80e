"""The column an `Explorer` is drawn in inside a notebook, and which of the page's messages it applies.

Panel's page in a notebook sends back every update the kernel sent it, and JupyterLab delivers the page's
messages on a thread of their own; `NotebookView` applies only what the page itself changed (`page_changes`),
on the kernel's main event loop.
"""
from __future__ import annotations

import asyncio
import logging
import threading

import panel as pn

log = logging.getLogger(__name__)

__all__ = ["NotebookView", "page_changes", "KERNEL_ATTRIBUTES", "KERNEL_EVENTS"]


class NotebookView(pn.Column):
    """The column an `Explorer` is drawn in inside a notebook.

    Only what the page itself changes is applied from its messages (`page_changes`), on the kernel's main
    event loop, the one that runs the explorer's ticks:

    - Panel's page applies each update the kernel sends without marking it as the kernel's, so it sends every
      update back. An echo of a layout's children sent before the tick's next plot was added puts the old
      children back: the new plot is detached from the kernel's document, and then never reaches the page, or
      reaches it and receives no data. Echoed data would be appended twice. The layout, the plots' data and the
      markup are the kernel's alone; widget values, clicks, zoom and the page's facts still come through.
    - JupyterLab hands comm messages to a kernel subshell, a thread of its own; a change applied there would
      recompute the document's models while a tick on the main thread changes them.

    Bokeh's page sometimes sends back a change Python cannot apply: to a plot model that the last update just
    replaced, or a glyph colour in a form the Python property refuses. Under `panel serve` such a change is
    dropped with a line in the server's log; in a notebook Panel would print its traceback under the cell,
    although nothing is wrong with the dashboard. Here it is dropped and logged too."""

    def __init__(self, *objects, **params):
        super().__init__(*objects, **params)
        self._loop = _running_loop()  # the kernel's main loop (a cell runs on it)
        self._thread = threading.current_thread()

    def _on_msg(self, ref, manager, msg) -> None:
        loop = self._loop
        if threading.current_thread() is not self._thread and loop is not None and loop.is_running():
            loop.call_soon_threadsafe(self._apply_msg, ref, manager, msg)
        else:
            self._apply_msg(ref, manager, msg)

    def _apply_msg(self, ref, manager, msg) -> None:
        if ref not in pn.state._views:  # the output was closed meanwhile
            return
        try:
            super()._on_msg(ref, _PageAuthored(manager), msg)
        except ValueError as err:  # bokeh's DeserializationError and property validation errors
            log.debug("a change from the page could not be applied and was dropped: %s", err)


class _PageAuthored:
    """The comm manager's assembly of a page's message, keeping only the events the page authored."""

    def __init__(self, manager):
        self.manager = manager

    def assemble(self, msg):
        patch = self.manager.assemble(msg)
        patch.content["events"] = page_changes(patch.content.get("events", []))
        return patch


# What only the kernel writes: a page's message carrying these is an echo of an update the kernel sent.
KERNEL_ATTRIBUTES = frozenset({"children", "nodes", "html", "text", "stylesheets", "css_classes", "data"})
KERNEL_EVENTS = frozenset({"ColumnsStreamed", "ColumnsPatched", "ColumnDataChanged"})


def page_changes(events: list[dict]) -> list[dict]:
    """The events of a page's PATCH-DOC message (Bokeh's serialized form) that the page itself can author: widget
    values, clicks and other Bokeh events, ranges, the browser's facts. Dropped: data streamed or set
    (`KERNEL_EVENTS`), the kernel-written attributes (`KERNEL_ATTRIBUTES`: layouts' children, markup, styles,
    data) and any value that refers to Bokeh models (only a layout change carries one)."""
    return [e for e in events if not _kernel_written(e)]


def _kernel_written(event: dict) -> bool:
    kind = event.get("kind")
    if kind in KERNEL_EVENTS:
        return True
    return kind == "ModelChanged" and (event.get("attr") in KERNEL_ATTRIBUTES or _refers_to_models(event.get("new")))


def _refers_to_models(value) -> bool:
    if isinstance(value, dict):
        if value.get("type") == "object" or (set(value) == {"id"} and isinstance(value["id"], str)):
            return True
        return any(_refers_to_models(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_refers_to_models(v) for v in value)
    return False


def _running_loop():
    """The event loop running on this thread (a notebook cell's: the kernel's main loop), or None."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
