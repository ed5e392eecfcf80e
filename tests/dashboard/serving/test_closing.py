"""A closed tab's last messages end quietly: a websocket write that failed because the tab went is retrieved, so
asyncio never reports it as "Task exception was never retrieved"."""
import asyncio
import gc

from bokeh.document import Document
from panel.io import document as panel_document
from tornado.websocket import WebSocketClosedError

from invlab.dashboard.serving.closing import (
    close_once,
    connected,
    dispatch_quietly,
    patch_from_attached,
    settle_writes,
    write_quietly,
)


def _unretrieved_reports(settle: bool) -> list[str]:
    reports = []
    loop = asyncio.new_event_loop()
    loop.set_exception_handler(lambda loop, context: reports.append(context["message"]))
    doc = Document()

    async def write():
        raise WebSocketClosedError()

    async def scenario():
        failed = asyncio.ensure_future(write())  # a write to a tab that has just closed
        await asyncio.sleep(0)
        pending = asyncio.ensure_future(write())  # one still under way when the page's tick notices
        panel_document._WRITE_FUTURES[doc] = [failed, pending]
        await asyncio.sleep(0)
        if settle:
            assert settle_writes(doc) == 2
        await asyncio.sleep(0)
        panel_document._WRITE_FUTURES.pop(doc, None)  # what Panel does when it destroys the document

    loop.run_until_complete(scenario())
    gc.collect()
    loop.close()
    return reports


def test_writes_to_a_closed_tab_are_reported_unless_settled():
    assert any("never retrieved" in r for r in _unretrieved_reports(settle=False))  # what the server log showed
    assert _unretrieved_reports(settle=True) == []


def test_a_document_outside_a_server_counts_as_connected():
    assert connected(Document())


class ClosingConnection:
    """A websocket connection that closes while the first frame of a message is being written."""

    def __init__(self):
        self.closing = False

    def is_closing(self):
        return self.closing

    def write_message(self, message, binary=False):
        async def wrapper():
            raise WebSocketClosedError()

        self.closing = True
        return asyncio.ensure_future(wrapper())


class Message:
    header_json, metadata_json, content_json, _buffers = "{}", "{}", "{}", []


def _reports_of(dispatch) -> tuple[list[str], list]:
    reports, out = [], []
    loop = asyncio.new_event_loop()
    loop.set_exception_handler(lambda loop, context: reports.append(context["message"]))
    conn = type("Conn", (), {})()
    conn._socket = type("Socket", (), {})()
    conn._socket.ws_connection = ClosingConnection()

    async def scenario():
        try:
            out.extend(dispatch(conn, msg=Message()))
        except WebSocketClosedError:
            out.append("raised")
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    loop.run_until_complete(scenario())
    out.clear()
    gc.collect()
    loop.close()
    return reports


def test_a_tab_closing_mid_message_loses_no_frame_to_the_log():
    from invlab.dashboard.serving import closing

    panels_own = closing.PANEL_DISPATCH or panel_document.dispatch_tornado  # whether or not a page installed ours
    assert panels_own is not dispatch_quietly
    assert any("never retrieved" in r for r in _reports_of(panels_own))
    assert _reports_of(dispatch_quietly) == []


def test_a_change_from_a_closed_tab_is_dropped_not_failed(monkeypatch):
    from bokeh.server.session import ServerSession

    monkeypatch.setattr(ServerSession, "patch", ServerSession.__dict__["patch"])  # put back after the test
    monkeypatch.setattr(panel_document, "dispatch_tornado", panel_document.dispatch_tornado)
    from bokeh.server.views.ws import WSHandler

    monkeypatch.setattr(WSHandler, "on_close", WSHandler.on_close)
    detached = type("Conn", (), {"_session": None})()  # Bokeh detaches a connection's session when its tab closes
    assert asyncio.run(patch_from_attached(object(), detached)) is None  # awaited by Bokeh: nothing to do
    write_quietly()
    assert asyncio.run(ServerSession.patch(object(), detached)) is None  # what Bokeh's protocol handler now calls
    handler = type("Handler", (), {"connection": detached, "close_code": None, "close_reason": None})()
    assert WSHandler.on_close is close_once
    close_once(handler)  # a second close of a socket whose session is gone: nothing, no AssertionError
