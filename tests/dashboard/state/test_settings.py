"""RunSettings, the page's one source of truth: URL round trips for every family, short links, family switches."""
import json

import pytest
from panel.util import parse_query

from invlab.dashboard.state.settings import RunSettings, describe_difference, family_defaults
from invlab.models import get_model, model_names
from invlab.train import RunConfig


def edited(settings: RunSettings) -> None:
    """Change one setting of each section away from its default, as a user would."""
    settings.data.seed = 7
    settings.train.batch_size = 48
    config = settings.model_config
    for name in config.param:
        p = config.param[name]
        if name != "name" and type(p).__name__ == "Integer" and p.bounds and p.bounds[1] is not None \
                and p.bounds[1] - (p.bounds[0] or 0) >= 2:
            setattr(config, name, (p.bounds[0] or 0) + 1 if getattr(config, name) != (p.bounds[0] or 0) + 1
                    else (p.bounds[0] or 0) + 2)
            return


@pytest.mark.parametrize("family", model_names())
def test_every_family_round_trips_through_the_url(family):
    a = RunSettings()
    a.model = family
    edited(a)
    query = a.query_string()
    b = RunSettings()
    assert b.apply_query(parse_query(query)) == []
    assert json.loads(b.run_config().to_json()) == json.loads(a.run_config().to_json())
    assert type(b.model_config) is get_model(family).config


@pytest.mark.parametrize("family", model_names())
def test_a_familys_page_defaults_make_an_empty_link_but_its_name(family):
    s = RunSettings(RunConfig(model=family, data={}))
    assert s.to_query() == ({"model": family} if family != "svgp" else {})
    switched = RunSettings()
    switched.model = family  # data the user did not touch follows the family: its own showcase
    assert switched.to_query() == ({} if family == "svgp" else {"model": family})
    kept = RunSettings()
    kept.data.rotate = 30.0
    kept.model = family  # data the user chose stays, where the family can use it
    if family_defaults(family)["data"].get("dataset", "digits") == "digits" or family in ("rkhs",):
        assert kept.data.rotate == 30.0 and kept.data.dataset == "digits"
    RunConfig(model=family, data=s.run_config().data, model_config=s.run_config().model_config,
              train=s.run_config().train).validate()  # the page's defaults are valid settings


def test_a_link_holds_only_what_differs_and_stays_short():
    s = RunSettings()
    s.model = "invariant"
    s.model_config.init_rotation = 30.0
    s.train.learning_rate = 0.02
    assert s.to_query() == {"model": "invariant", "model.init_rotation": "30", "train.learning_rate": "0.02"}
    assert len(s.query_string()) < 80


def test_switching_family_keeps_the_data_and_the_users_rate_but_follows_the_optimisers_default():
    s = RunSettings()
    s.data.rotate = 90.0
    s.model = "rkhs"  # L-BFGS: its own default step
    assert s.train.learning_rate == family_defaults("rkhs")["train"]["learning_rate"] == 1.0
    assert s.data.rotate == 90.0
    s.model = "svgp"
    assert s.train.learning_rate == 0.01
    s.train.learning_rate = 0.05  # the user's choice survives a switch
    s.model = "invariant"
    assert s.train.learning_rate == 0.05


def test_a_family_that_cannot_use_the_data_gets_data_it_can_use():
    s = RunSettings()
    s.data.dataset = "diabetes"  # tabular regression
    s.model = "conv-weighted"  # images only
    spec = get_model("conv-weighted")
    from invlab.data.sources import resolve

    source = resolve(s.data.dataset)
    assert source.kind == "image" and source.task in spec.tasks


def test_refused_link_values_are_reported_and_the_rest_applies():
    s = RunSettings()
    problems = s.apply_query({"model": "invariant", "data.subset": -5, "train.learning_rate": "abc",
                              "model.init_rotation": 40, "bogus": 1, "model.nonsense": 2})
    assert len(problems) == 4
    assert any("data.subset" in p for p in problems) and any("learning_rate" in p for p in problems)
    assert any("bogus" in p for p in problems) and any("nonsense" in p for p in problems)
    assert s.model == "invariant" and s.model_config.init_rotation == 40.0
    assert s.data.subset == 0 and s.train.learning_rate == 0.01  # the refused values left the settings alone


def test_changes_reach_listeners_once_per_change_including_after_a_family_switch():
    s = RunSettings()
    seen = []
    s.on_change(lambda events: seen.extend((e.name, e.new) for e in events))
    s.model = "invariant"
    s.model_config.init_rotation = 20.0  # the new family's config is watched
    s.data.rotate = 10.0
    assert ("model", "invariant") in seen and ("init_rotation", 20.0) in seen and ("rotate", 10.0) in seen
    before = len(seen)
    s.model = "svgp"
    s.model_config.num_inducing = 12
    assert ("num_inducing", 12) in seen[before:]


def test_previous_runs_are_labelled_by_what_differs():
    a = RunConfig(model="svgp", train={"learning_rate": 0.1})
    b = RunConfig(model="svgp", train={"learning_rate": 0.01})
    assert describe_difference(a, b) == "lr 0.1"
    c = RunConfig(model="invariant", data={"dataset": "digits", "rotate": 90.0})
    d = RunConfig(model="svgp", data={"dataset": "digits", "rotate": 90.0})
    assert describe_difference(c, d) == "invariant"
    assert describe_difference(a, a) == "same settings"


def test_a_setting_changed_while_a_run_went_on_is_labelled_by_its_course():
    a = RunConfig(model="svgp", train={"learning_rate": 0.03})
    b = RunConfig(model="svgp", train={"learning_rate": 0.01})
    changed = [(12, "train.learning_rate", 0.01)]
    assert describe_difference(a, b, changes=changed) == "lr 0.03→0.01 at step 12"
    # changed mid-run and the new run starts from the old value: the old run still differed
    assert describe_difference(a, a, changes=changed) == "lr 0.03→0.01 at step 12"
    # changed and changed back to the new run's value all along: nothing differed
    assert describe_difference(b, b, changes=[(3, "train.learning_rate", 0.01)]) == "same settings"


def test_a_switch_keeps_training_settings_the_user_chose():
    s = RunSettings()
    s.train.batch_size = 100  # a lesson's or a user's choice, not the page's default
    s.model = "invariant"
    assert s.train.batch_size == 100
    t = RunSettings()
    t.model = "invariant"  # untouched: the new family's page default
    assert t.train.batch_size == family_defaults("invariant")["train"].get("batch_size", 256)
