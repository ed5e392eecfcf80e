"""The Explorer's life on a served page: connecting (the periodic updates, closing with the page), the link in the
address bar (read once, then kept following the settings), and the theme switch's hand-over to the reloaded page."""
from __future__ import annotations

from urllib.parse import urlencode

import panel as pn

from invlab.dashboard.lessons.catalogue import get_lesson, prior_settings
from invlab.dashboard.prior.page import apply_prior_query, prior_query
from invlab.dashboard.serving.closing import settle_writes, spare_moved_models, write_quietly
from invlab.dashboard.serving.styles import settle_styles
from invlab.dashboard.serving.theme import THEMES, is_parked, park, session_theme, theme_name
from invlab.dashboard.state.settings import family_defaults
from invlab.errors import InvlabError

SIZE_KEYS = ("data.dataset", "data.source_options", "model.num_inducing", "train.batch_size")  # for the loop bound


class PageLocation:
    """Mixed into `Explorer`: the served page's lifecycle and its link (see the module's doc)."""

    def _on_load(self) -> None:
        self._doc = pn.state.curdoc
        if self._closed:
            return
        self.feed.start(self.tick)
        self.theme_switch.ready(session_theme())
        if pn.state.curdoc is not None:
            self._close_with(pn.state.curdoc)  # the tab went away: stop training
        if pn.state.location is not None:
            self.read_location(pn.state.location)
            self.runs.open_link(pn.state.location.query_params.get("run"))
            if pn.state.location.query_params.get("page") == "compare":
                problems = self.compare.read_query(pn.state.location.query_params)
                if problems:
                    self.notice = "Some settings in the link were refused: " + "; ".join(problems)
        self.runs.refresh()
        settle_styles(getattr(self, "pages", None), pn.state.curdoc)  # a first notice shows as fast as a later one

    def _close_with(self, doc) -> None:
        """Close when `doc`'s session is destroyed, without waiting for the training thread (the server thread
        stays free for the other pages)."""
        if self._closes_with is not doc:
            self._closes_with = doc
            write_quietly()  # a tab that closes mid-message leaves no traceback in the server's log
            doc.on_session_destroyed(lambda ctx, doc=doc: self._page_ended(doc))

    def _page_ended(self, doc) -> None:
        """A page showing this explorer went away: close, unless the explorer has moved on to a newer page (or waits
        for one: a theme change; it closes itself if that page never comes)."""
        if self._closes_with is doc and not is_parked(self):
            self.close(wait=False)
        settle_writes(doc)  # the page's last messages settle quietly

    def _switch_theme(self, theme: str) -> str:
        """The user flipped the theme switch: set this explorer aside for the page the browser reloads into."""
        self.feed.stop()  # the new page's own periodic update takes over
        self.theme_switch.theme = theme
        return park(self)

    def resume_page(self) -> None:
        """Be shown again on a new page (the reload of a theme change): the new page's link is read again (same
        settings) and its document gets the periodic updates."""
        self.feed.stop()
        if self._closes_with is not None:
            spare_moved_models(self._closes_with)  # its end must not wipe the plots the new page now draws
        self._location = None
        self._doc = None

    def read_location(self, location) -> None:
        """Take the configuration from the URL once, then keep the URL following the settings."""
        if self._location is location:
            return
        self._location = None  # no URL writes while the link is being read
        self.theme_switch.theme = session_theme()
        query = location.query_params
        if "presenter" in query:
            self.presenter = str(query["presenter"]).lower() in ("1", "true")
        self._reading_link = True
        try:
            problems = self.settings.apply_query(query)
        finally:
            self._reading_link = False
        problems += self._refuse_oversize_link()
        if "theme" in query:  # the page opened in the default theme (the template takes only its own)
            theme = theme_name(query["theme"])
            if theme not in THEMES:
                problems.append(f"theme: {theme!r} is not one of {', '.join(THEMES)}")
        prior = {k.partition(".")[2]: v for k, v in query.items() if k.startswith("prior.")}
        lesson = get_lesson(self.settings.lesson)
        prior = {**prior_settings(lesson), **prior} if lesson is not None else prior
        if prior:
            problems += apply_prior_query(self.prior.explorer, prior)
        self._location = location
        if problems:
            self.notice = "Some settings in the link were refused: " + "; ".join(problems)
        self._update_location()

    def _refuse_oversize_link(self) -> list[str]:
        """Under a server's limits, put back the defaults of the link's settings that make the run too large (or
        read a folder outside the allowed ones); one message per refusal."""
        problems = []
        for _ in range(len(SIZE_KEYS) + 1):
            if self.limits is None:
                break
            try:
                self.limits.check(self.run_config())
                break
            except InvlabError as err:
                defaults = family_defaults(self.settings.model)
                reverted = []
                for key in getattr(err, "keys", []):
                    section, _, name = key.partition(".")
                    obj = self.settings.section(section)
                    if name not in obj.param:
                        continue
                    default = defaults[section].get(name, obj.param[name].default)
                    if getattr(obj, name) != default:
                        setattr(obj, name, default)
                        reverted.append(key)
                problems.append(str(err))
                if not reverted:
                    break
        return problems

    def sync_location(self, location) -> None:
        """`read_location` under the name notebooks and older code use."""
        self.read_location(location)

    def _linked_run(self) -> int | None:
        """The stored run the page's link names: the one it trains or shows, once it has a step to come back to (a
        run just built and never trained is not worth a link); None otherwise."""
        run_id = self.session.run_id
        return run_id if run_id is not None and self.session.step > 0 else None

    def follow_run_in_link(self) -> None:
        """Put the run into the link when it changes (a run's first step, a Reset, an opened run); each tick."""
        if self._location is not None and self._linked_run() != getattr(self, "_url_run", None):
            self._update_location()

    def _update_location(self) -> None:
        """Write the settings into the address bar (replacing the entry: the history is not flooded).

        Panel's Location defers browser-side URL writes until the document reports idle, which after a layout
        change may never come; a hidden field whose changes run `history.replaceState` does it at once."""
        if self._location is None:
            return
        query = self.settings.query_string()
        active = self.pages.active if getattr(self, "pages", None) is not None else 0
        if active == 3:  # the Compare page and its sweep
            extra = urlencode({"page": "compare", **self.compare.query()})
            query = f"{query}&{extra}" if query else f"?{extra}"
        elif active == 2:  # the prior page: a link or a reload opens it again
            query = f"{query}&page=prior" if query else "?page=prior"
        prior = prior_query(self.prior.explorer)
        if prior:
            query = f"{query}&{urlencode(prior)}" if query else f"?{urlencode(prior)}"
        self._url_run = self._linked_run()
        if self._url_run is not None:  # a reload or a copied link comes back to this run
            query = f"{query}&run={self._url_run}" if query else f"?run={self._url_run}"
        if self.presenter:
            query = f"{query}&presenter=1" if query else "?presenter=1"
        if self.theme_switch.theme != "default":  # a reload keeps the theme
            query = f"{query}&theme={self.theme_switch.theme}" if query else f"?theme={self.theme_switch.theme}"
        self.url_field.value = query
