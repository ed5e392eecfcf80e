"""The Compare page: runs compared by the marginal likelihood, which chooses the invariance (van der Wilk, Bauer, John
& Hensman, "Learning Invariances using the Marginal Likelihood", 2018, arXiv:1808.05563).

Its Discover study (`discover.DiscoverStudy`, `?page=compare&discover=ID`) ranks the candidate invariances of a
data set as they train. A sweep is many runs that differ in one or more settings and the seed (`invlab.sweeps`).
This page

- launches one from the Training page's current settings (a setting, its values, a number of seeds), runs a
  built-in study (`invlab.sweeps.STUDIES`), or opens a stored one (`?page=compare&sweep=ID`);
- runs it through `run_sweep` on a background thread (`SweepRunner`): Dask does the training, the thread only
  waits and collects progress, and the page's periodic tick (the same pattern as the Training page's live
  feed) drains that progress into the page on the server's event loop, so the page never waits for a run;
- shows a sortable, filterable table of the runs, filled in as they run and finish; the whole-data ELBO and the
  test error against the swept setting (mean ± sd over seeds); the ELBO curves of all runs grouped by the setting's
  value; and, when the setting is an invariance range, a line where each learned-range run's range ended;
- says, visibly, when the runs cannot be compared on one axis (other data, likelihood or estimator).


The package, by job: `data` shapes a sweep's comparison into the table's and the plots' values, `plots` draws them,
`runner` runs the sweep (or the study) on its background thread, `discover` is the Discover study (its form,
follower and table in `discover_form`, `discover_follow` and `discover_table`), `form` is the form that describes a
sweep (`SweepForm`), `live` starts, opens, follows and draws the sweep shown (`SweepFollowing`), `context` is what
the parts share and ask of the page (`CompareContext`, with `param.Event`s), `words` the words shown for each state,
and `page` is the page itself, which holds them.
"""
from __future__ import annotations

from invlab.dashboard.compare.discover import DiscoverStudy
from invlab.dashboard.compare.page import ComparePage
from invlab.dashboard.compare.runner import SweepRunner

__all__ = ["ComparePage", "DiscoverStudy", "SweepRunner"]
