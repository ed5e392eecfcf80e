"""A served page's first seconds: its session waits for its browser, and its stylesheets point at this server.

`invlab serve` ends a session a few seconds after its browser goes (`UNUSED_SESSION_LIFETIME_MS`), so a closed tab
stops its training at once. Bokeh counts those seconds for a page that has not connected yet too: from the moment its
session is made, before its HTML is even sent. On a busy server (a class pressing Start together) or a slow network
the browser can take longer than that to fetch the scripts and open the page's websocket; the session was then ended
unseen and built again when the browser connected — the whole page built twice, and the second build had no
stylesheet address of this server, so Panel's theme and loading styles were asked of a CDN (an offline class saw an
unstyled page).

`hold_until_connected()` keeps a new session until its page has loaded in the browser, or `FIRST_CONNECTION_S` at
most (a request that never connects, such as a health probe, is let go then). `packaged_stylesheets()` makes the
page's stylesheet links point at this server's packaged files from the first model on, whichever way the session
came to be built. `stylesheets_from_this_server()` keeps them there for a pane whose model is out of the document
for a while (on a page tab that is not shown) when it changes.
"""
from __future__ import annotations

import panel as pn

FIRST_CONNECTION_S = 90.0  # how long a page's session waits for its browser to connect, at most


def packaged_stylesheets(doc=None) -> None:
    """Give the document (default: the current one) the address of Panel's packaged files before any model is made.

    Panel writes each stylesheet link against the document's `dist_url`, set only when the page's HTML is rendered;
    a model made before that (or in a session built on a websocket connection, with no HTML) links the CDN."""
    from panel.io.resources import get_dist_path

    doc = doc if doc is not None else pn.state.curdoc
    if doc is not None:
        doc._template_variables.setdefault("dist_url", get_dist_path())


def stylesheets_from_this_server() -> None:
    """In a served process: a pane whose model is not in a document (it sits on a page tab that is not shown) and
    changes keeps its stylesheet links on this server. Panel re-links such a pane's stylesheets against its CDN, for
    want of a document to read this server's address from, and the stylesheet objects are shared by every pane of the
    page, so the whole page then asked the CDN for its loading styles (refused by the page's policy; never there
    offline). The address comes from the document being served now (`pn.state.curdoc`) instead. Idempotent."""
    import panel.io.resources as resources
    import panel.reactive as reactive

    if getattr(resources.patch_stylesheet, "keeps_this_server", False):
        return
    original, cdn = resources.patch_stylesheet, resources.CDN_DIST

    def patch_stylesheet(stylesheet, dist_url):
        if dist_url == cdn:
            doc = pn.state.curdoc
            dist_url = (doc._template_variables.get("dist_url") if doc is not None else None) or dist_url
        return original(stylesheet, dist_url)

    patch_stylesheet.keeps_this_server = True
    resources.patch_stylesheet = reactive.patch_stylesheet = patch_stylesheet


def hold_until_connected(doc=None, seconds: float = FIRST_CONNECTION_S) -> None:
    """Keep the served session of `doc` (default: the current one) from expiring until the page has loaded in its
    browser, or `seconds` have passed; nothing outside a Bokeh server (a notebook, a script)."""
    doc = doc if doc is not None else pn.state.curdoc
    context = getattr(doc, "session_context", None)
    if context is None or not hasattr(context, "_set_session"):
        return
    from tornado.ioloop import IOLoop

    loop = IOLoop.current()
    held = []

    def release() -> None:
        if held:
            session = held.pop()
            session.unblock_expiration()

    def hold() -> None:
        # the server makes the session right after the page is built, in the same step: it is there now
        session = getattr(context, "_session", None)
        if session is None or session.destroyed:
            return
        session.block_expiration()
        held.append(session)
        loop.call_later(seconds, release)

    loop.add_callback(hold)
    pn.state.onload(release)
