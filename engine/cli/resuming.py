"""`invlab train --resume ID` and `--restart`: the stored run a command line names, and the trainer that continues it
(or trains its settings again as a new run, with the flags given over them). The policy is the engine's
(`invlab.train.resume`); this says it in flags."""
from __future__ import annotations

import sys

from ..errors import ConfigError, InvlabError
from .flags import source_options


def stored_run(run_id: str):
    """Stored run `run_id` as typed (None when it cannot be read: the resume says why)."""
    from ..ids import parse_id
    from ..train import RunStore

    try:
        run_id = parse_id(run_id, "run")
        with RunStore() as store:
            return store.runs.get(run_id)
    except (InvlabError, OSError):
        return None


def watched_refusal(record) -> str:
    """Why run `record`, written by `invlab.train.watch` from the user's own loop, is not resumed here."""
    return (f"run {record.id} is a watched run, written by your own loop (watch(name={record.name!r})), not by invlab "
            f"train, so it has no checkpoint to resume from; continue it by running that loop again (each "
            f"watch(name={record.name!r}) records a new run under that name)")


def resume_from_flags(store, parser, args, values: dict, explicit_model: bool):
    """The trainer that continues run `args.resume` (`invlab.train.opening.open_run`, as the page does), with the
    training flags given applied; None (after saying which and why) when flags were given that would need a new
    model. `--restart`: a new run with the stored settings. The policy is the engine's (`invlab.train.resume`); this
    says it in flags."""
    from ..train import CheckpointError, RunConfig
    from ..train.opening import open_run
    from ..train.resume import plan_resume

    run_id = args.resume
    record = store.runs.get(run_id)
    stored = RunConfig.from_json(record.config)
    given_data = dict(values["data"])
    if args.source_option:
        given_data["source_options"] = source_options(args.source_option)
    if args.restart:
        family = args.model if explicit_model else stored.model
        return restart_from_flags(store, parser, run_id, stored, family, given_data, values)
    plan = plan_resume(stored, model=args.model if explicit_model else None, data=given_data,
                       model_config=values["model"], train=values["train"])
    if not plan.allowed:
        flag_of = {a.dest: a.option_strings[0] for a in parser._actions if a.option_strings}
        flag_of.update({"model": "--model", "data__source_options": "--source-option"})
        refused = [f"{flag_of[name.replace('.', '__')]} ({old!r} -> {new!r})" if name != "model" else
                   f"--model ({old} -> {new})" for name, old, new in plan.refused]
        print(f"invlab train: --resume {run_id} continues run {run_id} with its own model, data, optimiser and random "
              f"streams; these flags would need a new run: {', '.join(refused)}. Drop them to continue run {run_id}, "
              f"or add --restart to train its settings with them as a new run.", file=sys.stderr)
        return None
    train_now = stored.train_config()
    try:  # the one road a page continues a run by too: the newest checkpoint that loads, claimed, truncated past it
        opened = open_run(store, run_id, claim=True, train=plan.train)
    except CheckpointError as err:
        raise CheckpointError(f"{err} To train its settings again as a new run (run {run_id} stays as it is): "
                              f"invlab train --resume {run_id} --restart") from None
    trainer = opened.trainer
    applied = ", ".join(f"{name} {getattr(train_now, name)!s} -> {value!s}" for name, value in plan.train.items())
    print(f"resuming run {run_id} at step {opened.step} of {trainer.tc.steps}"
          + (f" with {applied}" if applied else ""), file=sys.stderr)
    for note in opened.notes:
        print(f"note: {note}", file=sys.stderr)
    if opened.step >= trainer.tc.steps:
        print(f"note: run {run_id} is at step {opened.step}, at or past its {trainer.tc.steps} steps: it is "
              f"evaluated and marked finished; give a larger --steps to train on", file=sys.stderr)
    return trainer


def restart_from_flags(store, parser, run_id: int, stored, model: str, data: dict, values: dict):
    """The trainer of a new run with run `run_id`'s settings (`stored`) and every flag given on the line (`model`,
    `data`, `values`) over them, announced with what was given and what of run `run_id` the new family cannot take;
    a `ConfigError` naming the flag to give when a stored setting carried over is one the new family refuses."""
    from ..train import Trainer
    from ..train.config import apply_values
    from ..train.resume import left_out_on_restart, restart_config

    config = restart_config(stored, model=model, data=data, model_config=values["model"], train=values["train"])
    if model != stored.model:
        family = config.model_spec().config
        for name, value in config.model_config.items():
            if name in values["model"]:
                continue  # given on the line: refused below by the usual check, naming the flag
            try:
                apply_values(family, {name: value}, f"{model} model")
            except ConfigError as err:
                flag = {a.dest: a.option_strings[0] for a in parser._actions}.get(f"model__{name}", name)
                reason = str(err).split("setting: ", 1)[-1]
                raise ConfigError(f"--restart --model {model}: run {run_id}'s {name}={value!r} does not apply to "
                                  f"{model} ({reason}); give {flag} with a value {model} takes (e.g. {flag} "
                                  f"{family.param[name].default}) to override it") from None
    trainer = Trainer(config, store=store)
    given = overrides(stored, model, data, values)
    left_out = left_out_on_restart(stored, model)
    said = "".join(f", {g}" for g in given) + f" (run {run_id} is kept as it was)"
    if left_out:
        verb = "is" if len(left_out) == 1 else "are"
        said += (f"; run {run_id}'s {', '.join(f'{k}={v!r}' for k, v in left_out.items())} {verb} not a setting of "
                 f"{model} and {verb} left out")
    print(f"run {trainer.record.run_id}: a new run with the settings of run {run_id}{said}", file=sys.stderr)
    if trainer.last_warning:
        print(f"note: {trainer.last_warning}", file=sys.stderr)
    return trainer


def overrides(stored, model: str, data: dict, values: dict) -> list[str]:
    """"NAME VALUE" for the model family and each setting given on the line that differs from run `stored`'s."""
    out = [f"model {model}"] if model != stored.model else []
    data_now, train_now = stored.data_config(), stored.train_config()
    model_now = stored.model_params() if model == stored.model else None
    for name, value in data.items():
        now = data_now.source_options if name == "source_options" else getattr(data_now, name)
        if value != now:
            out.append(f"{name} {value}")
    for name, value in values["model"].items():
        if model_now is None or value != getattr(model_now, name):
            out.append(f"{name} {value}")
    out += [f"{name} {value}" for name, value in values["train"].items() if value != getattr(train_now, name)]
    return out
