"""The dashboard in a Jupyter notebook (JupyterLab, Notebook 7), with or without internet access.

`extension()` prepares a notebook kernel to show the dashboard and HoloViews plots:

- the HoloViews plotting backend is Bokeh (the dashboard's renderers style Bokeh plots; without a backend
  HoloViews refuses every option with "No entry for 'Curve' registered");
- Panel's, Bokeh's and HoloViews' JavaScript and CSS reach the page *inline*, from the installed Python
  packages, instead of from their CDNs: a classroom, a conference room or a firewalled cluster renders the
  same as a laptop on the internet. (`pn.config.inline` stays on, so later `pn.extension()` calls and every
  rendered model use the inline resources too.) Panel inlines the stylesheets of the Panel objects a cell
  draws, but HoloViews' plots and models added later (a new plot when training starts) would still link
  theirs from the CDN, so every output and update sent to the page has those links replaced by the packaged
  file's content (a `data:` URL).

`Explorer()` calls it before it first draws, so `from invlab.dashboard import Explorer; Explorer()` is all a notebook
needs. A notebook that called `pn.extension()` first (CDN resources, which never arrive offline) is loaded
again inline. Outside a notebook kernel it only selects the backend.

Closing the notebook (its tab, or the cell's output) ends what an `Explorer` shown there was doing, as closing
the browser tab does under `panel serve`. A notebook has no session to end, so the page says it is there: a
`Heartbeat` drawn with the explorer counts up every few seconds in the browser, and the explorer closes
itself (stops training and its periodic callback) once no beat has come for a while. The kernel being busy
with a cell does not count as silence. Where the front end reports deleted outputs to the kernel (through
HoloViz's "hv-extension-comm"), the explorer also closes a few seconds after its last output is deleted.
Restarting or shutting down the kernel ends the training thread with the process.
"""
from __future__ import annotations

import base64
import builtins
import logging
import os
import sys
import time
import weakref

import panel as pn
import param
from panel.reactive import ReactiveHTML

log = logging.getLogger(__name__)

CLOSE_GRACE_S = 3.0  # an explorer whose outputs were all deleted is closed this long after the last one went
_loaded_inline = False  # this kernel's page has Panel's JavaScript from the installed packages
_views: "weakref.WeakValueDictionary[str, object]" = weakref.WeakValueDictionary()  # root model id → Explorer


def use_bokeh_backend() -> None:
    """Make Bokeh HoloViews' plotting backend (importing it registers every element's plot and options)."""
    import holoviews as hv
    import holoviews.plotting.bokeh  # noqa: F401 — registers the backend and makes it the current one

    if hv.Store.current_backend != "bokeh":
        hv.Store.set_current_backend("bokeh")


def in_notebook() -> bool:
    """Running inside a Jupyter kernel (IPython with a kernel, not a plain IPython terminal)."""
    if not hasattr(builtins, "__IPYTHON__") or "IPython" not in sys.modules:
        return False
    from IPython import get_ipython

    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def extension(*args, **kwargs) -> None:
    """`hv.extension("bokeh", inline=True)` and `pn.extension(*args, **kwargs)` with inline resources; see the
    module doc.

    Safe to call more than once: the JavaScript is sent to the page once per kernel (again only when new
    `args`, Panel extensions such as "tabulator", are asked for)."""
    global _loaded_inline
    use_bokeh_backend()
    _register_delete_action()
    if not in_notebook():
        if args or kwargs:
            pn.extension(*args, **kwargs)
        return
    import holoviews as hv
    from panel.config import panel_extension

    loaded_from_cdn = (panel_extension._loaded or getattr(hv.extension, "_loaded", False)) \
        and not pn.config.inline and not _loaded_inline
    pn.config.inline = True
    _inline_later_stylesheets()
    if not _loaded_inline or loaded_from_cdn:
        # HoloViews' display hooks (a plot in a cell's result is drawn, not printed) and the JavaScript, inline
        hv.extension("bokeh", inline=True, logo=False)
    if loaded_from_cdn:
        # `pn.extension()` ran before with CDN resources: they never arrive offline, and a reload that trusts
        # them would wait for them forever. Send the whole bundle again, forced.
        from panel.io.notebook import load_notebook

        load_notebook(inline=True, reloading=False)
    new_args = [a for a in args if a not in panel_extension._loaded_extensions]
    if new_args or kwargs:
        pn.extension(*new_args, **kwargs)
    _loaded_inline = True


def lesson_steps(steps: int) -> int:
    """A lesson notebook's number of training steps: `steps`, or a tenth of it (at least 10) when the
    environment sets INVLAB_QUICK=1, as the notebook tests do, so that every cell runs in seconds there.
    (The numbers a quick run prints are not the lesson's.)"""
    if os.environ.get("INVLAB_QUICK", "") not in ("", "0"):
        return max(10, steps // 10)
    return steps


NOTEBOOK_IMAGE_FRAME = (560, 340)  # an image grid's largest drawing area in a notebook (pixels): image pixels stay
# square and whole-numbered, so an 8×8 digit is drawn at 16–40 screen pixels a side instead of the dashboard's 6–10


def show(view, **opts):
    """An engine view (`invlab.diagnostics`: an image grid, a spectrum, a curve, …) as a HoloViews plot, drawn by the
    dashboard's own renderer; image grids larger than on the dashboard, since a notebook's cell has the page's
    width, and titled with the view's own title. `opts` are HoloViews options for the result (e.g. `title=`)."""
    from invlab import diagnostics as dg
    from invlab.dashboard.views.panes import WIDTH, render_image_grid
    from invlab.dashboard.views.renderers import draw

    use_bokeh_backend()
    if isinstance(view, dg.ImageGrid):
        plot = render_image_grid(view, frame=NOTEBOOK_IMAGE_FRAME)
    else:
        plot = draw(view)
    if isinstance(plot, str):  # a view drawn as text (a table): its HTML, escaped by its renderer
        return pn.pane.HTML(plot, max_width=WIDTH, sizing_mode="stretch_width")
    if getattr(view, "title", "") and "title" not in opts and hasattr(plot, "opts"):  # a HoloViews plot: on the
        opts = {**opts, "title": view.title}  # page a card carries the title, in a notebook the plot does
    return plot.opts(**opts) if opts else plot


# -- stylesheets of models added after the first render -------------------------------------------------------------
_data_urls: dict[str, str] = {}


def packaged_stylesheet(url: str) -> str | None:
    """A `data:` URL with the content of Panel's packaged copy of CDN stylesheet `url` (None: not a CDN file)."""
    from panel.io.resources import CDN_DIST, DIST_DIR

    if not url.startswith(CDN_DIST):
        return None
    if url not in _data_urls:
        path = DIST_DIR / url[len(CDN_DIST):].split("?")[0]
        if not path.is_file():
            return None
        _data_urls[url] = "data:text/css;base64," + base64.b64encode(path.read_bytes()).decode("ascii")
    return _data_urls[url]


def inline_new_stylesheets(doc) -> int:
    """Point the CDN stylesheets of the models that the document's pending changes add to the page at packaged
    copies; the number changed. (The stylesheet objects are shared and cached by Panel: each is changed once.)"""
    from bokeh.model import Model
    from bokeh.model.util import visit_immediate_value_references
    from bokeh.models import ImportedStyleSheet

    events = getattr(getattr(doc, "callbacks", None), "_held_events", None)
    if not events:
        return 0
    synced = doc.models.synced_references
    seen: set[int] = set()
    stack: list = []
    changed = 0

    def visit(model):
        if id(model) not in seen and model not in synced:
            seen.add(id(model))
            stack.append(model)

    for event in events:
        new = getattr(event, "new", None)
        if isinstance(new, Model):
            visit(new)
        elif new is not None:
            visit_immediate_value_references(new, visit)
    while stack:
        model = stack.pop()
        if isinstance(model, ImportedStyleSheet):
            url = packaged_stylesheet(model.url)
            if url is not None:
                model.url = url
                changed += 1
        visit_immediate_value_references(model, visit)
    return changed


def inline_stylesheets(model) -> int:
    """Point every CDN stylesheet of `model` and the models it holds at packaged copies; the number changed."""
    from bokeh.models import ImportedStyleSheet

    changed = 0
    for sheet in model.select({"type": ImportedStyleSheet}):
        url = packaged_stylesheet(sheet.url)
        if url is not None:
            sheet.url = url
            changed += 1
    return changed


_wrapped = False


def _inline_later_stylesheets() -> None:
    """Have every output Panel draws in the notebook (HoloViews' plots too, which Panel does not inline) and
    every update it sends there carry packaged stylesheets instead of CDN links."""
    global _wrapped
    if _wrapped:
        return
    import panel.io.notebook as nb

    original_diff, original_render = nb.diff, nb.render_model

    def diff(doc, *args, **kwargs):
        try:
            inline_new_stylesheets(doc)
        except Exception:  # noqa: BLE001 — a stylesheet fetched from the CDN beats an update not sent
            log.exception("could not inline the stylesheets of new models")
        return original_diff(doc, *args, **kwargs)

    def render_model(model, *args, **kwargs):
        try:
            inline_stylesheets(model)
        except Exception:  # noqa: BLE001
            log.exception("could not inline the stylesheets of an output")
        return original_render(model, *args, **kwargs)

    nb.diff, nb.render_model = diff, render_model
    import holoviews.plotting.renderer as hv_renderer

    if getattr(hv_renderer, "render_model", None) is original_render:  # HoloViews' static plots call it directly
        hv_renderer.render_model = render_model
    _wrapped = True


# -- closing what a notebook shows ------------------------------------------------------------------------------------
def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


class Heartbeat(ReactiveHTML):
    """An invisible element that counts `beats` up every `interval_ms` while a page shows it.

    `silent()` says whether the page has been silent for `timeout` seconds of the kernel's free time: a
    hidden browser tab may slow its timers to one a minute, so the timeout is a few minutes by default
    (`INVLAB_HEARTBEAT_S` sets the interval in seconds; the timeout is 18 intervals)."""

    beats = param.Integer(default=0, doc="Beats received from the page.")
    interval_ms = param.Integer(default=10_000, bounds=(100, None))

    _template = '<div id="heartbeat" style="display: none"></div>'
    _scripts = {
        "render": "state.timer = setInterval(() => { data.beats = data.beats + 1 }, data.interval_ms)",
        "remove": "clearInterval(state.timer)",
    }

    BUSY_GAP_S = 5.0  # a gap this long between two checks means the kernel was busy: beats may be queued

    def __init__(self, **params):
        interval = _env_float("INVLAB_HEARTBEAT_S", 10.0)
        params.setdefault("interval_ms", max(100, int(1000 * interval)))
        super().__init__(width=0, height=0, margin=0, **params)
        self.timeout = 18 * self.interval_ms / 1000
        self._last_beat = self._last_check = time.monotonic()
        self.param.watch(self._beat, "beats")

    def _beat(self, *_):
        self._last_beat = time.monotonic()

    def silent(self) -> bool:
        """The page has beaten and then fallen silent (a page that never beat, e.g. a notebook run without a
        browser, is never taken as gone)."""
        if self.beats == 0:
            return False
        now = time.monotonic()
        if now - self._last_check > self.BUSY_GAP_S:
            self._last_beat = max(self._last_beat, now)  # not checked for a while: the kernel was busy
        self._last_check = now
        return now - self._last_beat > self.timeout


def track(explorer, root_id: str) -> None:
    """Close `explorer` when the notebook output holding the model `root_id` is deleted and no other is left."""
    _views[root_id] = explorer


def views_of(explorer) -> list[str]:
    """The root model ids of the notebook outputs showing `explorer`."""
    return [ref for ref, obj in list(_views.items()) if obj is explorer]


def _on_delete(root_id: str) -> None:
    """An output was deleted. Running the cell again deletes its output just before drawing it anew: close the
    explorer only if, a moment later, no output shows it."""
    explorer = _views.pop(root_id, None)
    if explorer is None:
        return
    log.debug("notebook output %s of %r deleted", root_id, explorer)
    try:
        from tornado.ioloop import IOLoop

        IOLoop.current().call_later(CLOSE_GRACE_S, _close_if_unseen, explorer)
    except RuntimeError:  # no event loop: decide now
        _close_if_unseen(explorer)


def _close_if_unseen(explorer) -> None:
    if views_of(explorer):
        return
    try:
        explorer.close()
    except Exception:  # noqa: BLE001 — a cleanup hook must not break Panel's other cleanups
        log.exception("closing the explorer of a deleted notebook output failed")


_registered = False


def _register_delete_action() -> None:
    global _registered
    if not _registered:
        from panel.config import panel_extension

        panel_extension.add_delete_action(_on_delete)
        _registered = True
