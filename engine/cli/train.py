"""`invlab train`: train a model (or continue a stored run) with a progress bar, and store the run.

Its flags are generated from the param configs (data options, the chosen model family's config, the training
setup): bounds, choices and docs come from the parameters, never copied here.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

from ..errors import ConfigError, InvlabError, NonFiniteLossError, printable
from ..train.checkpoint import CheckpointWriteError
from ..train.states import UNHEALTHY, HealthState, RunStatus
from .flags import add_param_flags, collect, id_flag, in_flag_words, source_options
from .listing import shown
from .notes import WarningsAsNotes
from .resuming import resume_from_flags, stored_run, watched_refusal


def _train_parser(model_name: str) -> argparse.ArgumentParser:
    from ..data import DataConfig
    from ..models import get_model, model_names
    from ..train import TrainConfig

    spec = get_model(model_name)
    parser = argparse.ArgumentParser(prog="invlab train", description="Train a model and store the run.")
    parser.add_argument("--model", default="svgp", choices=model_names(), help="Model family (default: svgp).")
    parser.add_argument("--resume", type=id_flag("run"), metavar="ID",
                        help="Continue stored run ID from its latest usable checkpoint. Training flags given with it "
                             "(steps, learning rate, schedule, intervals ...) apply from there on and are recorded; "
                             "data and model flags, --optimizer and --seed would need a new run and are refused.")
    parser.add_argument("--restart", action="store_true",
                        help="With --resume ID: train run ID's settings again as a new run from step 0, with every "
                             "flag given (--model included) over them; run ID is kept as it is.")
    parser.add_argument("--source-option", action="append", default=[], metavar="KEY=VALUE",
                        help="Option of the data source, e.g. num_train=500 (repeatable).")
    parser.add_argument("--quiet", action="store_true", help="No progress bar.")
    parser.add_argument("--json", action="store_true",
                        help="End with one JSON line on stdout: run id, status, step, ELBO and final test metrics "
                             "(also when the run stops early).")
    table: dict[str, tuple[str, str]] = {}
    add_param_flags(parser, TrainConfig, "train", table)
    add_param_flags(parser, DataConfig, "data", table)
    add_param_flags(parser, spec.config, "model", table)
    return parser


def cmd_train(argv: list[str]) -> int:
    """`invlab train ARGV`; returns the exit status (0 finished, 1 refused or failed, 2 usage, 128+N signal)."""
    pre = argparse.ArgumentParser(prog="invlab train", add_help=False)
    pre.add_argument("--model", default=None)
    pre.add_argument("--resume", default=None)  # read as text here: the full parser names a bad value
    known, _ = pre.parse_known_args(argv)
    stored = stored_run(known.resume) if known.resume is not None else None
    if stored is not None and stored.name is not None:  # written by watch(): the user's loop, not a model family
        print(f"invlab train: {watched_refusal(stored)}", file=sys.stderr)
        return 1
    if known.model is None:  # a resumed run's flags are its own family's, so they can be named when refused
        known.model = stored.model if stored is not None else "svgp"
    try:
        parser = _train_parser(known.model)
    except ConfigError as err:
        print(f"invlab train: {err}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    if args.restart and args.resume is None:
        parser.error("--restart goes with --resume ID (it trains run ID's settings again as a new run)")
    with WarningsAsNotes(_note) as notes:  # a warning from inside training is one plain sentence
        return _train(parser, args, collect(args), argv, notes)


def _train(parser, args, values: dict, argv: list[str], notes) -> int:
    """`invlab train` once its command line is read: build (or resume) the run, train it, say how it ended."""
    from ..train import RunConfig, RunStore, Trainer

    store = None
    try:
        store = RunStore(on_busy=lambda message: _note(f"note: {message}"))
        if args.resume is not None:
            trainer = resume_from_flags(store, parser, args, values, explicit_model=any(
                a == "--model" or a.startswith("--model=") for a in argv))
            if trainer is None:
                return 2
        else:
            data = dict(values["data"])
            if args.source_option:
                data["source_options"] = source_options(args.source_option)
            config = RunConfig(model=args.model, data=data, model_config=values["model"], train=values["train"])
            trainer = Trainer(config, store=store)
            if trainer.last_warning:  # e.g. more inducing points than data: said, never a silent change
                print(f"note: {trainer.last_warning}", file=sys.stderr)
        notes.dtype = trainer.dtype
        code = _run_with_progress(trainer, quiet=args.quiet, as_json=args.json)
        store.close()  # waits for a store another program holds locked, so queued metrics are not lost
        return code
    except InvlabError as err:
        print(f"invlab train: {in_flag_words(str(err), parser)}", file=sys.stderr)
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


def _run_with_progress(trainer, quiet: bool = False, as_json: bool = False) -> int:
    """Train `trainer` to its steps with a progress bar; print the summary (and with `as_json` the JSON line)."""
    t0 = time.perf_counter()
    start = trainer.step_count
    code = _train_with_bar(trainer, quiet)
    if as_json:
        print(result_json(trainer, time.perf_counter() - t0, trainer.step_count - start))
    return code


def _train_with_bar(trainer, quiet: bool) -> int:
    from tqdm import tqdm

    ds = trainer.dataset
    print(f"run {trainer.record.run_id}: {trainer.spec.name} on {shown(ds.name)} ({ds.num_train} train / {ds.num_test} "
          f"test), {trainer.device} {str(trainer.dtype).replace('torch.', '')}", file=sys.stderr)
    total = trainer.tc.steps
    start, t0 = trainer.step_count, time.perf_counter()
    bar = tqdm(total=total, initial=start, disable=quiet, unit="step", dynamic_ncols=True, file=sys.stderr)
    said = HealthState.OK  # the last health state reported: a collapse, divergence or stall is said once, as it starts
    stopper = _StopOnSignal()
    try:
        with stopper:
            for snap in trainer.run(every=max(1, trainer.tc.log_every), stop=stopper.event):
                bar.update(snap.step - bar.n)
                post = {k: f"{v:.4g}" for k, v in snap.parts.items() if k in ("elbo", "loss")}
                post.update({k.replace("test_", ""): f"{v:.4g}" for k, v in snap.metrics.items()})
                bar.set_postfix(post, refresh=False)
                if snap.health.state != said and snap.health.state in UNHEALTHY:
                    hint = snap.health.hint.replace("press Reset", "train again")  # the hint speaks to the page
                    tqdm.write(f"step {snap.step}: {snap.health.state}: {hint}", file=sys.stderr)
                said = snap.health.state
    except NonFiniteLossError as err:
        bar.close()
        print(f"invlab train: {err}", file=sys.stderr)
        if not err.kernel_fault:  # a kernel that is not finite stays so at any learning rate
            print(f"resume with: invlab train --resume {trainer.record.run_id} --learning-rate <smaller>",
                  file=sys.stderr)
        return 1
    except CheckpointWriteError as err:
        bar.close()
        return _unwritable(trainer, err)
    except KeyboardInterrupt:  # a second Ctrl-C or SIGTERM: stopped at once, maybe mid-step
        bar.close()
        return _stopped(trainer, "a second signal", 130)
    if stopper.event.is_set() and trainer.status != RunStatus.FINISHED:
        bar.close()
        return _stopped(trainer, stopper.name, 128 + int(stopper.signal))
    bar.close()
    seconds = time.perf_counter() - t0
    if trainer.solve.converged:
        print(f"converged: the L-BFGS solve stopped changing at step {trainer.step_count} of {total}, so the run "
              f"finished early", file=sys.stderr)
    print(summary_line(trainer, seconds, trainer.step_count - start))
    return 0


def _stopped(trainer, what: str, code: int) -> int:
    """After Ctrl-C or SIGTERM: a final checkpoint (unless a step was cut off midway), status `interrupted`."""
    from ..train import CheckpointError

    saved = ""
    if trainer.record.store is not None:
        try:
            trainer.save_checkpoint()
            saved = ", checkpoint saved"
        except (CheckpointError, OSError) as err:
            latest = trainer.record.store.checkpoints.latest(trainer.record.run_id)
            saved = f"; no final checkpoint ({err}); the latest is at step {latest[0] if latest else '-'}"
        message = (f"stopped by {what} at step {trainer.step_count}{saved}; resume with: "
                   f"invlab train --resume {trainer.record.run_id}")
        trainer._set_status(RunStatus.INTERRUPTED, message=message)
    print(f"\ninterrupted by {what} at step {trainer.step_count}{saved}; resume with: "
          f"invlab train --resume {trainer.record.run_id}", file=sys.stderr)
    return code


def _unwritable(trainer, err) -> int:
    """After a checkpoint that could not be written (`CheckpointWriteError`): the run stops, marked `interrupted`
    with the sentence that names the folder and how to go on from the latest checkpoint written."""
    run_id = trainer.record.run_id
    written = trainer.record.store.checkpoints.list(run_id) if trainer.record.store is not None else []
    latest = written[0] if written else None  # its file may be in the folder that went away: it is named anyway
    then = (f"then continue from its latest checkpoint (step {latest[0]}) with: invlab train --resume {run_id}"
            if latest else f"then train its settings again (no checkpoint of it was written) with: invlab train "
                           f"--resume {run_id} --restart")
    message = (f"run {run_id} stopped at step {trainer.step_count}: its checkpoint could not be written to "
               f"{err.folder} ({err.reason}). Make that folder writable (or free space on its disk), {then}")
    trainer._set_status(RunStatus.INTERRUPTED, message=message)
    print(f"invlab train: {message}", file=sys.stderr)
    return 1


def result_json(trainer, seconds: float, steps: int) -> str:
    """The run's outcome as one line of JSON: run id, family, dataset, status, step, ELBO and the last test metrics
    (test_error as a fraction, test_rmse in the target's units, test_nlpd), steps trained and seconds taken."""
    out = {"run_id": trainer.record.run_id, "model": trainer.spec.name, "dataset": trainer.dataset.name,
           "status": trainer.status, "step": trainer.step_count, "steps": trainer.tc.steps}
    out.update({k: float(v) for k, v in trainer.last_parts.items()})
    out.update({k: float(v) for k, v in trainer.report.last_metrics.items()})
    out.update({"steps_trained": steps, "seconds": round(seconds, 3)})
    return json.dumps({k: (v if not isinstance(v, float) or math.isfinite(v) else None) for k, v in out.items()})


def summary_line(trainer, seconds: float, steps: int) -> str:
    """The one-line result of a run: id, family, data, step, ELBO, test metrics (the RMSE in the target column's
    units, named when the table names it) and speed."""
    m = trainer.report.last_metrics
    target = (getattr(trainer.dataset, "metadata", None) or {}).get("target")
    parts = [f"run {trainer.record.run_id}", f"{trainer.spec.name} on {shown(trainer.dataset.name)}",
             f"step {trainer.step_count}"]
    if "elbo" in trainer.last_parts:
        parts.append(f"ELBO {trainer.last_parts['elbo']:.4g}")
    if "test_error" in m:
        parts.append(f"test error {100 * m['test_error']:.2f}%")
    if "test_rmse" in m:
        parts.append(f"test RMSE {m['test_rmse']:.4g}" + (f" {printable(target)}" if target is not None else ""))
    if "test_nlpd" in m:
        parts.append(f"NLPD {m['test_nlpd']:.4g}")
    rate = steps / seconds if seconds > 0 else math.nan
    parts.append(f"{steps} steps in {seconds:.1f} s ({rate:.1f} steps/s)")
    return " | ".join(parts)

