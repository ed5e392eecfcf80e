"""The Explorer's stored runs: the run store (opened on first use), the list of runs on the Runs tab, and opening a
stored run on the Training page with its settings shown in the controls."""
from __future__ import annotations

import logging
import sqlite3

from invlab.errors import InvlabError
from invlab.train import RunConfig, RunStore
from invlab.train.states import PageState

log = logging.getLogger("invlab.dashboard.explorer.explorer")


class StoredRuns:
    """Mixed into `Explorer`: the run store and stored runs (see the module's doc)."""

    @property
    def store(self) -> RunStore | None:
        """The run store, opened on first use; None without one (or when it cannot be opened: the notice says why)."""
        if self._store_wanted:
            self._store_wanted = False
            try:
                self._store = RunStore(owner=self.user, admin=self.admin)
            except InvlabError as err:
                self._store_problem(str(err))
            except (OSError, sqlite3.Error) as err:
                self._store_problem(f"the run store in the data directory cannot be opened ({type(err).__name__}: "
                                    f"{err}); point INVLAB_DATA at a writable directory (or move a damaged runs.sqlite "
                                    "aside) and restart the server")
            if self._store is not None:
                self.session.store, self.session.owns_store = self._store, True
        return self._store

    def _store_problem(self, text: str) -> None:
        log.error("run store: %s", text)
        self.notice = f"Runs are not saved: {text}. Training works; stored runs cannot be listed or opened."

    def open_run(self, *_):
        """Open the run chosen under Runs → Open run: its settings and curves, continued from its latest checkpoint."""
        run_id = self.runs_select.value
        if run_id is None:
            self.notice = "no stored run selected"
            return
        self.status.param.update(state=PageState.BUILDING, message=f"opening stored run {run_id}…", tone="info")
        self.session.open_run(run_id)

    def open_run_link(self, raw) -> None:
        """`?run=ID` in the link: open that stored run on Training (refused, with the reason, when it is not a number
        or belongs to another user of a server with logins)."""
        if raw in (None, ""):
            return
        if not str(raw).isdigit():
            self.notice = f"run={raw!r} refused: a stored run is named by its number (Runs → Stored runs lists them)"
            return
        if self.session.run_id == int(raw):  # a page that took back its own run (a reload): it is shown already
            return
        self.open_stored_run(int(raw))

    def open_stored_run(self, run_id: int) -> None:
        """Show stored run `run_id` on the Training page (a click on a run of the Compare page)."""
        self._refresh_runs()
        if run_id in self.runs_select.options.values():
            self.runs_select.value = run_id
        if hasattr(self, "pages"):
            self.pages.active = 0
        self.status.param.update(state=PageState.BUILDING, message=f"opening stored run {run_id}…", tone="info")
        self.session.open_run(run_id)

    def _adopt(self, config: RunConfig) -> None:
        """Show an opened run's settings in the controls (without asking for a Reset)."""
        self._applying_run_config = True
        try:
            self.settings.model = config.model
            for section, values in (("data", config.data), ("model", config.model_config), ("train", config.train)):
                obj = self.settings.section(section)
                obj.param.update(**{k: v for k, v in values.items() if k in obj.param and k != "name"})
            self._rebuild_model_controls()
        finally:
            self._applying_run_config = False
        self.notice = ""
        self._status_from_settings()  # the opened run's learning rate and steps, as its boxes now say
        self._update_location()

    def _refresh_runs(self) -> None:
        if self.store is None:
            return
        try:
            runs = self.store.list_runs(limit=100)
        except InvlabError as err:
            self.notice = str(err)
            return
        except sqlite3.Error as err:
            self._store_problem(f"the run store {self.store.path} cannot be read ({type(err).__name__}: {err}); it "
                                "was left untouched: move it aside (or point INVLAB_DATA elsewhere) and restart the "
                                "server to start a new store")
            return
        by = (lambda r: f" ({r.owner})" if r.owner else "") if self.admin else (lambda r: "")
        def label(r) -> str:  # a watched loop's run by its own name first
            named = f"{r.name}: " if r.name else ""
            return f"#{r.id} {named}{r.model} on {r.dataset} — {r.status}, step {r.step}{by(r)}"

        self.runs_select.options = {label(r): r.id for r in runs}
