"""The header's light/dark switch, without losing the page's run.

Panel's template draws its theme when the page is built, so a new theme needs a new page: its switch reloads with
`?theme=dark`, which used to start a new session (step 0, no curves). Here the switch asks the server first: the
page's `Explorer` is set aside under a one-time token, the browser reloads with `theme=…&resume=TOKEN`, and the new
page takes the same Explorer back — its training thread, curves, settings and status go on. A token not claimed
within `HANDOFF_SECONDS` (the tab was closed meanwhile) closes the Explorer it held. On a server with logins only the
same user can take an Explorer back.
"""
from __future__ import annotations

import secrets
import threading

import panel as pn

HANDOFF_SECONDS = 60.0  # how long a page set aside for a theme change waits for its reloaded page
THEMES = ("default", "dark")  # the template's themes, as `?theme=` names them

_parked: dict[str, object] = {}
_lock = threading.Lock()

# Runs in the browser whenever the hidden field changes. "ready:…" (set by the server once the page has loaded): the
# template's switch now asks the server ("switch:THEME") instead of reloading; "go:TOKEN:THEME": reload into the new
# theme, handing the page's Explorer over to the new page.
SWITCH_JS = """
const value = cb_obj.value || "";
if (value.startsWith("ready:")) {
  window.toggleLightDarkTheme = (theme) => {
    cb_obj.value = "switch:" + (theme === "default" ? "dark" : "default");
  };
} else if (value.startsWith("go:")) {
  const [, token, theme] = value.split(":");
  const url = new URL(window.location.href);
  url.searchParams.set("theme", theme);
  url.searchParams.set("resume", token);
  window.location.href = url.toString();
}
"""


def park(explorer) -> str:
    """Set `explorer` aside for the reloaded page; returns the token that takes it back (once)."""
    token = secrets.token_urlsafe(16)
    with _lock:
        _parked[token] = explorer
    timer = threading.Timer(HANDOFF_SECONDS, _expire, args=(token,))
    timer.daemon = True
    timer.start()
    return token


def is_parked(explorer) -> bool:
    """Whether `explorer` waits for its reloaded page."""
    with _lock:
        return any(e is explorer for e in _parked.values())


def claim(token: str | None, user: str | None = None):
    """The Explorer set aside under `token` (removed from the waiting ones), or None: an unknown or used token, or
    one set aside by another user."""
    if not token:
        return None
    with _lock:
        explorer = _parked.get(token)
        if explorer is None or getattr(explorer, "user", None) != user:
            return None
        del _parked[token]
    return explorer


GONE = ("the page this link changed the theme of has closed (or the link was used already), so this is a new page: "
        "its run, if it had started, is under Runs → Stored runs")


def page_for(token: str | None, user: str | None, make):
    """The Explorer for a page opened with `resume=token`: the one set aside by the theme switch, ready for its new
    page, or `make()` (a new one) with a notice saying why the old one is not there."""
    explorer = claim(token, user)
    if explorer is not None:
        explorer.resume_page()
        return explorer
    explorer = make()
    if token:
        explorer.notice = GONE
    return explorer


def follow_session_theme(viewable) -> int:
    """Give every part under `viewable` (a Panel layout drawn on an earlier page) this page's theme; returns how many
    parts changed. Call it before the page is drawn.

    Panel gives each part made while a page is served that page's design class, and the design built for that
    page's theme, once, when the part is made; the template's own theme passes over parts that name a design. The
    parts of the Explorer a theme change hands to its new page (the diagnostics' titles, tables and plots, the
    prior and Compare pages) were made on the old page, so they kept its theme: dark headings and axis labels on a
    dark page. Each gets the design of the same class built for this page's theme (`?theme=`), as a part made here
    would."""
    if viewable is None:
        return 0
    changed, theme = 0, pn.config.theme  # this page's `?theme=`
    for part in viewable.select():
        design = getattr(part, "_design", None)
        if isinstance(part.design, type) and getattr(getattr(design, "theme", None), "_name", theme) != theme:
            part._update_design()  # the design class it names, built for this page's theme (Panel's own rule)
            changed += 1
    return changed


def _expire(token: str) -> None:
    with _lock:
        explorer = _parked.pop(token, None)
    if explorer is not None:
        explorer.close(wait=False)  # its page never came back


def session_theme() -> str:
    """The theme this page was opened with (`?theme=`), 'default' when none or not one of `THEMES`."""
    args = pn.state.session_args or {}
    theme = theme_name(args.get("theme", [b"default"])[0])
    return theme if theme in THEMES else "default"


def theme_name(raw) -> str:
    """A link's `theme` value as text (bytes decoded, quotes taken off); one of `THEMES` or not."""
    return (raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)).strip("'\"")


class ThemeSwitch:
    """The hidden field through which the template's theme switch and the server talk (see the module's doc).

    `on_switch(theme)` is called on the server when the user flips the switch; it returns the token to reload with."""

    def __init__(self, on_switch):
        self.on_switch = on_switch
        self.theme = "default"
        self.field = pn.widgets.TextInput(value="", visible=False)
        self.field.jscallback(value=SWITCH_JS)
        self.field.param.watch(self._changed, "value")

    def ready(self, theme: str) -> None:
        """The page has loaded with `theme`: let the switch ask the server from now on."""
        self.theme = theme
        self.field.value = f"ready:{theme}:{secrets.token_hex(4)}"  # a new value each time, so the script runs

    def _changed(self, event) -> None:
        value = event.new or ""
        if not value.startswith("switch:"):
            return
        theme = value.partition(":")[2]
        if theme not in THEMES:
            return
        token = self.on_switch(theme)
        self.field.value = f"go:{token}:{theme}"
