"""The page's link in the address bar (`PageLink`, held as `explorer.link`): read once when the page is drawn (the
family, the controls, the prior page's settings, presenter mode, the theme; under a server's limits, the settings
that make the run too large put back), then kept following the settings, the page tab shown, the Compare page's
sweep and the run the page trains or shows (`run=ID`), so a reload or a copied link comes back to the same page."""
from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

import panel as pn

from invlab.dashboard.explorer.page import COMPARE, PRIOR
from invlab.dashboard.lessons.catalogue import get_lesson, prior_settings
from invlab.dashboard.prior.page import URL_KEYS as PRIOR_URL_KEYS
from invlab.dashboard.prior.page import apply_prior_query, prior_query
from invlab.dashboard.serving.theme import THEMES, session_theme, theme_name
from invlab.dashboard.state.settings import family_defaults
from invlab.errors import InvlabError

SIZE_KEYS = ("data.dataset", "data.source_options", "model.num_inducing", "train.batch_size")  # for the loop bound


def refusal_notice(problems: list[str]) -> str:
    """The page's notice for a link's refused settings (each a sentence saying which and why)."""
    return "Some settings in the link were refused: " + "; ".join(problems)


class PageLink:
    """The link in the address bar: `read(location)` takes the page's settings from it once, `update()` writes them
    back (replacing the history entry), `follow_run()` puts the run into it when the run changes.

    Parts it uses: `settings` (a `RunSettings`, read from and written into the link), `session` (the run it trains or
    shows: `run=ID` once it has a step), `page` (a `PageLayout`: the page tab shown, `page=prior` or
    `page=compare`), `compare` (a `ComparePage`: its sweep or study) and `prior` (a `PriorPanel`: its settings,
    `prior.*=`), each followed as it changes, `theme_switch` (a `ThemeSwitch`: `theme=`), and `limits` (a server's
    `ServerLimits`, None in a notebook). `presenter()` and `set_presenter(on)` read and set presenter mode
    (`presenter=1`); `say(text)` puts a message (the link's refused settings) in the page's notice."""

    def __init__(self, settings, session, *, page, compare, prior, theme_switch, limits=None,
                 presenter: Callable[[], bool], set_presenter: Callable[[bool], None], say: Callable[[str], None]):
        self.settings, self.session, self.page, self.compare, self.prior = settings, session, page, compare, prior
        self.theme_switch, self.limits = theme_switch, limits
        self._presenter, self._set_presenter, self._say = presenter, set_presenter, say
        self.location = None  # the page's `pn.state.location`, once read; None: nothing is written
        self.reading = False  # True while a link's settings are applied one by one
        self.url_run: int | None = None  # the run the link names now
        self.refused: list[str] = []  # what the page's link had that was refused, one entry a setting
        # Panel's Location defers browser-side URL writes until the document reports idle, which after a layout
        # change may never come; a hidden field whose changes run `history.replaceState` does it at once.
        self.url_field = pn.widgets.TextInput(value="", visible=False)
        self.url_field.jscallback(value="""
            const url = window.location.pathname + cb_obj.value + window.location.hash;
            if (url !== window.location.pathname + window.location.search + window.location.hash)
              window.history.replaceState(window.history.state, "", url);""")
        compare.param.watch(lambda *_: self.update(), ["sweep_id", "discover_shown"])
        prior.explorer.param.watch(lambda *_: self.update(), list(PRIOR_URL_KEYS))

    def read(self, location) -> None:
        """Take the configuration from the URL once, then keep the URL following the settings."""
        if self.location is location:
            return
        self.location = None  # no URL writes while the link is being read
        self.theme_switch.theme = session_theme()
        query = location.query_params
        if "presenter" in query:
            self._set_presenter(str(query["presenter"]).lower() in ("1", "true"))
        self.reading = True
        try:
            problems = self.settings.apply_query(query)
        finally:
            self.reading = False
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
        self.location = location
        self.refused = problems
        if problems:
            self._say(refusal_notice(problems))
        self.update()

    def _refuse_oversize_link(self) -> list[str]:
        """Under a server's limits, put back the defaults of the link's settings that make the run too large (or
        read a folder outside the allowed ones); one message per refusal."""
        problems = []
        for _ in range(len(SIZE_KEYS) + 1):
            if self.limits is None:
                break
            try:
                self.limits.check(self.settings.run_config())
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

    def linked_run(self) -> int | None:
        """The stored run the page's link names: the one it trains or shows, once it has a step to come back to (a
        run just built and never trained is not worth a link); None otherwise."""
        run_id = self.session.opened.run_id
        return run_id if run_id is not None and self.session.step > 0 else None

    def follow_run(self) -> None:
        """Put the run into the link when it changes (a run's first step, a Reset, an opened run); each tick."""
        if self.location is not None and self.linked_run() != self.url_run:
            self.update()

    def update(self) -> None:
        """Write the settings into the address bar (replacing the entry: the history is not flooded); nothing before
        the link has been read."""
        if self.location is None:
            return
        query = self.settings.query_string()
        if self.page.active == COMPARE:  # the Compare page and its sweep
            extra = urlencode({"page": "compare", **self.compare.query()})
            query = f"{query}&{extra}" if query else f"?{extra}"
        elif self.page.active == PRIOR:  # the prior page: a link or a reload opens it again
            query = f"{query}&page=prior" if query else "?page=prior"
        prior = prior_query(self.prior.explorer)
        if prior:
            query = f"{query}&{urlencode(prior)}" if query else f"?{urlencode(prior)}"
        self.url_run = self.linked_run()
        if self.url_run is not None:  # a reload or a copied link comes back to this run
            query = f"{query}&run={self.url_run}" if query else f"?run={self.url_run}"
        if self._presenter():
            query = f"{query}&presenter=1" if query else "?presenter=1"
        if self.theme_switch.theme != "default":  # a reload keeps the theme
            query = f"{query}&theme={self.theme_switch.theme}" if query else f"?theme={self.theme_switch.theme}"
        self.url_field.value = query
