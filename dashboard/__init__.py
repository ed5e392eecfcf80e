"""The Invariance Lab dashboard: `Explorer()` in a notebook cell, or `panel serve dashboard/app.py`."""
from .explorer import Explorer
from .session import TrainingSession

__all__ = ["Explorer", "TrainingSession"]
