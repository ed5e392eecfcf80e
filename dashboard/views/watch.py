"""Which of a page's diagnostic views are on screen, so that the training thread computes only those.

Each view's pane carries the CSS classes `invlab-view` and `view_class(name)`. `ViewWatcher`, an invisible
element drawn once on the Training page (served or in a notebook), looks every half second at where those panes
are in the browser window: a pane scrolled out of the window, in a collapsed card or a hidden tab (no size), or on
a browser tab in the background is not on screen. When the set changes the page sends the names of the panes on
screen (`on_screen`), and the page's training session skips the others' views until they come back
(`TrainingSession.views_shown`). Until the browser has said anything (a notebook run without a
browser, a page still loading) every view is computed.
"""
from __future__ import annotations

import re

import param
from panel.reactive import ReactiveHTML

from invlab.diagnostics import AllViewsBut

VIEW_CLASS = "invlab-view"
_PREFIX = "invlab-view--"

_WATCH = """
const prefix = '%s', every = 500;
state.found = []; state.scanned = -1e9; state.last = null;
const scan = () => {
  const found = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll('.%s')) found.push(el);
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) walk(el.shadowRoot);
  };
  walk(document);
  state.found = found; state.scanned = performance.now();
};
const onScreen = (el) => {
  if (!el.isConnected) return false;
  const r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0 && r.bottom > 0 && r.right > 0
      && r.top < window.innerHeight && r.left < window.innerWidth;
};
const check = () => {
  if (performance.now() - state.scanned > 2000 || state.found.some((el) => !el.isConnected)) scan();
  const names = new Set();
  if (!document.hidden)
    for (const el of state.found)
      if (onScreen(el))
        for (const c of el.classList) if (c.startsWith(prefix)) names.add(c.slice(prefix.length));
  const seen = [...names].sort();
  const key = seen.join(' ');
  if (key !== state.last) { state.last = key; data.on_screen = key; }
};
state.check = check;
state.timer = setInterval(check, every);
document.addEventListener('visibilitychange', check);
state.onScroll = () => { if (!state.pending) { state.pending = true;
  setTimeout(() => { state.pending = false; check(); }, 100); } };
window.addEventListener('scroll', state.onScroll, {capture: true, passive: true});
check();
""" % (_PREFIX, VIEW_CLASS)


def view_class(name: str) -> str:
    """The CSS class that names view `name` on its pane (characters other than letters, digits, - and _ become
    `-`; names differing only there are told apart by Python's own mapping, `ViewWatcher.names`)."""
    return _PREFIX + re.sub(r"[^A-Za-z0-9_-]", "-", str(name))


class ViewWatcher(ReactiveHTML):
    """An invisible element that reports which view panes of its page are on screen (see the module's doc).

    `on_screen`: the CSS names (`view_class` without its prefix) of the panes on screen, separated by spaces, or None
    until the page has reported. `names(known)` maps them back to view names."""

    on_screen = param.String(default=None, allow_None=True,
                           doc="Views on screen, as the page last reported them (None: not reported yet).")

    _template = '<div id="watch" style="display: none"></div>'
    _scripts = {
        "render": _WATCH,
        "remove": "clearInterval(state.timer); document.removeEventListener('visibilitychange', state.check); "
                  "window.removeEventListener('scroll', state.onScroll, {capture: true})",
    }

    def __init__(self, **params):
        super().__init__(width=0, height=0, margin=0, **params)

    def names(self, known) -> set[str] | None:
        """The view names among `known` whose panes the page reported on screen; None when it has not reported."""
        if self.on_screen is None:
            return None
        shown = set(self.on_screen.split())
        return {name for name in known if view_class(name)[len(_PREFIX):] in shown}


class ShownViews:
    """A training session's side of the watch: which of the run's views the page shows, which it skips, and when
    the views are due (thread-safe enough for one writer, the server thread, and one reader, the training thread:
    each attribute is replaced whole)."""

    def __init__(self):
        self.names: frozenset[str] | None = None  # on screen, as the page says; None: all
        self.known: frozenset[str] = frozenset()  # views the run has given so far
        self._due = False  # a view came on screen: the views are due at the next step

    def show(self, names) -> None:
        """The page now shows `names` (None: all); a view that was not shown before makes the views due at once."""
        new = None if names is None else frozenset(names)
        if new is None or self.names is None or not new <= self.names:
            self._due = True
        self.names = new

    def new_run(self) -> None:
        """A new run: its views are not known yet, so its first views are all computed (the page makes their
        panes from them)."""
        self.known = frozenset()

    def computed(self, views) -> None:
        """A snapshot gave `views` ({name: View})."""
        self.known = self.known | frozenset(views)

    def skipped(self) -> frozenset[str]:
        """The run's views the page does not show now."""
        names = self.names
        return frozenset() if names is None else self.known - names

    def due(self, by_time: bool) -> bool:
        """Whether to take a snapshot with views at this step: when their interval has passed (`by_time`) or a view
        came on screen. Views off screen are left out of it (`selection`), but a view new to the run is computed even
        then, so that its pane exists to be scrolled to."""
        if not (by_time or self._due):
            return False
        self._due = False
        return True

    def selection(self) -> AllViewsBut | None:
        """What `trainer.report.snapshot(only=...)` takes: None (every view) or every view but the skipped ones (a
        view new to the run is computed, so that its pane can be made)."""
        skipped = self.skipped()
        return AllViewsBut(skipped) if skipped else None
