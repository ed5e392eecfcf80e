"""Training configuration (param), and the whole-run configuration that round-trips through JSON.

A `RunConfig` is what a stored run, a checkpoint, a CLI invocation and a dashboard URL all carry:
the data options, the model family with its config, and the training setup.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

import param

from ..errors import ConfigError


class TrainConfig(param.Parameterized):
    """Optimisation and bookkeeping: every knob with its bounds and a one-line doc."""

    steps = param.Integer(default=1000, bounds=(0, 10_000_000), doc="Optimiser steps to run.")
    learning_rate = param.Number(default=0.01, bounds=(1e-6, 10.0),
                                 doc="Step size of the optimiser; when not given, 0.01 for Adam and 1 for L-BFGS.")
    optimizer = param.Selector(default="auto", objects=["auto", "adam", "lbfgs"],
                               doc="auto: the model family's default (Adam for GPs, L-BFGS for the RKHS solver).")
    schedule = param.Selector(default="constant", objects=["constant", "cosine", "exponential"],
                              doc="Learning-rate schedule over `steps`.")
    final_lr_ratio = param.Number(default=0.1, bounds=(0.0, 1.0),
                                  doc="Cosine / exponential: final rate ÷ initial rate.")
    batch_size = param.Integer(default=256, bounds=(0, 1_000_000), doc="Minibatch size; 0 = full batch.")
    seed = param.Integer(default=0, bounds=(0, 2**31 - 1), doc="Seed for initialisation and minibatches.")
    device = param.Selector(default="auto", objects=["auto", "cpu", "cuda"], doc="auto: CUDA when available.")
    dtype = param.Selector(default="auto", objects=["auto", "float64", "float32"],
                           doc="auto: float64 on CPU, float32 on GPU.")
    jitter = param.Number(default=1e-6, bounds=(0.0, 0.1), softbounds=(1e-10, 0.1),  # a scale: log slider
                          doc="Added to K_uu before Cholesky; escalated on failure.")
    log_every = param.Integer(default=10, bounds=(1, 100_000), doc="Record the loss every this many steps.")
    eval_every = param.Integer(default=100, bounds=(0, 1_000_000),
                               doc="Evaluate on the test subset every this many steps; 0 = only at the end.")
    eval_size = param.Integer(default=2000, bounds=(1, 1_000_000), doc="At most this many test points per evaluation.")
    checkpoint_every = param.Integer(default=0, bounds=(0, 10_000_000),
                                     doc="Also save a checkpoint every this many steps; 0 = by time only.")
    checkpoint_seconds = param.Number(default=30.0, bounds=(0.0, 86_400.0),
                                      doc="Save a checkpoint when this many seconds have passed since the last one "
                                          "(stretched so that saving takes at most 2 % of the time); 0 = off.")
    keep_checkpoints = param.Integer(default=3, bounds=(0, 1_000_000),
                                     doc="Keep the newest this many checkpoints of a run (older files are removed); "
                                         "0 = keep all.")
    flush_every = param.Integer(default=50, bounds=(1, 100_000),
                                doc="Write metrics to the run store every this many steps.")
    elbo_precision = param.Number(default=0.0, bounds=(0.0, 1e6), softbounds=(0.0, 10.0),
                                  doc="The Monte-Carlo standard error (nats) to which the final whole-training-set "
                                      "ELBO is estimated: sampled orbits get more samples and evaluation seeds until "
                                      "it is reached (exact where nothing is sampled); 0 = one evaluation at seed 0.")

    def lr_factor(self, step: int) -> float:
        """The learning rate at `step` ÷ the initial one: 1 (constant); cosine, r + (1 − r)·(1 + cos πt)/2; or
        exponential, rᵗ; with t = step ÷ steps (at most 1) and r = `final_lr_ratio`."""
        total, r = max(self.steps, 1), self.final_lr_ratio
        frac = min(step / total, 1.0)
        if self.schedule == "cosine":
            return r + (1 - r) * 0.5 * (1 + math.cos(math.pi * frac))
        if self.schedule == "exponential":
            return max(r, 1e-12) ** frac
        return 1.0


# Adam's usual step size, and L-BFGS's natural one (its strong-Wolfe line search starts from the step it is given).
DEFAULT_LEARNING_RATE = {"adam": 0.01, "lbfgs": 1.0}


def config_values(config: param.Parameterized) -> dict:
    """The parameter values of a config, without param's own `name`, JSON-safe."""
    return {k: v for k, v in config.param.values().items() if k != "name"}


def require_dict(values, what: str) -> None:
    """Refuse settings that are not a dict (ConfigError naming `what` with an example)."""
    if not isinstance(values, dict):
        example = {"data": "{'dataset': 'digits'}", "training": "{'steps': 1000}"}.get(what, "{'num_inducing': 100}")
        raise ConfigError(f"the {what} settings must be a dict of name: value, e.g. {example}; "
                          f"got the {type(values).__name__} {values!r}")


def apply_values(cls: type[param.Parameterized], values: dict, what: str) -> param.Parameterized:
    """Instantiate `cls` from a dict, turning param's errors into ones that name the setting."""
    require_dict(values, what)
    for key, value in values.items():  # bool is an int in Python: True is no count of steps or points
        if isinstance(value, bool) and isinstance(cls.param[key] if key in cls.param else None, param.Number):
            raise ConfigError(f"invalid {what} setting: {key}={value!r} is True/False, but {key} is a number; "
                              f"give a number, e.g. {key}={cls.param[key].default!r}")
    unknown = set(values) - set(cls.param) - {"name"}
    if unknown:
        raise ConfigError(f"unknown {what} setting(s): {', '.join(sorted(unknown))}; "
                          f"known: {', '.join(sorted(p for p in cls.param if p != 'name'))}")
    try:
        return cls(**{k: v for k, v in values.items() if k != "name"})
    except (ValueError, TypeError) as err:  # param says "Integer parameter 'TrainConfig.steps' ...": name the key
        said = _PARAM_NAME.sub(r"\1 ", str(err))
        raise ConfigError(f"invalid {what} setting: {said}") from None


_PARAM_NAME = re.compile(r"\w+ parameter '(?:\w+\.)?(\w+)' ")


@dataclass
class RunConfig:
    """Everything needed to rebuild a run: data options, model family + its config, training setup."""

    model: str = "svgp"
    data: dict = field(default_factory=lambda: {"dataset": "digits"})
    model_config: dict = field(default_factory=dict)
    train: dict = field(default_factory=dict)
    data_identity: dict | None = None  # what the run trained on (`invlab.data.identity`); set by the Trainer

    def to_json(self) -> str:
        """The run's configuration as JSON (keys sorted), the form stored with a run and its checkpoints."""
        out = {"model": self.model, "data": self.data, "model_config": self.model_config, "train": self.train}
        if self.data_identity:
            out["data_identity"] = self.data_identity
        return json.dumps(out, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "RunConfig":
        """A configuration stored by `to_json`; an unreadable one raises ConfigError."""
        try:
            d = json.loads(text)
            return cls(d["model"], d["data"], d.get("model_config", {}), d.get("train", {}), d.get("data_identity"))
        except (ValueError, KeyError, TypeError) as err:
            raise ConfigError(f"stored run configuration is unreadable ({err}); the run cannot be rebuilt") from None

    # materialised param objects ------------------------------------------------------------------
    def train_config(self) -> TrainConfig:
        """The training settings as a `TrainConfig`, the learning rate defaulting to that of the optimiser that will
        run."""
        values = dict(self.train)
        if values.get("learning_rate") is None:  # not given: the default of the optimiser that will run
            values["learning_rate"] = DEFAULT_LEARNING_RATE.get(self.optimizer_name(),
                                                                TrainConfig.param.learning_rate.default)
        return apply_values(TrainConfig, values, "training")

    def optimizer_name(self) -> str:
        """The optimiser a run uses: the `optimizer` setting, or the model family's default for 'auto'."""
        name = self.train.get("optimizer", "auto")
        return self.model_spec().optimizer if name in (None, "auto") else name

    def model_spec(self):
        """The registry entry of this run's model family."""
        from ..models import get_model

        return get_model(self.model)

    def model_params(self) -> param.Parameterized:
        """The model family's config object with this run's `model_config` applied (bad values raise ConfigError)."""
        return apply_values(self.model_spec().config, self.model_config, f"{self.model} model")

    def data_config(self):
        """The data settings as a `DataConfig` (bad values raise ConfigError)."""
        from ..data import DataConfig

        return apply_values(DataConfig, self.data, "data")

    def validate(self) -> "RunConfig":
        """Build every config object once so that bad values fail here, with a message, before any work."""
        if not isinstance(self.model, str):
            raise ConfigError(f"model must be a family name such as 'svgp', not the {type(self.model).__name__} "
                              f"{self.model!r}")
        for what, values in (("training", self.train), ("model", self.model_config), ("data", self.data)):
            require_dict(values, what)
        self.train_config(), self.model_params(), self.data_config()
        return self


def more_inducing_than_data(params, num_train: int) -> str | None:
    """The note for a model asked for more inducing points than there are training points: it uses M = N."""
    from ..models.convolutional import PatchParams  # inducing patches are not limited by the number of images

    names = ["num_inducing_rbf"] + ([] if isinstance(params, PatchParams) else ["num_inducing"])
    for name in names:
        value = getattr(params, name, None)
        if isinstance(value, int) and value > num_train:
            return (f"{name}={value} is more than the {num_train} training points; the model uses M = {num_train} "
                    f"(every training point once)")
    return None
