"""Controls built from the param configs, without a browser: scale and range per kind of parameter across every
family, refused values explained with the field put back, the widgets following the config, learned values."""
import math

import panel as pn
import param
import pytest

from invlab.dashboard.controls.groups import data_controls, model_controls, optimisation_controls, param_controls
from invlab.dashboard.controls.learned import LearnedValueControl
from invlab.dashboard.controls.param_control import ParamControl
from invlab.data import DataConfig, list_datasets
from invlab.models import REGISTRY
from invlab.models.base import Tunable
from invlab.train.config import TrainConfig

SCALES = {"variance", "kernel_variance", "noise_variance", "rbf_variance", "lengthscale", "rbf_lengthscale", "sigma",
          "delta", "gamma", "output_precision", "learning_rate", "jitter", "init_regulariser", "lam"}


def all_configs():
    yield "data", DataConfig()
    yield "train", TrainConfig()
    for name, spec in REGISTRY.items():
        yield name, spec.config()


@pytest.mark.parametrize("family,config", list(all_configs()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_parameter_gets_a_widget_on_its_natural_scale(family, config):
    group = param_controls(config, name=family)
    for name, control in group.controls.items():
        p = config.param[name]
        value = getattr(config, name)
        where = f"{family}.{name}"
        if isinstance(p, param.Boolean):
            assert isinstance(control.box, pn.widgets.Checkbox), where
        elif isinstance(p, param.Selector):
            assert isinstance(control.box, pn.widgets.Select) and list(control.box.options) == list(p.objects), where
        elif isinstance(p, param.Integer):
            lo, hi = p.bounds or (None, None)
            if name == "seed" or hi is None or (hi + 1) / (max(lo or 0, 0) + 1) >= 100:
                # seeds and counts spanning decades are typed; no start/end, so −5 reaches the parameter
                assert isinstance(control.box, pn.widgets.IntInput), where
                assert control.box.start is None and control.box.end is None, where
            else:
                assert isinstance(control.box, pn.widgets.IntSlider), where
                assert (control.box.start, control.box.end) == (lo, hi), where
            assert control.box.value == control._boxed(value), where  # a subset's 0: empty, under "all"
        elif isinstance(p, param.Number):
            assert isinstance(control.box, pn.widgets.FloatInput), where
            assert control.box.value == value, where  # the exact value: 0.001 is shown as 0.001, never 0
            assert control.box.start is None and control.box.end is None, where  # refused in Python, not clamped
            if p.allow_None:
                assert control.box.placeholder == "auto", where
            lo, hi = p.softbounds if p.softbounds and None not in p.softbounds else (p.bounds or (None, None))
            if lo is not None and hi is not None and lo > 0 and hi / lo >= 1e3:
                assert control.kind == "log-slider", where
                assert control.slider.start == pytest.approx(math.log10(lo)), where
                assert control.slider.end == pytest.approx(math.log10(hi)), where
                if value is not None:
                    assert control.slider.value == pytest.approx(math.log10(value)), where
            elif lo is not None and hi is not None:
                assert control.kind == "linear-slider", where
                assert lo <= control.slider.start < control.slider.end <= hi, where
            else:
                assert control.kind == "number-box" and control.slider is None, where
            if name in SCALES and lo is not None and hi is not None:
                assert control.kind == "log-slider", f"{where} is a scale: it belongs on a log slider"
        elif isinstance(p, param.List):
            assert isinstance(control.box, pn.widgets.TextInput), where


def test_named_quantities_sit_where_a_lecturer_expects_them():
    svgp = model_controls(REGISTRY["svgp"].config()).controls
    variance = svgp["variance"]  # 1e-6..1e4: 1 sits at 60 % of the slider, not at its far left
    share = (variance.slider.value - variance.slider.start) / (variance.slider.end - variance.slider.start)
    assert 0.5 < share < 0.7
    assert svgp["epsilon"].box.value == 0.001 and svgp["epsilon"].kind == "log-slider"
    data = data_controls(DataConfig()).controls
    rotate = data["rotate"]
    assert rotate.kind == "linear-slider" and (rotate.slider.start, rotate.slider.end) == (0, 180)
    assert isinstance(data["seed"].box, pn.widgets.IntInput)
    assert list(data["dataset"].box.options) == list_datasets()
    train = optimisation_controls(TrainConfig()).controls
    assert isinstance(train["seed"].box, pn.widgets.IntInput)
    assert train["jitter"].kind == "log-slider" and train["jitter"].slider.value == pytest.approx(-6)
    dkp = model_controls(REGISTRY["diwp"].config()).controls
    assert dkp["delta"].kind == "log-slider" and dkp["delta"].slider.value == pytest.approx(math.log10(50))
    inv = model_controls(REGISTRY["invariant"].config()).controls
    assert 0 <= inv["init_rotation"].slider.start and inv["init_rotation"].slider.end <= 180


@pytest.mark.parametrize("group,name,typed,allowed", [
    ("data", "classes", "abc", "whole numbers separated by commas"),
    ("data", "classes", "4, 9.5", "whole numbers separated by commas"),
    ("data", "subset", -5, "a whole number ≥ 0"),
    ("train", "learning_rate", -1.0, "a number from 1e-06 to 10"),
    ("train", "learning_rate", 1e6, "a number from 1e-06 to 10"),
    ("data", "test_fraction", 1.0, "not 1 itself"),
])
def test_a_refused_value_is_explained_and_the_field_returns_to_the_value_in_use(group, name, typed, allowed):
    config = DataConfig() if group == "data" else TrainConfig()
    controls = (data_controls if group == "data" else optimisation_controls)(config).controls
    control = controls[name]
    in_use = getattr(config, name)
    changes = []
    config.param.watch(changes.append, [name])
    control.box.value = typed  # what the browser sends when the user types and presses Enter
    assert getattr(config, name) == in_use and not changes  # the state never held the refused value
    assert allowed in control.error and control.label in control.error and control.message.visible
    assert "invlab-field-message" in control.message.object
    shown = control.box.value
    # the field shows the value in use (a subset's 0 as an empty box under "all")
    assert shown == (control._as_text(in_use) if control.kind == "list" else control._boxed(in_use))
    # an accepted value clears the message
    control.box.value = {"classes": "4, 9", "subset": 3, "test_fraction": 0.5}.get(name, 0.05)
    assert not control.error and not control.message.visible and not changes[-1].new == in_use


def test_widgets_follow_the_config_both_ways_without_echo():
    train = TrainConfig()
    lr = optimisation_controls(train).controls["learning_rate"]
    changes = []
    train.param.watch(changes.append, ["learning_rate"])
    train.learning_rate = 0.05  # from code, a link or a lesson preset
    assert lr.box.value == 0.05 and lr.slider.value == pytest.approx(math.log10(0.05))
    assert len(changes) == 1  # moving the widget did not write back
    lr.box.value = 0.002  # typed
    assert train.learning_rate == 0.002 and lr.slider.value == pytest.approx(math.log10(0.002)) and len(changes) == 2
    with param.edit_constant(lr.slider):  # a log slider released near 10^-1.5
        lr.slider.value_throttled = -1.5
    assert train.learning_rate == 0.0316 and lr.box.value == 0.0316 and len(changes) == 3
    # a refused value, then one from elsewhere: the stale message goes away
    lr.box.value = 1e6
    assert lr.error
    train.learning_rate = 0.01
    assert not lr.error and lr.box.value == 0.01


def test_an_empty_box_means_automatic_where_the_parameter_allows_none():
    config = REGISTRY["svgp"].config()
    lengthscale = model_controls(config).controls["lengthscale"]
    assert config.lengthscale is None and lengthscale.box.value is None and lengthscale.kind == "log-slider"
    lengthscale.box.value = 2.5
    assert config.lengthscale == 2.5 and lengthscale.slider.value == pytest.approx(math.log10(2.5))
    lengthscale.box.value = None  # cleared: back to "auto from the data"
    assert config.lengthscale is None and not lengthscale.error


def test_a_control_built_for_any_param_object():
    class Prior(param.Parameterized):
        delta = param.Number(20.0, bounds=(0.5, 1000.0))
        angle = param.Number(30.0, bounds=(0.0, 180.0))

    class Transforms(param.Parameterized):
        which = param.ListSelector(default=["tx"], objects=["tx", "ty", "rotation"])

    prior = Prior()
    delta = ParamControl(prior, "delta")
    assert delta.kind == "log-slider" and delta.slider.start == pytest.approx(math.log10(0.5))
    transforms = ParamControl(Transforms(), "which")
    assert isinstance(transforms.box, pn.widgets.MultiChoice) and transforms.box.value == ["tx"]
    transforms.box.value = ["tx", "rotation"]
    assert transforms.obj.which == ["tx", "rotation"]
    angle = ParamControl(prior, "angle")
    assert angle.kind == "linear-slider"
    angle.visible = False  # teacher mode
    assert not angle.layout.visible and not angle.visible


def tunable(**kw):
    base = dict(name="kernel.augmentation.rotation.half_width", label="rotation half-width", value=5.0, lo=0.01,
                hi=179.99, scale="linear", unit="°")
    base.update(kw)
    return Tunable(**base)


def test_learned_value_control_from_a_tunable():
    sent, frozen = [], []
    control = LearnedValueControl(tunable(), lambda n, v: sent.append((n, v)), lambda n, f: frozen.append((n, f)))
    assert control.control.label == "rotation half-width (°)"
    slider = control.control.slider
    assert control.control.kind == "linear-slider" and (slider.start, slider.end) == pytest.approx((0.01, 179.99))
    assert control.learn.value is True
    control.show(90.0)  # the model's value: shown, not sent back
    assert slider.value == 90.0 and control.control.box.value == 90.0 and not sent
    with param.edit_constant(slider):
        slider.value_throttled = 45.0  # released by the user
    assert sent == [("kernel.augmentation.rotation.half_width", 45.0)]
    control.show(90.0)  # a snapshot from before the set: not allowed to undo it on screen
    assert control.value == 45.0
    control.show(45.2)  # the model has it: shown from now on
    control.show(44.0)
    assert control.value == 44.0
    control.show(45.0)
    control.control.box.value = 200.0  # outside the interval: refused beside the field
    assert len(sent) == 1 and control.control.error and control.control.box.value == 45.0
    control.show(46.123456)  # the next tick: the model moved on; the message stays for the user to read
    assert control.control.error and control.control.box.value == 46.12 and len(sent) == 1
    control.learn.value = False
    assert frozen == [("kernel.augmentation.rotation.half_width", True)]
    control.show(500.0)  # beyond the interval: pinned to its end
    assert control.value == pytest.approx(179.99) and len(sent) == 1


def test_learned_value_on_a_log_scale():
    sent = []
    control = LearnedValueControl(tunable(name="kernel.variance", label="kernel variance", value=1.0, lo=1e-4, hi=1e4,
                                          scale="log", unit="", frozen=True),
                                  lambda n, v: sent.append(v), lambda *a: None)
    assert control.control.label == "kernel variance"
    assert control.control.kind == "log-slider" and control.control.slider.value == pytest.approx(0.0)
    assert control.learn.value is False
    with param.edit_constant(control.control.slider):
        control.control.slider.value_throttled = 2.0
    assert sent == [100.0]
