"""The Invariance Lab dashboard: `Explorer()` in a notebook cell, or `panel serve dashboard/app.py`."""
from invlab.dashboard.explorer.explorer import Explorer
from invlab.dashboard.session.training import TrainingSession

__all__ = ["Explorer", "TrainingSession"]
