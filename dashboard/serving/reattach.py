"""A reload comes back to the run the page was training.

A page that trains or shows a stored run keeps `run=ID` in its address (`PageLink.update`). Reloading
it opens a new Bokeh session while the old one, its tab gone, still trains for a few seconds (`invlab serve` ends a
session without a browser after `UNUSED_SESSION_LIFETIME_MS`). If an Explorer of this server shows that run for the
same user (`None` on a server without logins), and this request is its page reloading (browsers ask to revalidate a
reloaded page) or its own page has no browser any more, the new page takes that Explorer as it is built, as the
theme switch does (`invlab.dashboard.serving.theme`): the training thread, curves, step budget and status go on, and
the new
tab is the one whose closing stops it. A link to the run opened in a second tab while the first is still open gets a
new Explorer, which opens the run from the store and follows it as it is written.
"""
from __future__ import annotations

import threading
import weakref

import panel as pn

from invlab.dashboard.serving.closing import connected

_served: "weakref.WeakSet" = weakref.WeakSet()
_lock = threading.Lock()


def register(explorer):
    """Note `explorer` (one served page's) as one a reload of its page may take back; returns it."""
    with _lock:
        _served.add(explorer)
    return explorer


def orphan_showing(run_id: int, user: str | None, reloading: bool = False):
    """The served Explorer that shows stored run `run_id` for `user` and whose page has no browser any more (or,
    `reloading`, whose page is being reloaded: its websocket closes a moment later), or None."""
    with _lock:
        candidates = list(_served)
    for explorer in candidates:
        if explorer.lifecycle.closed or (explorer.user or None) != (user or None):
            continue
        if explorer.session.run_id == run_id and (reloading or not connected(explorer.display.doc)):
            return explorer
    return None


def run_in_link() -> int | None:
    """The `run=` of this page's link as a number, or None (the page's notice says why a value is refused)."""
    raw = (pn.state.session_args or {}).get("run", [b""])[0]
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    # ASCII digits only: `str.isdigit` also passes "¹", which `int` refuses, and "٣", which names nothing a link shows
    return int(text) if text.isascii() and text.isdigit() else None


def is_reload() -> bool:
    """Whether this page's request is the browser reloading it (browsers ask to revalidate: `Cache-Control:
    max-age=0`), not a link opened in a new tab."""
    context = getattr(pn.state.curdoc, "session_context", None)
    request = getattr(context, "request", None)
    headers = getattr(request, "headers", None) or {}
    return "max-age=0" in str(headers.get("Cache-Control", "")).replace(" ", "")


def page_coming_back_to_its_run(user: str | None, make):
    """The page for a new session: the Explorer of this server that shows the run its link names (`run=`) for the
    same user, when that Explorer's tab has gone or this is that tab reloading; else a new one (`make()`), which
    opens the run from the store (and follows it while another page trains it)."""
    run_id = run_in_link()
    doc = pn.state.curdoc
    if run_id is not None and doc is not None and doc.session_context is not None:
        old = orphan_showing(run_id, user, reloading=is_reload())
        if old is not None:
            old.resume_page()  # drawn on this page now, its training thread and curves going on
            old.lifecycle.close_with(doc)  # this tab's closing stops it, not the old tab's end
            return old
    return make()
