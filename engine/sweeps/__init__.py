"""Sweeps: vary any config parameter by its dotted name over a grid or list, times seeds, run every run as a task on
Dask distributed (a LocalCluster by default, or an existing cluster), store them all, and compare them by the
whole-training-set ELBO (only within the same data, likelihood and estimator).

    from invlab.sweeps import SweepSpec, run_sweep, comparison, study
    spec = study("rotation-choice", quick=True)
    sweep_id = run_sweep(spec, store=RunStore(), progress=print)
    cmp = comparison(store, sweep_id)

Which invariances does a data set have (`invlab discover`): plan the candidates for a data config, run them (each
stored run reported through a callback), and rank what finished:

    plan = plan_candidates({"dataset": "digits", "rotate": 90}, seeds=3)
    sweep_id = run_candidates(plan, store, on_result=lambda candidate, seed, run_id, status, message: ...)
    report = discover_report(store, sweep_id)       # report.ranking, report.verdict, report.to_dict()
"""
from .compare import Comparison, comparison
from .discover import DiscoverPlan, plan_candidates, run_candidates
from .discover_report import DiscoverReport, discover_report
from .execute import SweepProgress, run_sweep
from .spec import PlannedRun, SweepSpec
from .studies import STUDIES, study

__all__ = ["SweepSpec", "PlannedRun", "run_sweep", "SweepProgress", "comparison", "Comparison", "STUDIES", "study",
           "DiscoverPlan", "plan_candidates", "run_candidates", "DiscoverReport", "discover_report"]
