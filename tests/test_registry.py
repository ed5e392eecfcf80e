"""`invlab.registry.Registry`, on a private registry and config class (the engine's own are not touched): a
registered part becomes a choice of every attached selector (subclasses too), its own constructor arguments become
settings with flags, prefixed by the part's name only where the name is taken, and a second part under a taken
name is refused naming both."""
from __future__ import annotations

import argparse

import param
import pytest

from invlab.cli.flags import add_param_flags
from invlab.errors import ConfigError
from invlab.registry import Registry


def fresh():
    reg = Registry("kernel", contract=("input_dim", "lengthscale", "variance", "ard"))

    class Params(param.Parameterized):
        kernel = param.Selector(default="base", objects=["base"])
        degree = param.Integer(default=2)

    class Family(Params):
        kernel = param.Selector(doc="the family's kernel")
        other = param.Number(default=1.0)

    reg.attach(Params, "kernel")
    return reg, Params, Family


def flags_of(cls) -> list[str]:
    parser, table = argparse.ArgumentParser(), {}
    add_param_flags(parser, cls, "model", table)
    return sorted(f"--{flag}" for flag in table)


def test_a_registered_part_is_a_choice_of_the_selector_and_of_its_subclasses():
    reg, Params, Family = fresh()

    @reg.register("rq")
    def rq(input_dim, lengthscale=1.0, variance=1.0, ard=False):
        return "built"

    assert Params.param.kernel.objects[-1] == "rq" and Family.param.kernel.objects[-1] == "rq"
    assert Family(kernel="rq").kernel == "rq"
    assert reg.build("rq", 3) == "built"


def test_own_arguments_become_settings_with_flags_and_are_read_back():
    reg, Params, Family = fresh()

    @reg.register("rq")
    def rq(input_dim, lengthscale=1.0, variance=1.0, ard=False, alpha=1.0, exact=False):
        return alpha, exact

    assert "--alpha" in flags_of(Family) and "--exact" in flags_of(Family)
    assert isinstance(Family.param.alpha, param.Number) and isinstance(Family.param.exact, param.Boolean)
    config = Family(kernel="rq", alpha=2.5)
    assert reg.options_of("rq", config) == {"alpha": 2.5, "exact": False}
    assert reg.build("rq", 3, **reg.options_of("rq", config)) == (2.5, False)


def test_a_clashing_argument_is_prefixed_with_the_parts_name():
    reg, Params, Family = fresh()

    @reg.register("rq")
    def rq(input_dim, lengthscale=1.0, variance=1.0, ard=False, alpha=1.0):
        return alpha

    @reg.register("other_rq")
    def other_rq(input_dim, lengthscale=1.0, variance=1.0, ard=False, alpha=3.0, other=0.5):
        return alpha, other

    flags = flags_of(Family)
    assert "--alpha" in flags and "--other-rq-alpha" in flags and "--other-rq-other" in flags
    config = Family(kernel="other_rq", other_rq_alpha=4.0)
    assert reg.build("other_rq", 3, **reg.options_of("other_rq", config)) == (4.0, 0.5)
    assert reg.options_of("rq", config) == {"alpha": 1.0}


def test_an_argument_mapped_to_an_existing_setting_adds_nothing():
    reg, Params, Family = fresh()
    before = flags_of(Family)

    @reg.register("poly", options={"degree": "degree"})
    def poly(input_dim, lengthscale=1.0, variance=1.0, ard=False, degree=2):
        return degree

    assert flags_of(Family) == before
    assert reg.build("poly", 3, **reg.options_of("poly", Family(kernel="poly", degree=4))) == 4


def test_a_taken_name_is_refused_naming_both_and_nothing_changes():
    reg, Params, Family = fresh()

    @reg.register("rq", builtin=True)
    def rq(input_dim, lengthscale=1.0, variance=1.0, ard=False):
        return 1

    def mine(input_dim, lengthscale=1.0, variance=1.0, ard=False, beta=1.0):
        return 2

    with pytest.raises(ConfigError, match=r"kernel name 'rq' is taken by the built-in kernel .*\.rq; register "
                                          r".*\.mine under another name"):
        reg.register("rq")(mine)
    assert reg.build("rq", 3) == 1 and "beta" not in Family.param
    reg.register("rq", builtin=True)(rq)  # the same function again (a module imported twice) is no clash


def test_an_argument_without_a_default_is_refused_by_name():
    reg, *_ = fresh()

    def needs(input_dim, lengthscale=1.0, variance=1.0, ard=False, *, alpha):
        return alpha

    with pytest.raises(ConfigError, match="constructor argument 'alpha' needs a default value"):
        reg.register("needs")(needs)
    assert "needs" not in reg.names()


def test_the_contracts_arguments_reach_the_part_and_other_settings_do_not():
    reg, *_ = fresh()
    reg.register("rq")(lambda input_dim, lengthscale=1.0, variance=1.0, ard=False: (input_dim, lengthscale, ard))
    assert reg.build("rq", 3, lengthscale=0.5, ard=True, num_inducing=10) == (3, 0.5, True)


def test_the_engines_kernels_get_their_initial_hyper_parameters():
    from invlab.kernels import build_kernel

    k = build_kernel("matern52", 4, lengthscale=0.5, variance=2.0, ard=True, degree=3)
    assert all(abs(v - 0.5) < 1e-12 for v in k.lengthscale().tolist()) and abs(float(k.variance()) - 2.0) < 1e-12


def test_an_unknown_name_lists_the_registered_ones():
    reg, *_ = fresh()
    reg.register("rq")(lambda input_dim, lengthscale=1.0, variance=1.0, ard=False: 0)
    with pytest.raises(ConfigError, match="unknown kernel 'nope'; choose one of rq"):
        reg.get("nope")
