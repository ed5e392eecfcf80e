"""`invlab`: train models, fetch data, list stored runs, start the dashboard.

Flags of `invlab train` are generated from the param configs (data options, the chosen model family's
config, the training setup): bounds, choices and docs come from the parameters, never copied here.

    invlab train --model svgp --dataset digits --steps 1000
    invlab train --resume 3
    invlab runs
    invlab fetch mnist
    invlab serve                      # the dashboard on http://127.0.0.1:5006
    invlab sweep sweep.toml           # a sweep on Dask (`invlab sweep --help`); --study rotation-choice
    invlab sweeps                     # stored sweeps
    invlab compare 1                  # a sweep's runs by whole-data ELBO
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
from pathlib import Path

import param

from .errors import ConfigError, InvlabError, NonFiniteLossError

GROUPS = ("data", "model", "train")


# -- flags from param ----------------------------------------------------------------------------------------------
def _flag_type(p: param.Parameter):
    if isinstance(p, param.Integer):
        return int
    if isinstance(p, param.Number):
        def number(text: str):
            if text.lower() in ("auto", "none", ""):
                return None
            try:
                return float(text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"expected a number (e.g. {p.default}), got {text!r}") from None

        return number
    if isinstance(p, param.List):
        return lambda s: [int(v) if v.strip().lstrip("-").isdigit() else v.strip() for v in s.split(",") if v.strip()]
    return str


def _describe(p: param.Parameter) -> str:
    text = (p.doc or "").strip()
    bounds = getattr(p, "bounds", None)
    if bounds and any(b is not None for b in bounds):
        text += f" Range {bounds[0]}..{bounds[1]}."
    default = p.default if not isinstance(p.default, list) else ",".join(map(str, p.default))
    return f"{text} (default: {default})".replace("%", "%%")


def add_param_flags(parser: argparse.ArgumentParser, cls: type[param.Parameterized], group: str,
                    table: dict[str, tuple[str, str]], skip=()) -> None:
    """Add one flag per parameter of `cls`; a name already taken by another group gets the group as prefix."""
    section = parser.add_argument_group(f"{group} options ({cls.__name__})")
    for name, p in cls.param.objects("existing").items():
        if name == "name" or name in skip or isinstance(p, param.Dict):
            continue
        flag = name.replace("_", "-")
        if flag in table:
            flag = f"{group}-{flag}"
        dest = f"{group}__{name}"
        table[flag] = (group, name)
        if isinstance(p, param.Boolean):
            section.add_argument(f"--{flag}", dest=dest, action=argparse.BooleanOptionalAction, default=None,
                                 help=_describe(p))
        elif isinstance(p, param.Selector):
            section.add_argument(f"--{flag}", dest=dest, choices=[str(o) for o in p.objects], default=None,
                                 help=_describe(p))
        else:
            section.add_argument(f"--{flag}", dest=dest, type=_flag_type(p), default=None, help=_describe(p),
                                 metavar=name.upper())


def collect(args: argparse.Namespace) -> dict[str, dict]:
    out: dict[str, dict] = {g: {} for g in GROUPS}
    for key, value in vars(args).items():
        if "__" in key and value is not None:
            group, name = key.split("__", 1)
            out[group][name] = value
    return out


def _count(flag: str, low: int = 0, high: int | None = None):
    """An argparse type: an integer in [low, high], refused with the flag and the range named."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} must be an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            span = f"from {low} to {high}" if high is not None else f"at least {low}"
            raise argparse.ArgumentTypeError(f"{flag} must be {span}, got {value}")
        return value

    return parse


# -- commands ------------------------------------------------------------------------------------------------------
def _train_parser(model_name: str) -> argparse.ArgumentParser:
    from .data import DataConfig
    from .models import get_model, model_names
    from .train import TrainConfig

    spec = get_model(model_name)
    parser = argparse.ArgumentParser(prog="invlab train", description="Train a model and store the run.")
    parser.add_argument("--model", default="svgp", choices=model_names(), help="Model family (default: svgp).")
    parser.add_argument("--resume", type=int, metavar="ID",
                        help="Continue stored run ID from its latest usable checkpoint. Training flags given with it "
                             "(steps, learning rate, schedule, intervals ...) apply from there on and are recorded; "
                             "data and model flags, --optimizer and --seed would need a new run and are refused.")
    parser.add_argument("--restart", action="store_true",
                        help="With --resume ID: train run ID's settings (and any flags given) again as a new run from "
                             "step 0; run ID is kept as it is.")
    parser.add_argument("--source-option", action="append", default=[], metavar="KEY=VALUE",
                        help="Option of the data source, e.g. num_train=500 (repeatable).")
    parser.add_argument("--quiet", action="store_true", help="No progress bar.")
    table: dict[str, tuple[str, str]] = {}
    add_param_flags(parser, TrainConfig, "train", table)
    add_param_flags(parser, DataConfig, "data", table)
    add_param_flags(parser, spec.config, "model", table)
    return parser


def _source_options(pairs: list[str]) -> dict:
    out = {}
    for pair in pairs:
        if "=" not in pair or not pair.split("=", 1)[0].strip():
            raise ConfigError(f"--source-option expects KEY=VALUE, got {pair!r}")
        key, value = pair.split("=", 1)
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def cmd_train(argv: list[str]) -> int:
    from .train import RunConfig, RunStore, Trainer

    pre = argparse.ArgumentParser(prog="invlab train", add_help=False)
    pre.add_argument("--model", default=None)
    pre.add_argument("--resume", default=None)  # read as text here: the full parser names a bad value
    known, _ = pre.parse_known_args(argv)
    if known.model is None:  # a resumed run's flags are its own family's, so they can be named when refused
        resume = known.resume if known.resume is not None and known.resume.lstrip("-").isdigit() else None
        known.model = _stored_model(int(resume)) if resume is not None else "svgp"
    try:
        parser = _train_parser(known.model)
    except ConfigError as err:
        print(f"invlab train: {err}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    if args.restart and args.resume is None:
        parser.error("--restart goes with --resume ID (it trains run ID's settings again as a new run)")
    values = collect(args)
    store = None
    try:
        store = RunStore(on_busy=lambda message: _note(f"note: {message}"))
        if args.resume is not None:
            trainer = _resume(store, parser, args, values, explicit_model=any(
                a == "--model" or a.startswith("--model=") for a in argv))
            if trainer is None:
                return 2
        else:
            data = dict(values["data"])
            if args.source_option:
                data["source_options"] = _source_options(args.source_option)
            config = RunConfig(model=args.model, data=data, model_config=values["model"], train=values["train"])
            trainer = Trainer(config, store=store)
            if trainer.last_warning:  # e.g. more inducing points than data: said, never a silent change
                print(f"note: {trainer.last_warning}", file=sys.stderr)
        code = _run_with_progress(trainer, quiet=args.quiet)
        store.close()  # waits for a store another program holds locked, so queued metrics are not lost
        return code
    except InvlabError as err:
        print(f"invlab train: {err}", file=sys.stderr)
        return 1
    except MemoryError:
        print("invlab train: out of memory building the data or the model; use fewer points (--subset, "
              "--source-option num_train=...) or a smaller model (--num-inducing)", file=sys.stderr)
        return 1
    finally:
        if store is not None:
            try:
                store.close()
            except InvlabError as err:
                print(f"invlab train: {err}", file=sys.stderr)


def _note(message: str) -> None:
    """A line on stderr that does not break the progress bar."""
    from tqdm import tqdm

    tqdm.write(message, file=sys.stderr)


# Training settings a resumed run cannot change: another optimiser cannot take over the saved optimiser state, and
# a resumed run continues its saved random streams, so a new seed would change nothing it claims to.
FIXED_ON_RESUME = ("optimizer", "seed")


def _stored_model(run_id: int) -> str:
    """The model family of stored run `run_id` ("svgp" when it cannot be read: the resume then says why)."""
    from .train import RunStore

    try:
        with RunStore() as store:
            return store.get_run(run_id).model
    except (InvlabError, OSError):
        return "svgp"


def _resume(store, parser, args, values: dict, explicit_model: bool):
    """The trainer that continues run `args.resume`, with the training flags given applied; None (after saying which
    and why) when flags were given that would need a new model. `--restart`: a new run with the stored settings."""
    from .train import CheckpointError, RunConfig, Trainer

    run_id = args.resume
    record = store.get_run(run_id)
    stored = RunConfig.from_json(record.config)
    flag_of = {a.dest: a.option_strings[0] for a in parser._actions if a.option_strings}
    given_data = dict(values["data"])
    if args.source_option:
        given_data["source_options"] = _source_options(args.source_option)
    if args.restart:
        config = RunConfig(model=stored.model, data={**stored.data, **given_data},
                           model_config={**stored.model_config, **values["model"]},
                           train={**stored.train, **values["train"]})
        trainer = Trainer(config, store=store)
        print(f"run {trainer.run_id}: a new run with the settings of run {run_id} (kept as it was)", file=sys.stderr)
        return trainer
    data_now, model_now, train_now = stored.data_config(), stored.model_params(), stored.train_config()
    refused = [f"--model ({stored.model} -> {args.model})"] if explicit_model and args.model != stored.model else []
    for name, value in given_data.items():
        now = data_now.source_options if name == "source_options" else getattr(data_now, name)
        if value != now:
            flag = "--source-option" if name == "source_options" else flag_of[f"data__{name}"]
            refused.append(f"{flag} ({now!r} -> {value!r})")
    for name, value in values["model"].items():
        if value != getattr(model_now, name):
            refused.append(f"{flag_of[f'model__{name}']} ({getattr(model_now, name)!r} -> {value!r})")
    for name in FIXED_ON_RESUME:
        value = values["train"].get(name)
        if value is not None and value != getattr(train_now, name):
            refused.append(f"{flag_of[f'train__{name}']} ({getattr(train_now, name)!r} -> {value!r})")
    if refused:
        print(f"invlab train: --resume {run_id} continues run {run_id} with its own model, data, optimiser and random "
              f"streams; these flags would need a new run: {', '.join(refused)}. Drop them to continue run {run_id}, "
              f"or add --restart to train its settings with them as a new run.", file=sys.stderr)
        return None
    changes = {name: value for name, value in values["train"].items() if value != getattr(train_now, name)}
    try:
        trainer = Trainer.resume(store, run_id, train=changes)
    except CheckpointError as err:
        raise CheckpointError(f"{err} To train its settings again as a new run (run {run_id} stays as it is): "
                              f"invlab train --resume {run_id} --restart") from None
    applied = ", ".join(f"{name} {getattr(train_now, name)!s} -> {value!s}" for name, value in changes.items())
    print(f"resuming run {run_id} at step {trainer.step_count} of {trainer.tc.steps}"
          + (f" with {applied}" if applied else ""), file=sys.stderr)
    for note in trainer.resume_notes:
        print(f"note: {note}", file=sys.stderr)
    if trainer.step_count >= trainer.tc.steps:
        print(f"note: run {run_id} is at step {trainer.step_count}, at or past its {trainer.tc.steps} steps: it is "
              f"evaluated and marked finished; give a larger --steps to train on", file=sys.stderr)
    return trainer


class _StopOnSignal:
    """SIGTERM and Ctrl-C ask the run to stop after the step in progress (then it saves a checkpoint); a second one
    stops it at once. Installed only in the main thread (signal handlers live there)."""

    def __init__(self):
        import threading

        self.event = threading.Event()
        self.signal: int | None = None
        self._old: dict[int, object] = {}
        self._active = threading.current_thread() is threading.main_thread()

    def __enter__(self):
        import signal

        if self._active:
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.event.is_set():
            raise KeyboardInterrupt
        self.signal = signum
        self.event.set()

    def __exit__(self, *exc):
        import signal

        for sig, old in self._old.items():
            signal.signal(sig, old)

    @property
    def name(self) -> str:
        import signal

        return "Ctrl-C" if self.signal == signal.SIGINT else signal.Signals(self.signal).name


def _run_with_progress(trainer, quiet: bool = False) -> int:
    from tqdm import tqdm

    ds = trainer.dataset
    print(f"run {trainer.run_id}: {trainer.spec.name} on {ds.name} ({ds.num_train} train / {ds.num_test} test), "
          f"{trainer.device} {str(trainer.dtype).replace('torch.', '')}", file=sys.stderr)
    total = trainer.tc.steps
    start, t0 = trainer.step_count, time.perf_counter()
    bar = tqdm(total=total, initial=start, disable=quiet, unit="step", dynamic_ncols=True, file=sys.stderr)
    shown = "ok"  # the last health state reported: a collapse, divergence or stall is said once, when it starts
    stopper = _StopOnSignal()
    try:
        with stopper:
            for snap in trainer.run(every=max(1, trainer.tc.log_every), stop=stopper.event):
                bar.update(snap.step - bar.n)
                post = {k: f"{v:.4g}" for k, v in snap.parts.items() if k in ("elbo", "loss")}
                post.update({k.replace("test_", ""): f"{v:.4g}" for k, v in snap.metrics.items()})
                bar.set_postfix(post, refresh=False)
                if snap.health.state != shown and snap.health.state in ("collapsed", "diverging", "stalled"):
                    hint = snap.health.hint.replace("press Reset", "train again")  # the hint speaks to the page
                    tqdm.write(f"step {snap.step}: {snap.health.state}: {hint}", file=sys.stderr)
                shown = snap.health.state
    except NonFiniteLossError as err:
        bar.close()
        print(f"invlab train: {err}\nresume with: invlab train --resume {trainer.run_id} --learning-rate <smaller>",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # a second Ctrl-C or SIGTERM: stopped at once, maybe mid-step
        bar.close()
        return _stopped(trainer, "a second signal", 130)
    if stopper.event.is_set() and trainer.status != "finished":
        bar.close()
        return _stopped(trainer, stopper.name, 128 + int(stopper.signal))
    bar.close()
    seconds = time.perf_counter() - t0
    if getattr(trainer, "converged", False):
        print(f"converged: the L-BFGS solve stopped changing at step {trainer.step_count} of {total}, so the run "
              f"finished early", file=sys.stderr)
    print(summary_line(trainer, seconds, trainer.step_count - start))
    return 0


def _stopped(trainer, what: str, code: int) -> int:
    """After Ctrl-C or SIGTERM: a final checkpoint (unless a step was cut off midway), status `interrupted`."""
    from .train import CheckpointError

    saved = ""
    if trainer.store is not None:
        try:
            trainer.save_checkpoint()
            saved = ", checkpoint saved"
        except (CheckpointError, OSError) as err:
            latest = trainer.store.latest_checkpoint(trainer.run_id)
            saved = f"; no final checkpoint ({err}); the latest is at step {latest[0] if latest else '-'}"
        message = (f"stopped by {what} at step {trainer.step_count}{saved}; resume with: "
                   f"invlab train --resume {trainer.run_id}")
        trainer._set_status("interrupted", message=message)
    print(f"\ninterrupted by {what} at step {trainer.step_count}{saved}; resume with: "
          f"invlab train --resume {trainer.run_id}", file=sys.stderr)
    return code


def summary_line(trainer, seconds: float, steps: int) -> str:
    m = trainer.last_metrics
    parts = [f"run {trainer.run_id}", f"{trainer.spec.name} on {trainer.dataset.name}", f"step {trainer.step_count}"]
    if "elbo" in trainer.last_parts:
        parts.append(f"ELBO {trainer.last_parts['elbo']:.4g}")
    if "test_error" in m:
        parts.append(f"test error {100 * m['test_error']:.2f}%")
    if "test_rmse" in m:
        parts.append(f"test RMSE {m['test_rmse']:.4g}")
    if "test_nlpd" in m:
        parts.append(f"NLPD {m['test_nlpd']:.4g}")
    rate = steps / seconds if seconds > 0 else math.nan
    parts.append(f"{steps} steps in {seconds:.1f} s ({rate:.1f} steps/s)")
    return " | ".join(parts)


def cmd_runs(argv: list[str]) -> int:
    from .train.store import NoRunStore, RunStore

    parser = argparse.ArgumentParser(prog="invlab runs", description="List stored runs, newest first.")
    parser.add_argument("--limit", type=_count("--limit", 0, 10**9), default=50,
                        help="Show at most this many (0: all).")
    parser.add_argument("--json", action="store_true", help="One JSON object per line.")
    args = parser.parse_args(argv)
    try:
        with RunStore(create=False) as store:  # listing never creates the data directory
            runs, where = store.list_runs(args.limit), store.path
    except NoRunStore as err:
        if err.mistyped:
            print(f"invlab runs: {err}", file=sys.stderr)
            return 1
        runs, where = [], err.path
    except InvlabError as err:
        print(f"invlab runs: {err}", file=sys.stderr)
        return 1
    if args.json:
        for r in runs:
            print(json.dumps(r.summary()))
        return 0
    if not runs:
        print(f"no runs stored yet in {where}; start one with: invlab train --model svgp --dataset digits")
        return 0
    fmt = "{:>4}  {:<10} {:<14} {:<11} {:>7}  {:>12}  {:>10}  {:>8}"
    print(fmt.format("id", "model", "dataset", "status", "steps", "last ELBO", "test error", "RMSE"))

    def num(v, f):
        return "-" if v is None else format(v, f)

    for r in runs:
        err = "-" if r.test_error is None else f"{100 * r.test_error:.2f}%"
        print(fmt.format(r.id, r.model[:10], r.dataset[:14], r.status[:11], r.step, num(r.elbo, ".5g"), err,
                         num(r.test_rmse, ".4g")))
    return 0


def cmd_fetch(argv: list[str]) -> int:
    from .data import fetch

    parser = argparse.ArgumentParser(prog="invlab fetch",
                                     description="Download a dataset once into the data directory.")
    parser.add_argument("name", choices=["mnist"])
    args = parser.parse_args(argv)
    try:
        path = fetch(args.name)
    except InvlabError as err:
        print(f"invlab fetch: {err}", file=sys.stderr)
        return 1
    print(f"{args.name} is ready: {path}")
    return 0


UNUSED_SESSION_LIFETIME_MS = 5000  # a session without a connected browser is ended after this long
CHECK_UNUSED_SESSIONS_MS = 1000


def dashboard_app() -> Path:
    """The dashboard's `app.py`, found without importing the dashboard (the engine does not depend on it)."""
    spec = importlib.util.find_spec("dashboard")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    app = next((Path(folder) / "app.py" for folder in folders if (Path(folder) / "app.py").is_file()), None)
    if app is None or importlib.util.find_spec("panel") is None:
        raise ConfigError("the dashboard is not installed (the engine runs without it); install it with "
                          "`pip install -e '.[dashboard]'` from the repository, or `make setup`, to use `invlab serve`")
    return app.resolve()


def serve_command(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """The `panel serve` command line (and extra environment) that `invlab serve ARGS` runs."""
    parser = argparse.ArgumentParser(
        prog="invlab serve", description="Serve the dashboard. Options not listed here are passed to `panel serve` "
        "(e.g. --basic-auth, --cookie-secret, --oauth-provider, --ssl-certfile).")
    parser.add_argument("--address", default="127.0.0.1",
                        help="Interface to bind (default 127.0.0.1: this machine only). Use 0.0.0.0 to expose it.")
    parser.add_argument("--port", type=_count("--port", 0, 65535), default=5006,
                        help="Port to listen on, 0..65535 (0: any free port).")
    parser.add_argument("--allow-websocket-origin", action="append", default=[], metavar="HOST[:PORT]",
                        help="Host names browsers may use to reach the server (repeatable).")
    parser.add_argument("--num-procs", type=_count("--num-procs"), default=1,
                        help="Worker processes (0 = one per core).")
    parser.add_argument("--max-training", type=_count("--max-training", 1), default=None,
                        help="Sessions allowed to train at once per process (default: number of CPU cores).")
    parser.add_argument("--show", action="store_true", help="Open a browser tab.")
    parser.add_argument("--admin", action="append", default=[], metavar="USER",
                        help="With --basic-auth or OAuth: a user who sees every user's runs and sweeps (repeatable); "
                        "the others see only their own.")
    limits = parser.add_argument_group("what one page may ask of the server (the CLI's train has no limits)")
    limits.add_argument("--max-points", type=int, default=None, metavar="N",
                        help="Training + test points a run's data may have (default 100000).")
    limits.add_argument("--max-inducing", type=int, default=None, metavar="M",
                        help="Inducing points a run may have (default 2000).")
    limits.add_argument("--max-memory-mb", type=float, default=None, metavar="MB",
                        help="Estimated memory a run may need (default 2048).")
    limits.add_argument("--allow-data-dir", action="append", default=[], metavar="DIR",
                        help="A folder whose IDX data pages may read, besides the data directory (repeatable).")
    args, passthrough = parser.parse_known_args(argv)
    app = dashboard_app()
    origins = args.allow_websocket_origin or [f"localhost:{args.port}", f"127.0.0.1:{args.port}"]
    cmd = [sys.executable, "-m", "panel", "serve", str(app), "--address", args.address, "--port", str(args.port),
           "--num-procs", str(args.num_procs)]
    for origin in origins:
        cmd += ["--allow-websocket-origin", origin]
    if args.show:
        cmd.append("--show")
    # A closed browser tab ends its session (and its training) within seconds, not Bokeh's default 15–32 s.
    if not any(a.startswith("--unused-session-lifetime") for a in passthrough):
        cmd += ["--unused-session-lifetime", str(UNUSED_SESSION_LIFETIME_MS)]
    if not any(a.startswith("--check-unused-sessions") for a in passthrough):
        cmd += ["--check-unused-sessions", str(CHECK_UNUSED_SESSIONS_MS)]
    env = {}
    if args.max_training is not None:
        env["INVLAB_MAX_TRAINING"] = str(args.max_training)
    for flag, var, value in (("--max-points", "INVLAB_MAX_POINTS", args.max_points),
                             ("--max-inducing", "INVLAB_MAX_INDUCING", args.max_inducing),
                             ("--max-memory-mb", "INVLAB_MAX_MEMORY_MB", args.max_memory_mb)):
        if value is not None:
            if value < 1:
                raise ConfigError(f"{flag} must be at least 1")
            env[var] = format(value, "g") if isinstance(value, float) else str(value)
    if args.admin:
        if not any(a.startswith(("--basic-auth", "--oauth-provider")) for a in passthrough):
            raise ConfigError("--admin names a logged-in user, but this server has no logins (every page sees every "
                              "run); add --basic-auth FILE or --oauth-provider NAME, or leave --admin out")
        env["INVLAB_ADMINS"] = json.dumps(args.admin)
    if args.allow_data_dir:
        import os

        dirs = [os.path.abspath(os.path.expanduser(d)) for d in args.allow_data_dir]
        env["INVLAB_DATA_DIRS"] = os.pathsep.join(dirs)
    return cmd + passthrough, env


def cmd_serve(argv: list[str]) -> int:
    import os
    import subprocess

    try:
        cmd, env = serve_command(argv)
    except ConfigError as err:
        print(f"invlab serve: {err}", file=sys.stderr)
        return 2
    print(f"serving the dashboard: {' '.join(cmd[2:])}", file=sys.stderr)
    env = {**os.environ, **env}
    if os.name == "posix":  # the server takes this process's place, so Ctrl-C and SIGTERM reach it, not an orphan
        sys.stderr.flush()
        sys.stdout.flush()
        os.execve(cmd[0], cmd, env)
    try:
        return subprocess.call(cmd, env=env)
    except KeyboardInterrupt:
        return 0


# -- sweeps ----------------------------------------------------------------------------------------------------------
def parse_value(text: str):
    """A flag's value: JSON when it reads as JSON (numbers, true/false, null, lists), else the text itself."""
    text = text.strip()
    if text in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[text]
    try:
        return json.loads(text)
    except ValueError:
        return text


def _split_assignment(text: str, flag: str) -> tuple[str, str]:
    if "=" not in text:
        raise ConfigError(f"{flag} expects NAME=VALUE(S), e.g. {flag} model.init_rotation=0,45,90; got {text!r}")
    name, values = text.split("=", 1)
    return name.strip(), values


def _seeds_flag(text: str):
    value = parse_value(text)
    if isinstance(value, str):
        value = [parse_value(v) for v in value.split(",") if v.strip()]
    return value


def sweep_spec_from_args(args: argparse.Namespace):
    """The SweepSpec a `invlab sweep` command line describes: a file or a built-in study (or an empty base),
    then --base-model, --set, --vary, --mode, --seeds and --name on top."""
    from .sweeps import SweepSpec, study
    from .sweeps.spec import apply_point

    if args.file and args.study:
        raise ConfigError("give a sweep file or --study, not both")
    if args.file:
        spec = SweepSpec.from_file(args.file)
    elif args.study:
        spec = study(args.study, quick=args.quick)
    else:
        spec = SweepSpec(name="sweep")
    if args.base_model:
        spec.base.model = args.base_model
    if args.set:
        point = {}
        for item in args.set:
            name, value = _split_assignment(item, "--set")
            point[name] = parse_value(value)
        spec.base = apply_point(spec.base, point)
    for item in args.vary:
        name, values = _split_assignment(item, "--vary")
        parsed = parse_value(values)
        spec.vary[name] = parsed if isinstance(parsed, list) else [parse_value(v) for v in values.split(",")]
    if args.mode:
        spec.mode = args.mode
    if args.seeds is not None:
        spec.seeds = _seeds_flag(args.seeds)
    if args.name:
        spec.name = args.name
    if not args.file and not args.study and not args.vary:
        raise ConfigError("nothing to sweep: give a sweep file (TOML or JSON), --study NAME, or --vary NAME=V1,V2,...")
    return spec.validate()


def _fmt(value, spec: str = ".4g") -> str:
    return "-" if value is None else format(value, spec)


def _duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "?"
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class SweepBar:
    """The sweep's progress on stderr: a tqdm bar on a terminal, one plain line per finished run otherwise."""

    def __init__(self, quiet: bool = False):
        self.quiet, self.bar, self.sweep_id = quiet, None, None
        self.tty = sys.stderr.isatty()

    def status(self, p) -> str:
        return (f"{p.done}/{p.total} done, {p.running} running, {p.failed} failed, best ELBO "
                f"{_fmt(p.best_elbo, '.5g')}, ETA {_duration(p.eta_s)}")

    def __call__(self, p) -> None:
        from tqdm import tqdm

        event = p.event or {}
        if self.sweep_id is None:
            self.sweep_id = p.sweep_id
            print(f"sweep {p.sweep_id}: {p.total} runs, {p.done} already stored "
                  f"(resume with: invlab sweep --resume {p.sweep_id})", file=sys.stderr, flush=True)
        if p.dashboard_link and event.get("kind") == "submitted":
            print(f"Dask dashboard: {p.dashboard_link}", file=sys.stderr, flush=True)
        if self.quiet:
            return
        if self.tty:
            if self.bar is None:
                self.bar = tqdm(total=p.total, initial=p.done, unit="run", dynamic_ncols=True, file=sys.stderr)
            self.bar.update(p.done + p.failed - self.bar.n)
            self.bar.set_postfix_str(f"{p.running} running, {p.failed} failed, best ELBO {_fmt(p.best_elbo, '.5g')}, "
                                     f"ETA {_duration(p.eta_s)}", refresh=True)
            if event.get("kind") == "failed":
                tqdm.write(f"failed: {event.get('key')}: {event.get('message')}", file=sys.stderr)
        elif event.get("kind") in ("done", "failed", "submitted"):
            what = {"done": f"stored run {event.get('run_id')} ({event.get('key')})",
                    "failed": f"FAILED {event.get('key')}: {event.get('message')}",
                    "submitted": f"submitted {event.get('runs')} runs"}[event["kind"]]
            print(f"[{self.status(p)}] {what}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def cmd_sweep(argv: list[str]) -> int:
    from .sweeps import STUDIES, run_sweep
    from .train import RunStore

    parser = argparse.ArgumentParser(
        prog="invlab sweep", description="Run a sweep of training runs on Dask distributed and store every run. "
        "Names are dotted: model (the family), model.<param>, data.<param>, train.<param>.",
        epilog="examples:\n  invlab sweep sweep.toml\n  invlab sweep --study rotation-choice\n"
        "  invlab sweep --base-model invariant --set data.rotate=90 --vary model.init_rotation=0,45,90 --seeds 3\n"
        "  invlab sweep sweep.toml --scheduler tcp://10.0.0.5:8786\n  invlab sweep --resume 4",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", nargs="?", help="Sweep file (.toml or .json).")
    parser.add_argument("--study", choices=sorted(STUDIES), help="A built-in study.")
    parser.add_argument("--quick", action="store_true",
                        help="The built-in study's short form: one seed, fewer values (rotation-choice: 0, 45, 90, "
                             "135, 179 and the learned range).")
    parser.add_argument("--name", help="The sweep's name.")
    parser.add_argument("--base-model", metavar="FAMILY", help="Model family of the base configuration.")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="A base setting by dotted name, e.g. data.rotate=90 (repeatable).")
    parser.add_argument("--vary", action="append", default=[], metavar="NAME=V1,V2,...",
                        help="Values of a dotted parameter, e.g. model.init_rotation=0,15,30 (repeatable).")
    parser.add_argument("--mode", choices=["grid", "list"], help="grid: every combination; list: zip the lists.")
    parser.add_argument("--seeds", metavar="N|S1,S2", help="Seeds per point: a count (3 = 0,1,2) or a list.")
    parser.add_argument("--scheduler", metavar="ADDRESS", help="An existing Dask scheduler, e.g. tcp://host:8786 "
                        "(default: a local cluster of processes on this machine).")
    parser.add_argument("--workers", type=int, metavar="N", help="Local workers (default: one per core, or per GPU).")
    parser.add_argument("--resume", type=int, metavar="ID", help="Run only the missing runs of stored sweep ID.")
    parser.add_argument("--dashboard", action="store_true", help="Serve Dask's dashboard for the local cluster.")
    parser.add_argument("--dry-run", action="store_true", help="Validate and list the planned runs; run nothing.")
    parser.add_argument("--quiet", action="store_true", help="No progress bar.")
    args = parser.parse_args(argv)
    bar = SweepBar(quiet=args.quiet)
    try:
        store = RunStore()
    except InvlabError as err:
        print(f"invlab sweep: {err}", file=sys.stderr)
        return 1
    sweep_id = args.resume
    try:
        spec = None
        if args.resume is None:
            spec = sweep_spec_from_args(args)
        elif args.file or args.study or args.vary or args.set:
            raise ConfigError("--resume ID takes no sweep file, study or values: it reruns what sweep ID is missing")
        if args.dry_run:
            runs = (spec or _stored_spec(store, args.resume)).runs()
            for run in runs:
                print(run.key)
            print(f"{len(runs)} runs planned", file=sys.stderr)
            return 0
        sweep_id = run_sweep(spec, store=store, scheduler=args.scheduler, n_workers=args.workers,
                             sweep_id=args.resume, progress=bar, dashboard_address=":0" if args.dashboard else None)
    except KeyboardInterrupt:
        bar.close()
        sweep_id = bar.sweep_id if bar.sweep_id is not None else sweep_id
        print(f"\ninterrupted; what finished is stored. Resume with: invlab sweep --resume {sweep_id}",
              file=sys.stderr)
        return 130
    except InvlabError as err:
        bar.close()
        print(f"invlab sweep: {err}", file=sys.stderr)
        return 2 if isinstance(err, ConfigError) else 1
    finally:
        store_path = store.path
        store.close()
    bar.close()
    with RunStore(store_path) as store:
        record = store.get_sweep(sweep_id)
        runs = store.sweep_runs(sweep_id)
    finished = sum(r.status == "finished" for r in runs)
    print(f"sweep {sweep_id} ({record.name}): {record.status}, {finished}/{record.total} runs finished; "
          f"compare them with: invlab compare {sweep_id}")
    return 0 if record.status == "finished" else 1


def _stored_spec(store, sweep_id: int):
    from .sweeps import SweepSpec

    return SweepSpec.from_json(store.get_sweep(sweep_id).spec)


def cmd_sweeps(argv: list[str]) -> int:
    from .train.store import NoRunStore, RunStore

    parser = argparse.ArgumentParser(prog="invlab sweeps", description="List stored sweeps, newest first.")
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--json", action="store_true", help="One JSON object per line.")
    args = parser.parse_args(argv)
    try:
        with RunStore(create=False) as store:  # listing never creates the data directory
            sweeps, where = store.list_sweeps(args.limit), store.path
            counts = {s.id: sum(r.status == "finished" for r in store.sweep_runs(s.id)) for s in sweeps}
    except NoRunStore as err:
        if err.mistyped:
            print(f"invlab sweeps: {err}", file=sys.stderr)
            return 1
        sweeps, counts, where = [], {}, err.path
    except InvlabError as err:
        print(f"invlab sweeps: {err}", file=sys.stderr)
        return 1
    if args.json:
        for s in sweeps:
            print(json.dumps({**s.summary(), "finished": counts[s.id]}))
        return 0
    if not sweeps:
        print(f"no sweeps stored yet in {where}; start one with: invlab sweep --study rotation-choice --quick")
        return 0
    fmt = "{:>4}  {:<28} {:<11} {:>9}  {:<19}"
    print(fmt.format("id", "name", "status", "runs", "started"))
    for s in sweeps:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.created))
        print(fmt.format(s.id, s.name[:28], s.status[:11], f"{counts[s.id]}/{s.total}", started))
    return 0


def _pm(mean, sd, spec: str = ".4g", scale: float = 1.0, unit: str = "") -> str:
    if mean is None:
        return "-"
    text = format(mean * scale, spec) + unit
    return text + (f" ± {format(sd * scale, spec)}{unit}" if sd is not None else "")


def cmd_compare(argv: list[str]) -> int:
    from .sweeps import comparison
    from .train import RunStore

    parser = argparse.ArgumentParser(prog="invlab compare", description="A sweep's points sorted by whole-data ELBO "
                                     "(mean ± sd over seeds), with test error and NLPD.")
    parser.add_argument("sweep_id", type=int, metavar="ID")
    parser.add_argument("--json", action="store_true", help="The whole comparison as one JSON object.")
    args = parser.parse_args(argv)
    try:
        with RunStore() as store:
            cmp = comparison(store, args.sweep_id)
    except InvlabError as err:
        print(f"invlab compare: {err}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(cmp.to_dict()))
        return 0
    print(f"sweep {cmp.sweep_id} ({cmp.name}): {sum(r['status'] == 'finished' for r in cmp.runs)}/{cmp.total} runs "
          "finished")
    print(("" if cmp.comparable else "WARNING: ") + cmp.reason)
    axes = cmp.axes or ["(base)"]
    regression = all(g["error_mean"] is None for g in cmp.groups) and any(g["rmse_mean"] is not None
                                                                         for g in cmp.groups)
    headers = [*axes, "n", "ELBO (whole data)", "test RMSE" if regression else "test error", "NLPD", "learned"]
    rows = []
    for g in cmp.ranked():
        learned = ", ".join(f"{k} {_pm(v['mean'], v['sd'], '.1f')}" for k, v in g["learned"].items())
        score = (_pm(g["rmse_mean"], g["rmse_sd"], ".4g") if regression
                 else _pm(g["error_mean"], g["error_sd"], ".2f", 100, "%"))
        rows.append([*(json.dumps(g.get(a)) if a in g else "" for a in axes), str(g["n"]),
                     _pm(g["elbo_mean"], g["elbo_sd"], ".5g"), score, _pm(g["nlpd_mean"], g["nlpd_sd"], ".4g"),
                     learned or "-"])
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    return 0


COMMANDS = {"train": cmd_train, "runs": cmd_runs, "fetch": cmd_fetch, "serve": cmd_serve, "sweep": cmd_sweep,
            "sweeps": cmd_sweeps, "compare": cmd_compare}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip() + "\n\ncommands: " + ", ".join(COMMANDS))
        return 0
    if argv[0] not in COMMANDS:
        print(f"invlab: unknown command {argv[0]!r}; commands: {', '.join(COMMANDS)} (`invlab --help` explains them)",
              file=sys.stderr)
        return 2
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main())
