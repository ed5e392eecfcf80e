"""The resume policy lives in the engine (`invlab.train.resume`): a resumed run may take more steps or another
learning rate, but not another model, data, optimiser or seed (those need a new run, `restart_config`), and a step
total below its newest checkpoint is refused before anything is stored. `invlab train --resume` says the same in
flags (tests/train/test_resume.py)."""
from __future__ import annotations

import pytest

from invlab.errors import ConfigError
from invlab.train import FIXED_ON_RESUME, RunConfig, plan_resume, restart_config
from invlab.train.resume import refuse_steps_behind

STORED = RunConfig(model="svgp", data={"dataset": "digits", "subset": 200}, model_config={"num_inducing": 20},
                   train={"steps": 100, "learning_rate": 0.01, "seed": 0})


def test_training_settings_that_keep_the_saved_state_are_allowed():
    plan = plan_resume(STORED, model="svgp", data={"subset": 200}, model_config={"num_inducing": 20},
                       train={"steps": 300, "learning_rate": 0.005, "seed": None})
    assert plan.allowed and plan.train == {"steps": 300, "learning_rate": 0.005}


def test_a_new_model_data_optimiser_or_seed_is_refused_naming_each():
    plan = plan_resume(STORED, model="invariant", data={"subset": 100, "source_options": {"a": 1}},
                       model_config={"num_inducing": 30}, train={"seed": 3, "optimizer": "lbfgs", "steps": 200})
    assert not plan.allowed
    assert plan.refused == [("model", "svgp", "invariant"), ("data.subset", 200, 100),
                            ("data.source_options", {}, {"a": 1}), ("model.num_inducing", 20, 30),
                            ("train.seed", 0, 3), ("train.optimizer", "auto", "lbfgs")]
    assert plan.train == {"steps": 200} and set(FIXED_ON_RESUME) == {"optimizer", "seed"}


def test_a_restart_is_the_stored_settings_with_the_new_values():
    config = restart_config(STORED, data={"subset": 100}, model_config={"num_inducing": 30}, train={"seed": 3})
    assert config.model == "svgp" and config.data == {"dataset": "digits", "subset": 100}
    assert config.model_config == {"num_inducing": 30} and config.train["seed"] == 3 and config.train["steps"] == 100
    assert STORED.data["subset"] == 200  # the stored run's settings are left as they were


def test_a_total_below_the_checkpoint_it_continues_from_is_refused():
    refuse_steps_behind(1, 60, 60)  # at the checkpoint: allowed (evaluated, marked finished)
    refuse_steps_behind(1, None, 60)
    with pytest.raises(ConfigError, match="already at step 60, past --steps 50.*--steps 110"):
        refuse_steps_behind(1, 50, 60)
