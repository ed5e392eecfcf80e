"""The control tabs of the Training page's sidebar (Data, Model, Optimisation): each a `ControlGroup` of
`ParamControl`s (`invlab.dashboard.controls.param_control`) over one param object's parameters."""
from __future__ import annotations

import panel as pn
import param

from invlab.dashboard.controls.param_control import ParamControl
from invlab.dashboard.state.field_kinds import DATA_PARAMS, OPTIMISATION_PARAMS
from invlab.data import list_datasets


class ControlGroup(pn.Column):
    """The controls of some parameters of one param object, as one tab (`name` is the tab's title).

    A `pn.Column` of `ParamControl`s, so a tab or a layout holding it keeps it (and `controls` by name)."""

    def __init__(self, obj: param.Parameterized, names, *, name: str, options: dict | None = None,
                 scales: dict | None = None, **params):
        controls = {n: ParamControl(obj, n, options=(options or {}).get(n), scale=(scales or {}).get(n))
                    for n in names}
        super().__init__(*controls.values(), name=name, **{"margin": (5, 0), **params})
        self.obj = obj
        self.controls: dict[str, ParamControl] = controls

    @property
    def _widgets(self) -> dict[str, ParamControl]:  # what pn.Param offered under this name
        return self.controls

    def close(self) -> None:
        """Stop following the param object (the group is being replaced, e.g. by another family's)."""
        for control in self.controls.values():
            control.close()


def param_controls(obj: param.Parameterized, names=None, *, name: str = "", **kwargs) -> ControlGroup:
    """Controls for `names` (default: every parameter but `name`) of any param object."""
    names = [p for p in obj.param if p != "name"] if names is None else list(names)
    return ControlGroup(obj, names, name=name, **kwargs)


def data_controls(data: param.Parameterized, choices: list[str] | None = None) -> ControlGroup:
    """The Data tab; `choices`: what the data box offers (default: the bundled datasets)."""
    return ControlGroup(data, DATA_PARAMS, name="Data", options={"dataset": choices or list_datasets()})


def model_controls(model_config: param.Parameterized) -> ControlGroup:
    """The Model tab's controls, built from the family's config parameters."""
    return param_controls(model_config, name="Model")


def optimisation_controls(train: param.Parameterized) -> ControlGroup:
    """The Optimisation tab's controls, built from the training config's parameters."""
    return ControlGroup(train, OPTIMISATION_PARAMS, name="Optimisation")
