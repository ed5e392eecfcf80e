"""Sweeps: vary any config parameter by its dotted name over a grid or list, times seeds, run every run as a task on
Dask distributed (a LocalCluster by default, or an existing cluster), store them all, and compare them by the
whole-training-set ELBO (only within the same data, likelihood and estimator).

    from engine.sweeps import SweepSpec, run_sweep, comparison, study
    spec = study("rotation-choice", quick=True)
    sweep_id = run_sweep(spec, store=RunStore(), progress=print)
    cmp = comparison(store, sweep_id)
"""
from .compare import Comparison, comparison
from .execute import SweepProgress, run_sweep
from .spec import PlannedRun, SweepSpec
from .studies import STUDIES, study

__all__ = ["SweepSpec", "PlannedRun", "run_sweep", "SweepProgress", "comparison", "Comparison", "STUDIES", "study"]
