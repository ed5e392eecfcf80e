"""A reload comes back to the run the page was training; no other browser can take a page over.

A page that trains or shows a stored run keeps `run=ID` in its address (`PageLink.update`). Reloading it opens a new
Bokeh session while the old page, still connected until the browser has the new one, trains on (`invlab serve` ends a
session without a browser after `UNUSED_SESSION_LIFETIME_MS`). The new page takes that Explorer as it is built, as
the theme switch does (`invlab.dashboard.serving.theme`), when the Explorer shows the link's run for the same user
(`None` on a server without logins) and either

- this request is its own tab coming back: each page gets a fresh random key that only its own tab holds (sent over
  its websocket, never in its address), and hands it back in a cookie of a few seconds as it unloads (a reload, a
  navigation); a request header cannot stand in for it, since any browser can send one; or
- its page has no browser any more (the tab was closed: a link to the run in a new tab takes it on).

The training thread, curves, step budget and status then go on, and the new tab is the one whose closing stops it.
A link to the run opened while its page is still open, in another tab or another browser, gets a new Explorer,
which opens the run from the store and follows it as it is written.
"""
from __future__ import annotations

import hmac
import secrets
import threading
import weakref

import panel as pn

from invlab.dashboard.serving.closing import connected

RELOAD_COOKIE = "invlab_reload"  # the key a page hands back as it unloads
KEY_SECONDS = 30  # how long that cookie lasts: the reload's request comes within it

_served: "weakref.WeakSet" = weakref.WeakSet()
_keys: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # Explorer -> the key of the page showing it
_lock = threading.Lock()

# Runs once the page's document is ready: forget a key spent on this page, keep this page's own, and hand it back
# as the page unloads (before the browser asks for the next one: a reload's request carries the cookie).
KEY_JS = """
const cookie = (value, seconds) => {
  document.cookie = `${name}=${value}; max-age=${seconds}; path=/; samesite=strict`;
};
cookie("", 0);
const hand_back = () => cookie(key, seconds);
window.addEventListener("beforeunload", hand_back);
window.addEventListener("pagehide", hand_back);
"""


def register(explorer):
    """Note `explorer` (one served page's) as one a reload of its page may take back; returns it."""
    with _lock:
        _served.add(explorer)
    return explorer


def keyed(explorer):
    """Give the page being built for `explorer` a fresh key (the one before it no longer takes the Explorer back),
    which the page keeps and hands back only as it unloads; returns `explorer`."""
    doc = pn.state.curdoc
    if doc is None or doc.session_context is None:
        return explorer  # a notebook cell, a test: no page to reload
    from bokeh.models import CustomJS

    key = secrets.token_urlsafe(24)
    with _lock:
        _keys[explorer] = key
    doc.js_on_event("document_ready", CustomJS(args={"name": RELOAD_COOKIE, "key": key, "seconds": KEY_SECONDS},
                                               code=KEY_JS))
    return explorer


def _holds_key(explorer, key: str | None) -> bool:
    with _lock:
        own = _keys.get(explorer)
    return bool(key) and own is not None and hmac.compare_digest(own.encode(), key.encode())


def orphan_showing(run_id: int, user: str | None, key: str | None = None):
    """The served Explorer that shows stored run `run_id` for `user` and whose page handed back `key` (this is its
    tab reloading), else one whose page has no browser any more; None when there is neither."""
    with _lock:
        candidates = list(_served)
    orphan = None
    for explorer in candidates:
        if explorer.lifecycle.closed or (explorer.user or None) != (user or None):
            continue
        if explorer.session.opened.run_id != run_id:
            continue
        if _holds_key(explorer, key):
            return explorer
        if orphan is None and not connected(explorer.display.doc):
            orphan = explorer
    return orphan


def run_in_link() -> int | None:
    """The `run=` of this page's link as a number, or None (the page's notice says why a value is refused)."""
    raw = (pn.state.session_args or {}).get("run", [b""])[0]
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    # ASCII digits only: `str.isdigit` also passes "¹", which `int` refuses, and "٣", which names nothing a link shows
    return int(text) if text.isascii() and text.isdigit() else None


def key_handed_back() -> str | None:
    """The key this page's request carries back from the page it replaces (`RELOAD_COOKIE`), or None."""
    return (pn.state.cookies or {}).get(RELOAD_COOKIE) or None


def page_coming_back_to_its_run(user: str | None, make):
    """The page for a new session: the Explorer of this server that shows the run its link names (`run=`) for the
    same user, when this is that Explorer's own tab coming back or that Explorer's tab has gone; else a new one
    (`make()`), which opens the run from the store (and follows it while another page trains it). Either way the
    page gets its own key (`keyed`)."""
    run_id = run_in_link()
    doc = pn.state.curdoc
    if run_id is not None and doc is not None and doc.session_context is not None:
        old = orphan_showing(run_id, user, key_handed_back())
        if old is not None:
            old.resume_page()  # drawn on this page now, its training thread and curves going on
            old.lifecycle.close_with(doc)  # this tab's closing stops it, not the old tab's end
            return keyed(old)
    return keyed(make())
