"""The Deep kernel prior page: `PriorPanel` over the engine's `PriorExplorer` (`page`) and its plots, drawn once and
updated in place (`plots`)."""
from invlab.dashboard.prior.page import PriorPanel

__all__ = ["PriorPanel"]
