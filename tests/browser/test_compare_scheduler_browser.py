"""The Compare page's Dask scheduler box on a served dashboard without logins and without
`--allow-page-scheduler` (the shared test server): the box shows the server's choice, read-only, and an address
sent anyway (the box's value changed from the browser, as anyone can with the page's own script) is refused beside
the box when ▶ Run study is pressed; the address, where something listens, receives no connection."""
import socket
import threading
import time

import pytest

from pagekit import browser_page, poll

SET_SCHEDULER = """(address) => {
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      if (m.css_classes && m.css_classes.includes("invlab-scheduler")) { m.value = address; return true; }
  return false;
}"""


@pytest.fixture
def listener():
    """(address, connections accepted so far) of a socket on 127.0.0.1 that accepts and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.1)
    accepted, stop = [], threading.Event()

    def accept():
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except socket.timeout:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}", accepted
    stop.set()
    thread.join(2)
    for conn in accepted:
        conn.close()
    server.close()


def test_a_page_cannot_send_the_servers_runs_to_its_own_scheduler(served_app, listener):
    address, accepted = listener
    with browser_page() as (page, errors):
        page.goto(served_app + "?page=compare")
        box = page.locator(".invlab-scheduler input").first
        poll(lambda: box.count() > 0, timeout=90)
        assert box.is_disabled()  # the server's choice, read-only
        assert poll(lambda: page.evaluate(SET_SCHEDULER, address), timeout=30)
        page.get_by_role("button", name="▶ Run study").click(timeout=90_000)
        note = page.locator(".invlab-scheduler-note p").first  # the note beside the box (text in its shadow root)
        poll(lambda: "not contacted" in (note.all_inner_texts() or [""])[0], timeout=30)
        said = note.inner_text()
        assert note.is_visible()
        assert "this server does not let a page choose its Dask scheduler" in said, said
        assert "--allow-page-scheduler" in said
        time.sleep(1.0)  # (a sweep started by mistake connects within this)
        assert page.locator("[data-field=sweep-state]").first.inner_text() == "idle"
        assert accepted == []
        assert not errors, errors
