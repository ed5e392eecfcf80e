"""What a served page does when its tab goes: its periodic work stops sending, and the messages that were in
flight when the websocket closed are settled quietly instead of ending as tracebacks in the server's log.

Panel writes a document's changes to its websocket as asyncio futures that it awaits on the next tick; when the tab
closes between the write and that tick, or the session is destroyed first, a future fails with tornado's
`WebSocketClosedError` and nobody retrieves it ("Task exception was never retrieved"). Worse, when the socket
turns out closed between the three or more frames of one message, the frames written so far are lost with the error.
`write_quietly()` makes Panel write through `dispatch_quietly`, which stops at a closed socket and marks every frame's
outcome as retrieved (Panel still awaits them and logs a one-line warning), and makes Bokeh drop a change the browser
sent just before its tab closed, or a second close of the same socket (both failed with an AssertionError on the
detached session); `connected(doc)` tells
the page's ticks whether anyone is still listening; once no one is, `settle_writes(doc)` retrieves the outcomes of
the document's writes still in flight, before Panel drops them with the document.
"""
from __future__ import annotations

import asyncio
import json
import logging

log = logging.getLogger(__name__)


def connected(doc) -> bool:
    """Whether a browser is still connected to `doc`'s session (True outside a server: a notebook, a test)."""
    context = getattr(doc, "session_context", None)
    session = getattr(context, "_session", None)
    if session is None:
        return True
    return not session.destroyed and session.connection_count > 0


def _retrieve(future) -> None:
    if future.cancelled():
        return
    err = future.exception()  # retrieved: asyncio no longer reports it when the future is collected
    if err is not None:
        log.debug("a message to a closed page was dropped: %s", type(err).__name__)


def settle_writes(doc) -> int:
    """Retrieve (now, or when they finish) the outcomes of `doc`'s websocket writes still pending in Panel; returns
    how many there were. Called once the tab is gone: Panel cancels what is left when it destroys the document, but
    a write that already failed stays failed, and unretrieved, after a cancel."""
    try:
        from panel.io import document as panel_document
    except ImportError:  # pragma: no cover — Panel is what serves the page
        return 0
    pending = []
    for table in ("_WRITE_FUTURES", "_write_tasks"):
        pending += list(getattr(panel_document, table, {}).get(doc, None) or [])
    for future in pending:
        if isinstance(future, asyncio.Future):
            if future.done():
                _retrieve(future)
            else:
                future.add_done_callback(_retrieve)
    return len(pending)


def dispatch_quietly(conn, events=None, msg=None) -> list:
    """Panel's `dispatch_tornado` (write one message's frames to a connection's websocket, return their futures),
    except that a socket found closed part-way stops the writing instead of raising (which lost the frames already
    written), and every frame's outcome is retrieved when it is done."""
    from tornado.websocket import WebSocketClosedError, WebSocketHandler

    socket = conn._socket
    ws_conn = getattr(socket, "ws_connection", False)
    if not ws_conn or ws_conn.is_closing():
        return []
    if msg is None:
        if not events:
            return []
        msg = conn.protocol.create("PATCH-DOC", events)
    frames = [(msg.header_json, False), (msg.metadata_json, False), (msg.content_json, False)]
    for buffer in msg._buffers:
        frames += [(json.dumps(buffer.ref), False), (buffer.to_bytes(), True)]
    futures = []
    for payload, binary in frames:
        try:
            futures.append(WebSocketHandler.write_message(socket, payload, binary=binary))
        except WebSocketClosedError:  # the tab went while this message was being written
            break
    for future in futures:
        future.add_done_callback(_retrieve)
    return futures


def patch_from_attached(message, connection):
    """Bokeh's handling of a browser's change (PATCH-DOC), except that a change arriving on a connection whose tab
    has closed (Bokeh has already detached its session) is dropped, instead of failing with an AssertionError and a
    traceback in the log: there is no page left to apply it to."""
    if getattr(connection, "_session", None) is None:
        log.debug("a change from a closed page was dropped")
        return _nothing()  # Bokeh awaits what a handler returns
    return connection.session._handle_patch(message, connection)


async def _nothing() -> None:
    return None


def close_once(handler) -> None:
    """Bokeh's `WSHandler.on_close`, except that a second close of the same websocket (tornado may report one
    when the socket's read loop ends after Bokeh has already let the connection go) does nothing instead of failing
    on the detached session."""
    connection = getattr(handler, "connection", None)
    if connection is not None and getattr(connection, "_session", None) is None:
        return
    _bokeh_on_close(handler)


_bokeh_on_close = None


def write_quietly() -> None:
    """Make Panel write every document's changes through `dispatch_quietly`, and Bokeh drop changes from closed
    tabs (`patch_from_attached`) and close each websocket once (`close_once`); once per process, for connections
    opened from then on."""
    global _bokeh_on_close
    from bokeh.server.session import ServerSession
    from bokeh.server.views.ws import WSHandler
    from panel.io import document as panel_document

    global PANEL_DISPATCH
    if panel_document.dispatch_tornado is not dispatch_quietly:
        PANEL_DISPATCH = panel_document.dispatch_tornado
        panel_document.dispatch_tornado = dispatch_quietly
    if getattr(ServerSession.patch, "__func__", None) is not _patch_classmethod.__func__:
        ServerSession.patch = _patch_classmethod
    if WSHandler.on_close is not close_once:
        _bokeh_on_close = WSHandler.on_close
        WSHandler.on_close = close_once


PANEL_DISPATCH = None  # Panel's own `dispatch_tornado`, once `write_quietly` has put `dispatch_quietly` in its place
_patch_classmethod = classmethod(lambda cls, message, connection: patch_from_attached(message, connection))


def spare_moved_models(doc) -> None:
    """Let `doc` (a page's document whose Explorer another page has taken: a reload, a theme change, a new tab on an
    orphaned page) be destroyed without wiping the models it no longer owns. Bokeh's `Document.destroy` calls
    `destroy()` on every model it ever registered, which clears their properties; a plot that Panel moved to the
    new page's document (the Bokeh figures of the curves) would be drawn there as an empty frame. Only the models
    `doc` still owns are destroyed with it."""
    registry = getattr(doc, "models", None)
    if registry is None or getattr(registry, "_invlab_spares", False):
        return
    destroy = registry.destroy

    def destroy_own() -> None:
        models = getattr(registry, "_models", None)
        if models is not None:
            registry._models = {key: m for key, m in models.items() if m.document is doc}
        destroy()

    registry.destroy, registry._invlab_spares = destroy_own, True
