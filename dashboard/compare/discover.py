"""The Compare page's Discover study: which invariances does this data have?

A data box (the Training page's data by default, or any data set the page may read), the candidate invariances that
apply to it (ticked by default), seeds and steps, and ▶ Discover. The candidates train on Dask as one stored sweep
(`invlab.sweeps.discover.run_candidates` on a `DiscoverRunner` thread), and the ranking by whole-training-set ELBO
(`invlab.sweeps.discover_report`) fills in as each run is stored: mean ± sd over seeds, the log Bayes factor against
none, learned ranges, test figures, the verdict and notes. A click opens a candidate's run on the Training page; the
report downloads as the HTML file `invlab discover` writes. By job: the form is discover_form.py, following the
running study discover_follow.py, the ranking and what goes with it discover_table.py (its rows discover_ranking.py);
this module holds the three and starts the study. After van der Wilk, Bauer, John & Hensman, "Learning
Invariances using the Marginal Likelihood" (NeurIPS 2018, arXiv:1808.05563)."""
from __future__ import annotations

import pandas as pd
import panel as pn
import param

from invlab.dashboard.compare.context import CompareContext
from invlab.dashboard.compare.discover_follow import DiscoverFollower
from invlab.dashboard.compare.discover_form import DEFAULT_SEEDS, DiscoverForm
from invlab.dashboard.compare.discover_ranking import COLUMNS
from invlab.dashboard.compare.discover_table import DiscoverTable
from invlab.dashboard.compare.runner import DiscoverRunner
from invlab.errors import ConfigError, InvlabError
from invlab.sweeps.discover import check_scheduler, create_sweep
from invlab.train.states import StudyState

HEADING = (
    "### Discover: which invariances does this data have?\n"
    "One invariant GP per candidate symmetry, each with the same kernel, inducing points, likelihood and training "
    "budget, ranked by the ELBO over the whole training set (a lower bound on the log marginal likelihood): the "
    "difference from **none** (no invariance) estimates the log Bayes factor. Learned ranges end where the data "
    "supports them. Click a candidate to open its run on the Training page."
)


def check_dask(scheduler: str | None, dataset: str) -> None:
    """Refuse ▶ Discover before anything is stored where Dask distributed is not installed: the page trains the
    study on Dask only, so the refusal says what works instead (installing the extra, or the command line's
    `--serial`, which trains in one process), then the `scheduler` address must answer as Dask."""
    from invlab.sweeps.scheduler import require_dask

    try:
        require_dask()
    except ConfigError:
        raise ConfigError("Discover trains its candidates on Dask distributed, which is not installed on this "
                          "server: install it with pip install 'invariance-lab[sweeps]' and restart the dashboard, "
                          f"or run the study from a terminal with `invlab discover --dataset {dataset} --serial` (one "
                          "run after another in one process, no Dask needed). Nothing was stored.") from None
    check_scheduler(scheduler)


class DiscoverStudy(pn.viewable.Viewer):
    """The Discover study of the Compare page (see the module's doc): its form (`form`), the running study it
    follows (`follower`) and its ranking (`table`), handed the page's `context` (a `CompareContext`: the Training
    page's data, the store, where the runs train). `data_choices()`: the data sets the data box offers."""

    sweep_id = param.Integer(default=None, allow_None=True, doc="The study's sweep shown (its id in the run store).")
    state = param.Selector(default=StudyState.IDLE, objects=StudyState.values(), doc="What the study shown is doing.")
    message = param.String(default="", doc="Progress, or what went wrong, in words.")

    def __init__(self, context: CompareContext, *, data_choices=None):
        super().__init__()
        self.context = context
        self.form = DiscoverForm(context, data_choices=data_choices)
        self.follower = DiscoverFollower(self, context)
        self.table = DiscoverTable(self, context, self.form.show_error)
        self.form.param.watch(lambda *_: self.find_candidates(), "data_picked")
        self.form.param.watch(lambda *_: self.start(), "start")
        self.follower.param.watch(lambda *_: self._stored(), "stored")
        self.follower.param.watch(lambda *_: self._ended(), "ended")

    def refresh(self) -> None:
        """Follow the Training page's data set (until one is chosen here) and list the candidates that apply (not
        while the study runs: its candidates stay listed)."""
        if self.running():
            return
        self.form.follow()
        self.find_candidates()

    def find_candidates(self) -> None:
        """List, ticked, the candidate invariances that apply to the data box's data, and say why the others do not;
        data that cannot be read, or to which no candidate applies, says so under the form."""
        if self.running():
            return  # the running study's candidates stay listed
        try:
            self.table.plan = self.form.plan()
        except (InvlabError, ValueError) as err:
            self.table.plan = None
            self.form.show_error(str(err))
        else:
            self.form.show_error("")
        self.form.show_candidates(self.table.plan)

    def start(self) -> None:
        """Train the ticked candidates (and none) over the seeds, as one stored sweep on Dask; the ranking fills in as
        runs are stored. A bad form, unreadable data or an unreachable scheduler says so under the form."""
        refused = self.context.busy(asking=None)
        store = self.context.store
        if refused or store is None:
            self.form.show_error(refused or "this page has no run store to keep the study's runs in")
            return
        if not self.form.candidates.value and not self.form.group.value:
            self.form.show_error("tick at least one candidate invariance: none alone has nothing to be compared with")
            return
        try:
            plan = self.form.plan(orbits=self.form.orbits())  # the ticked candidates and a group of columns
            scheduler, shared = self.context.where_runs_train()  # an address the page may not choose: not contacted
            check_dask(scheduler, str(plan.data.get("dataset", "DATA")))
            sweep_id = create_sweep(plan, store)
        except (InvlabError, ValueError, TypeError) as err:
            self.form.show_error(str(err))
            return
        self.form.show_error("")
        self.table.plan, self.table.report = plan, None
        self.param.update(sweep_id=sweep_id, state=StudyState.STARTING,
                          message=f"{len(plan.candidates)} candidates × {len(plan.spec.seeds)} seeds, "
                                  f"{int(self.form.steps.value)} steps each: starting Dask workers…")
        self.follower.start(DiscoverRunner(plan, store, sweep_id, scheduler=scheduler,
                                           n_workers=self.context.n_workers or None, shared=shared))
        self.form.start_button.disabled = True
        self.table.download.visible = False
        self.table.draw(running=True)

    def stop(self) -> None:
        """Stop the study: runs in progress are abandoned; what finished is kept and ranked (the report is partial)."""
        self.follower.stop()

    def running(self) -> bool:
        """Whether the study's runs are training."""
        return self.follower.running()

    def tick(self) -> None:
        """The periodic update: rank the runs stored since the last tick (`DiscoverFollower.tick`)."""
        self.follower.tick()

    def _stored(self) -> None:
        self.table.read(self.sweep_id)
        self.table.draw(self.running())

    def _ended(self) -> None:
        self.form.start_button.disabled = False
        report = self.table.report
        if self.state != StudyState.FAILED and not self.message and report is not None:
            self.message = f"{report.stored} of {report.total} runs stored"

    def close(self) -> None:
        """The browser session ended: stop following and stop the study (finished runs stay stored)."""
        self.follower.close()

    def show(self, sweep_id: int) -> bool:
        """Show stored discover sweep `sweep_id`'s ranking; False (with the reason under the form) when it is not one
        or cannot be read."""
        runner = self.follower.runner
        if self.running():
            if runner.sweep_id == int(sweep_id):
                return True
            self.form.show_error(self.follower.busy_words)
            return False
        if self.context.store is None or not self.table.read(int(sweep_id)):
            return False
        self.follower.forget()
        self.table.plan = None
        report = self.table.report
        self.param.update(sweep_id=int(sweep_id), state=StudyState.STOPPED if report.partial else StudyState.FINISHED,
                          message=f"{report.stored} of {report.total} runs stored")
        self.form.show_error("")
        self.table.draw(running=False)
        return True

    def rows(self) -> pd.DataFrame:
        """The ranking: one row per candidate, best first; candidates with no stored run yet after them."""
        return self.table.rows(self.running())

    def __panel__(self):
        form = self.form
        # rows that wrap: on a tablet the buttons go under the boxes instead of past the screen's edge
        boxes = pn.FlexBox(pn.Column(form.data_box, form.data_words), form.seeds, form.steps, form.start_button,
                           self.follower, align_items="flex-start", sizing_mode="stretch_width")
        return pn.Column(pn.pane.Markdown(HEADING, sizing_mode="stretch_width"), boxes,
                         pn.pane.Markdown("**Candidates** (untick any to leave it out)", margin=(0, 10)),
                         form.candidates, form.group, form.candidate_words, form.error, self.table,
                         sizing_mode="stretch_width", name="Discover", css_classes=["invlab-discover"])


__all__ = ["COLUMNS", "DEFAULT_SEEDS", "HEADING", "DiscoverStudy"]
