"""A served page's periodic work: a tick that runs as background work (the header's busy indicator stays still),
and the changes one tick makes sent as one message."""
from __future__ import annotations

import contextlib

import panel as pn


def background_periodic(callback, period_ms: int):
    """`pn.state.add_periodic_callback(callback, period_ms)` run as background work: it does not set Panel's `busy`
    state. A foreground one sets it twice a tick, which spins the header's busy indicator on every open page of the
    server (a change sent to each page at each tick: Chromium drew a training page on 0.30 of a core, 0.17 without)."""
    from panel.io.callbacks import PeriodicCallback

    callback_ = PeriodicCallback(callback=callback, period=period_ms, background=True)
    callback_.start()
    doc = pn.state.curdoc
    if doc is not None:  # stopped with its session, as Panel's own `add_periodic_callback` registers it
        pn.state._periodic.setdefault(doc, []).append(callback_)
    return callback_


@contextlib.contextmanager
def one_message(doc):
    """The changes a served page's tick makes go out together, as one message (Panel's `hold`): otherwise each is a
    message of its own, and the browser handles and draws each one apart (half its time on a training page).
    Yields `flush()`, which sends what is held so far: new plots go out before the data streamed into them, so a
    stream is never also part of the plot's first copy. Nothing special in a notebook, whose outputs are held and
    pushed by the feed."""
    if doc is None or doc.session_context is None:
        yield lambda: None
        return
    from panel.io.document import hold

    held = [contextlib.ExitStack()]

    def flush():
        held[0].close()
        held[0] = contextlib.ExitStack()
        held[0].enter_context(hold(doc))

    held[0].enter_context(hold(doc))
    try:
        yield flush
    finally:
        held[0].close()
