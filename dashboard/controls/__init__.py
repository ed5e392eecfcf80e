"""The sidebar's controls, built from the engine's param configs: one `ParamControl` per parameter (`param_control`),
the Data, Model and Optimisation tabs (`groups`), a learnable value's control (`learned`), the Data tab's task (`task`)
and the number boxes' explanations (`number_guard`)."""
from invlab.dashboard.controls.groups import ControlGroup
from invlab.dashboard.controls.learned import LearnedValueControl
from invlab.dashboard.controls.number_guard import NumberBoxGuard
from invlab.dashboard.controls.param_control import ParamControl
from invlab.dashboard.controls.task import TaskControl

__all__ = ["ControlGroup", "LearnedValueControl", "NumberBoxGuard", "ParamControl", "TaskControl"]
