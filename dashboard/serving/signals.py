"""What the served dashboard does on SIGTERM (`kill`, systemd, a container's stop) or Ctrl-C (SIGINT): every page's
training stops at its next step with a checkpoint there and its run marked `interrupted` (`session.stopping`), then
the server's loop stops and the process exits 0, as `invlab train` does on Ctrl-C. A second signal stops the server
at once (each run resumes from its latest checkpoint).

Bokeh's own SIGTERM handler stopped the loop with the training threads still inside torch: the process aborted
("terminate called without an active exception"), its runs stayed `running` (later listed `killed`) and lost the
steps since their last checkpoint. Bokeh installs that handler on the asyncio loop once the server runs, after the
app's warm-up, so `stop_on_signals()` (called as the app is imported, on the main thread) installs this one from the
loop's first callback, in its place.
"""
from __future__ import annotations

import logging
import os
import signal
import threading

log = logging.getLogger("invlab.dashboard")

STOP_SECONDS = 30.0  # how long the pages' threads get to reach their next step and checkpoint before the server stops
_installed_in: int | None = None  # the process whose loop has the handlers (a forked worker installs its own)
_stopping: threading.Thread | None = None  # the wait for the pages' threads, once a signal came


def stop_on_signals() -> None:
    """Make SIGTERM and SIGINT stop this server's pages' runs with a checkpoint, then the server (see the module);
    once per process. Called on the main thread, whose loop the server runs; elsewhere (a server in a thread) the
    signals are left as they are."""
    global _installed_in
    if _installed_in == os.getpid() or threading.current_thread() is not threading.main_thread():
        return
    from tornado.ioloop import IOLoop

    _installed_in = os.getpid()
    loop = IOLoop.current()
    loop.add_callback(_install, loop)  # runs once the server's loop runs: after Bokeh's own handler is in place


def _install(loop) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.asyncio_loop.add_signal_handler(sig, _on_signal, sig, loop)


def _name(sig: int) -> str:
    return "Ctrl-C (SIGINT)" if sig == signal.SIGINT else signal.Signals(sig).name


def _on_signal(sig: int, loop) -> None:
    """On the loop, after a signal: the first asks the pages' runs to stop and stops the loop once they have (or
    after `STOP_SECONDS`); a second stops the loop now."""
    global _stopping
    if _stopping is not None:
        log.warning("%s again: the server stops now, without waiting for the pages' runs (each resumes from its latest "
                    "checkpoint)", _name(sig))
        loop.stop()
        return
    log.warning("%s: the server is stopping; every training page stops at its next step, saves a checkpoint and is "
                "marked interrupted (a second signal stops the server at once)", _name(sig))
    _stopping = threading.Thread(target=_stop_pages_then_loop, args=(_name(sig).split()[-1].strip("()"), loop),
                                 name="invlab-stopping", daemon=True)
    _stopping.start()


def _stop_pages_then_loop(why: str, loop) -> None:
    from invlab.dashboard.session.stopping import stop_all

    try:
        left = stop_all(why, STOP_SECONDS)
        if left:
            log.error("%d training page(s) did not reach their next step within %g s; the server stops anyway (their "
                      "runs resume from their latest checkpoints)", len(left), STOP_SECONDS)
    finally:
        loop.add_callback(loop.stop)
