"""The Runs tab of the Training page (`RunsTab`, a part the `Explorer` holds as `explorer.runs`): the run store,
opened on first use; the list of stored runs; Open run, a `?run=ID` link and a click on the Compare page's table,
which ask the page's training session to show a stored run. What the opened run's settings do to the page's controls
is the Explorer's display's (`RunDisplay.adopt`).

The list holds a page of runs at a time, newest first, says how many of how many it shows (a class server's store
holds thousands), pages back with Older / Newer, and its search box finds a run by id, name, model or data set."""
from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable

import panel as pn

from invlab.dashboard.safe_text import html_text
from invlab.dashboard.state_words import state_word
from invlab.errors import InvlabError
from invlab.train import RunStore
from invlab.train.states import PageState, RunStatus

log = logging.getLogger("invlab.dashboard.explorer.explorer")
PAGE = 100  # runs the list holds at a time; Older / Newer page through the rest, the search box finds any


class RunsTab(pn.viewable.Viewer):
    """The stored runs a page can open, and the tab that lists them.

    Parts it uses: the page's `session` (a `TrainingSession`: it opens runs and is handed the store once opened) and
    its `status` (a `StatusBar`: it says a run is being opened). `store`: a `RunStore`, None (no store) or True (the
    data directory's own, opened on first use, so a page that never connects opens no file). `say(text)` puts a
    message in the page's notice; `show_training()` brings the Training page to the front. `buttons`: more widgets
    for the tab, under Open run (Save checkpoint, Download curves)."""

    def __init__(self, session, status, *, store: RunStore | None | bool, user: str | None = None,
                 admin: bool = False, say: Callable[[str], None], show_training: Callable[[], None], buttons=()):
        super().__init__(name="Runs")
        self.session, self.status = session, status
        self.user, self.admin = user, admin  # a server with logins: the page's user (its own runs only, unless admin)
        self._say, self._show_training = say, show_training
        self._store = None if store is True else (store or None)
        self._store_wanted = store is True
        self.search = pn.widgets.TextInput(name="Search stored runs", placeholder="id, name, model or data set",
                                           width=280)
        self.select = pn.widgets.Select(label="Stored runs", options={}, width=280)
        self.shown = pn.pane.HTML("", width=280, css_classes=["invlab-runs-shown"])  # how many of how many
        self.newer = pn.widgets.Button(label="◂ Newer", width=90, disabled=True)
        self.older = pn.widgets.Button(label="Older ▸", width=90, disabled=True)
        self._offset = 0  # runs newer than the page shown (the list is newest first)
        self.search.param.watch(lambda *_: self._page_at(0), "value")
        self.newer.on_click(lambda *_: self._page_at(self._offset - PAGE))
        self.older.on_click(lambda *_: self._page_at(self._offset + PAGE))
        self.open_button = pn.widgets.Button(label="Open run", width=100)
        self.open_button.on_click(lambda *_: self.open_selected())
        self._tab = pn.Column(self.search, self.select, self.shown, pn.Row(self.newer, self.older), self.open_button,
                              *buttons, name="Runs")
        if not self._store_wanted:
            self.refresh()  # a store handed in; the data directory's own is listed when the page connects

    def __panel__(self) -> pn.Column:
        return self._tab

    @property
    def store(self) -> RunStore | None:
        """The run store, opened on first use; None without one (or when it cannot be opened: the notice says why)."""
        if self._store_wanted:
            self._store_wanted = False
            try:
                self._store = RunStore(owner=self.user, admin=self.admin)
            except InvlabError as err:
                self._problem(str(err))
            except (OSError, sqlite3.Error) as err:
                self._problem(f"the run store in the data directory cannot be opened ({type(err).__name__}: {err}); "
                              "point INVLAB_DATA at a writable directory (or move a damaged runs.sqlite aside) and "
                              "restart the server")
            if self._store is not None:
                self.session.store, self.session.owns_store = self._store, True
        return self._store

    def close(self) -> None:
        """The page closed: a store not opened yet is never opened (the session closes one it was handed)."""
        self._store_wanted = False

    def _problem(self, text: str) -> None:
        log.error("run store: %s", text)
        self._say(f"Runs are not saved: {text}. Training works; stored runs cannot be listed or opened.")

    def open_selected(self) -> None:
        """Open the run chosen under Runs → Open run: its settings and curves, continued from its latest checkpoint."""
        run_id = self.select.value
        if run_id is None:
            self._say("no stored run selected")
            return
        self._opening(run_id)

    def open_link(self, raw) -> None:
        """`?run=ID` in the link: open that stored run on Training (refused, with the reason, when it is not a number
        or belongs to another user of a server with logins)."""
        if raw in (None, ""):
            return
        problem = self.refusal(raw)
        if problem:
            self._say(problem)
            return
        if self.session.opened.run_id == int(raw):  # a page that took back its own run (a reload): it is shown already
            return
        self.open(int(raw))

    @staticmethod
    def refusal(raw) -> str | None:
        """Why `?run=raw` cannot name a stored run (it is not a number), or None."""
        if raw in (None, "") or (str(raw).isascii() and str(raw).isdigit()):  # "¹" is a digit to isdigit, not to int
            return None
        return f"run={raw!r} refused: a stored run is named by its number (Runs → Stored runs lists them)"

    def open(self, run_id: int) -> None:
        """Show stored run `run_id` on the Training page, chosen in the list (a click on the Compare page's table)."""
        self.refresh()
        if run_id in self.select.options.values():
            self.select.value = run_id
        self._show_training()
        self._opening(run_id)

    def _opening(self, run_id: int) -> None:
        self.status.param.update(state=PageState.BUILDING, message=f"opening stored run {run_id}…", tone="info")
        self.session.commands.open_run(run_id)

    def _page_at(self, offset: int) -> None:
        self._offset = max(offset, 0)
        self.refresh()

    def refresh(self) -> None:
        """List a page of the store's runs (`PAGE`, newest first, from the page the Older / Newer buttons are at, and
        only those the search matches), each as "#ID name: family on data — status, step N" (and its owner for an
        admin), and say how many of how many are shown; a store that cannot be read is left untouched and the notice
        says what to do."""
        if self.store is None:
            return
        search = self.search.value.strip()
        try:
            total = self.store.runs.count()
            matched = self.store.runs.count(search) if search else total
            self._offset = min(self._offset, max(matched - 1, 0) // PAGE * PAGE)
            runs = self.store.runs.list(limit=PAGE, offset=self._offset, search=search)
        except InvlabError as err:
            self._say(str(err))
            return
        except sqlite3.Error as err:
            self._problem(f"the run store {self.store.path} cannot be read ({type(err).__name__}: {err}); it was left "
                          "untouched: move it aside (or point INVLAB_DATA elsewhere) and restart the server to start "
                          "a new store")
            return
        by = (lambda r: f" ({r.owner})" if r.owner else "") if self.admin else (lambda r: "")

        def label(r) -> str:  # a watched loop's run by its own name first
            named = f"{r.name}: " if r.name else ""
            return f"#{r.id} {named}{r.model} on {r.dataset} — {state_word(r.status, RunStatus)}, step {r.step}{by(r)}"

        self.select.options = {label(r): r.id for r in runs}
        self.shown.object = html_text(shown_text(search, self._offset, len(runs), matched, total))
        self.newer.disabled = self._offset == 0
        self.older.disabled = self._offset + len(runs) >= matched


def shown_text(search: str, offset: int, count: int, matched: int, total: int) -> str:
    """What the list holds, in words: e.g. 'showing the newest 100 of 5,052 runs', 'showing runs 101–200 of 5,052
    (newest first)', "3 of 5,052 runs match 'wine'"."""
    first, last = offset + 1, offset + count
    if not search:
        if total == 0:
            return "no stored runs yet"
        if total <= PAGE:
            return f"all {total:,} stored run{'s' if total > 1 else ''}"
        if offset == 0:
            return f"showing the newest {count:,} of {total:,} runs: Older ▸ pages back, or search"
        return f"showing runs {first:,}–{last:,} of {total:,} (newest first)"
    if matched == 0:
        return f"no stored run matches '{search}' (of {total:,} runs)"
    if matched <= PAGE:
        return f"{matched:,} of {total:,} runs match '{search}'"
    return f"showing {first:,}–{last:,} of the {matched:,} runs that match '{search}' ({total:,} in all)"
