"""The Explorer's life on the pages that show it (`PageLifecycle`, held as `explorer.lifecycle`): connecting (the
periodic updates start, the link is read and the run it names opened, the stored runs listed), closing with the
page's document, and moving to a new page: the reload of a theme change, or of a page that trains."""
from __future__ import annotations

from collections.abc import Callable

import panel as pn

from invlab.dashboard.explorer.location import refusal_notice
from invlab.dashboard.serving.closing import settle_writes, spare_moved_models, write_quietly
from invlab.dashboard.serving.styles import settle_styles
from invlab.dashboard.serving.theme import follow_session_theme, is_parked, park, session_theme


class PageLifecycle:
    """When the page showing the Explorer connects, ends or is replaced by a reloaded one.

    `owner`: the Explorer, set aside whole for the page a theme change reloads into, and closed (`owner.close`) when
    its page ends. Parts it uses: `feed` (a `LiveFeed`: the periodic updates start on connecting and stop on leaving
    a page), `display` (a `RunDisplay`: the tick run periodically, the document it draws in), `link` (a `PageLink`:
    read on connecting), `runs` (a `RunsTab`: the run a link names opened, the stored runs listed), `compare` (a
    `ComparePage`: a link to it read), `page` (a `PageLayout`: its styles settled) and `theme_switch` (a
    `ThemeSwitch`: told the page's theme). `say(text)` puts a message in the page's notice."""

    def __init__(self, owner, feed, *, display, link, runs, compare, page, theme_switch,
                 say: Callable[[str], None]):
        self.owner, self.feed, self.display, self.link = owner, feed, display, link
        self.runs, self.compare, self.page, self.theme_switch = runs, compare, page, theme_switch
        self._say = say
        self.closed = False  # the Explorer was closed: a page that connects later starts nothing
        self.closes_with = None  # the document whose end closes the Explorer

    def on_load(self) -> None:
        """The page connected (Panel's `onload`): start the periodic updates, close with its document, read its link
        (a run or a Compare sweep it names opened) and list the stored runs."""
        self.display.doc = pn.state.curdoc
        if self.closed:
            return
        self.feed.start(self.display.tick)
        self.theme_switch.ready(session_theme())
        if pn.state.curdoc is not None:
            self.close_with(pn.state.curdoc)  # the tab went away: stop training
        location = pn.state.location
        if location is not None:
            self.link.read(location)
            problems = list(self.link.refused)  # said as the page was built; every refusal is said together
            run = location.query_params.get("run")
            refused_run = self.runs.refusal(run)
            if refused_run is None:
                self.runs.open_link(run)
            if location.query_params.get("page") == "compare":
                problems += self.compare.read_query(location.query_params)
            if refused_run is not None:
                problems.append(refused_run)
            if len(problems) > len(self.link.refused):  # more than the page said as it was built
                self._say(refusal_notice(problems))
        self.runs.refresh()
        settle_styles(self.page.pages, pn.state.curdoc)  # a first notice shows as fast as a later one

    def close_with(self, doc) -> None:
        """Close when `doc`'s session is destroyed, without waiting for the training thread (the server thread
        stays free for the other pages)."""
        if self.closes_with is not doc:
            self.closes_with = doc
            write_quietly()  # a tab that closes mid-message leaves no traceback in the server's log
            doc.on_session_destroyed(lambda ctx, doc=doc: self._page_ended(doc))

    def _page_ended(self, doc) -> None:
        """A page showing the Explorer went away: close it, unless it has moved on to a newer page (or waits for one:
        a theme change; it closes itself if that page never comes)."""
        if self.closes_with is doc and not is_parked(self.owner):
            self.owner.close(wait=False)
        settle_writes(doc)  # the page's last messages settle quietly

    def switch_theme(self, theme: str) -> str:
        """The user flipped the theme switch: set the Explorer aside for the page the browser reloads into; returns
        the token that page takes it back with."""
        self.feed.stop()  # the new page's own periodic update takes over
        self.theme_switch.theme = theme
        return park(self.owner)

    def resume_page(self) -> None:
        """Be shown again on a new page (the reload of a theme change): the new page's link is read again (same
        settings) and its document gets the periodic updates."""
        self.feed.stop()
        follow_session_theme(self.page.pages)  # its parts drawn in the new page's theme (a theme change's reload)
        if self.closes_with is not None:
            spare_moved_models(self.closes_with)  # its end must not wipe the plots the new page now draws
        self.link.location = None
        self.display.doc = None
