"""What resuming a stored run may change: the one resume policy, which `invlab train --resume` applies and a page
or a script can apply the same way.

A resumed run continues its own model, data, optimiser and random streams from its newest checkpoint, so only
training settings that do not change what was saved may differ (more steps, another learning rate, evaluation and
checkpoint intervals); the model family, a data or model setting, the optimiser and the seed would need a new run
(`restart_config`: the stored settings with the new values, the model family included, trained from step 0 as a
new run).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ConfigError
from .config import RunConfig

# Training settings a resumed run cannot change: another optimiser cannot take over the saved optimiser state, and
# a resumed run continues its saved random streams, so a new seed would change nothing it claims to.
FIXED_ON_RESUME = ("optimizer", "seed")


@dataclass
class ResumePlan:
    """What resuming a stored run with some settings given would do: `refused` lists (dotted setting, stored value,
    value given) for each that would need a new run; `train` the training settings that change on resume."""

    refused: list[tuple[str, object, object]] = field(default_factory=list)
    train: dict[str, object] = field(default_factory=dict)

    @property
    def allowed(self) -> bool:
        """True when nothing given needs a new run."""
        return not self.refused


def plan_resume(stored: RunConfig, *, model: str | None = None, data: dict | None = None,
                model_config: dict | None = None, train: dict | None = None) -> ResumePlan:
    """The resume of the run stored with `stored` when `model`, `data`, `model_config` and `train` values are given
    (None or absent: keep the stored one). Data values are compared with the stored `DataConfig` (source options as
    a dict under 'source_options'), model values with the family's config, training values with its TrainConfig."""
    plan = ResumePlan()
    if model is not None and model != stored.model:
        plan.refused.append(("model", stored.model, model))
    data_now, model_now, train_now = stored.data_config(), stored.model_params(), stored.train_config()
    for name, value in (data or {}).items():
        now = data_now.source_options if name == "source_options" else getattr(data_now, name)
        if value != now:
            plan.refused.append((f"data.{name}", now, value))
    for name, value in (model_config or {}).items():
        if value != getattr(model_now, name):
            plan.refused.append((f"model.{name}", getattr(model_now, name), value))
    for name, value in (train or {}).items():
        now = getattr(train_now, name)
        if name in FIXED_ON_RESUME:
            if value is not None and value != now:
                plan.refused.append((f"train.{name}", now, value))
        elif value != now:
            plan.train[name] = value
    return plan


def restart_config(stored: RunConfig, *, model: str | None = None, data: dict | None = None,
                   model_config: dict | None = None, train: dict | None = None) -> RunConfig:
    """A new run's configuration: the stored run's settings with the values given (the stored run stays as it is).
    With another `model` family, the stored model settings that family also has carry over and the others are left
    out (`left_out_on_restart` names them)."""
    family = model or stored.model
    kept = {k: v for k, v in stored.model_config.items() if k not in left_out_on_restart(stored, family)}
    return RunConfig(model=family, data={**stored.data, **(data or {})},
                     model_config={**kept, **(model_config or {})},
                     train={**stored.train, **(train or {})})


def left_out_on_restart(stored: RunConfig, model: str) -> dict:
    """The stored model settings of `stored` that model family `model` does not have ({} for the same family)."""
    if model == stored.model:
        return {}
    from ..models import get_model

    own = set(get_model(model).config.param)
    return {k: v for k, v in stored.model_config.items() if k not in own}


def refuse_steps_behind(run_id: int, steps: int | None, at: int) -> None:
    """A `ConfigError` when `steps` (the run's total) is below `at`, the step run `run_id` would continue from (its
    newest checkpoint that loads): it would train nothing and store its final figures again. `open_run` checks it
    before anything is stored."""
    if steps is None or steps >= at:
        return
    raise ConfigError(f"run {run_id} is already at step {at}, past --steps {steps} (--steps is the run's total number "
                      f"of steps, not steps to add); nothing was trained or stored. To train on, give a larger total, "
                      f"e.g. invlab train --resume {run_id} --steps {at + (steps or 100)}")


__all__ = ["FIXED_ON_RESUME", "ResumePlan", "left_out_on_restart", "plan_resume", "restart_config",
           "refuse_steps_behind"]
