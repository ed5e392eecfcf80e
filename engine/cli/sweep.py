"""`invlab sweep`: a sweep from a file, a built-in study or flags, run on Dask and stored; its progress line."""
from __future__ import annotations

import argparse
import json
import math
import sys

from ..errors import ConfigError, InvlabError
from ..train.states import RunStatus, SweepEventKind, SweepStatus
from .flags import id_flag
from .listing import shown


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
    from ..sweeps import SweepSpec, study
    from ..sweeps.spec import apply_point

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


def _told(event) -> str:
    """One plain line for a sweep's event (`SweepEvent`): a run stored (or failed, saying why), the runs submitted."""
    if event.kind == SweepEventKind.SUBMITTED:
        return f"submitted {event.runs} runs"
    if event.status == RunStatus.FINISHED:
        return f"stored run {event.run_id} ({event.key})"
    return f"FAILED {event.key}: {event.message}"


class SweepBar:
    """The sweep's progress on stderr: a tqdm bar on a terminal, one plain line per finished run otherwise."""

    def __init__(self, quiet: bool = False):
        self.quiet, self.bar, self.sweep_id = quiet, None, None
        self.tty = sys.stderr.isatty()

    def status(self, p) -> str:
        """The bar's one-line status for a sweep's progress `p`: runs done / planned, running, failed, best ELBO so far
        and ETA."""
        return (f"{p.done}/{p.total} done, {p.running} running, {p.failed} failed, best ELBO "
                f"{_fmt(p.best_elbo, '.5g')}, ETA {_duration(p.eta_s)}")

    def __call__(self, p) -> None:
        from tqdm import tqdm

        event = p.event
        kind = event.kind if event is not None else None
        if self.sweep_id is None:
            self.sweep_id = p.sweep_id
            print(f"sweep {p.sweep_id}: {p.total} runs, {p.done} already stored "
                  f"(resume with: invlab sweep --resume {p.sweep_id})", file=sys.stderr, flush=True)
        if p.dashboard_link and kind == SweepEventKind.SUBMITTED:
            print(f"Dask dashboard: {p.dashboard_link}", file=sys.stderr, flush=True)
        if self.quiet:
            return
        if self.tty:
            if self.bar is None:
                self.bar = tqdm(total=p.total, initial=p.done, unit="run", dynamic_ncols=True, file=sys.stderr)
            self.bar.update(p.done + p.failed - self.bar.n)
            self.bar.set_postfix_str(f"{p.running} running, {p.failed} failed, best ELBO {_fmt(p.best_elbo, '.5g')}, "
                                     f"ETA {_duration(p.eta_s)}", refresh=True)
            if kind == SweepEventKind.STORED and event.status != RunStatus.FINISHED:
                tqdm.write(f"failed: {event.key}: {event.message}", file=sys.stderr)
        elif kind in (SweepEventKind.STORED, SweepEventKind.SUBMITTED):
            print(f"[{self.status(p)}] {_told(event)}", file=sys.stderr, flush=True)

    def close(self) -> None:
        """Close the progress bar if one was opened (the terminal line is finished)."""
        if self.bar is not None:
            self.bar.close()


def sweep_parser() -> argparse.ArgumentParser:
    """`invlab sweep`'s options."""
    from ..sweeps import STUDIES

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
    parser.add_argument("--resume", type=id_flag("sweep"), metavar="ID",
                        help="Run only the missing runs of stored sweep ID.")
    parser.add_argument("--dashboard", action="store_true", help="Serve Dask's dashboard for the local cluster.")
    parser.add_argument("--dry-run", action="store_true", help="Validate and list the planned runs; run nothing.")
    parser.add_argument("--quiet", action="store_true", help="No progress bar.")
    return parser


def cmd_sweep(argv: list[str]) -> int:
    """`invlab sweep ARGV`; returns the exit status (0: every run finished)."""
    from ..sweeps import run_sweep
    from ..train import RunStore

    args = sweep_parser().parse_args(argv)
    if args.dry_run:  # before the store is opened: a dry run creates nothing
        return _dry_run(args)
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
        print(f"invlab sweep: {err}{_resume_words(err)}", file=sys.stderr)
        return 2 if isinstance(err, ConfigError) else 1
    finally:
        store_path = store.path
        store.close()
    bar.close()
    with RunStore(store_path) as store:
        record = store.sweeps.get(sweep_id)
        runs = store.sweeps.runs(sweep_id)
    finished = sum(r.status == RunStatus.FINISHED for r in runs)
    print(f"sweep {sweep_id} ({shown(record.name)}): {record.status}, {finished}/{record.total} runs finished; "
          f"compare them with: invlab compare {sweep_id}")
    return 0 if record.status == SweepStatus.FINISHED else 1


def _resume_words(err: InvlabError) -> str:
    """How to go on after a lost scheduler (the end of its sentence); nothing for another error."""
    from ..sweeps.scheduler import SchedulerLostError

    if not isinstance(err, SchedulerLostError):
        return ""
    again = f" --scheduler {err.address}" if err.address else ""
    return (f": resume the sweep with `invlab sweep --resume {err.sweep_id}{again}` once a scheduler answers there, or "
            f"with `invlab sweep --resume {err.sweep_id}` to train them on this machine")


def _dry_run(args: argparse.Namespace) -> int:
    """`--dry-run`: the planned runs' keys, one a line (exit 0), or why the sweep is refused (2: its settings, 1: the
    store); it reads a stored sweep (`--resume`) without creating the store or the data directory."""
    from .listing import read_store

    try:
        if args.resume is None:
            spec = sweep_spec_from_args(args)
        elif args.file or args.study or args.vary or args.set:
            raise ConfigError("--resume ID takes no sweep file, study or values: it reruns what sweep ID is missing")
        else:
            found = read_store("sweep", lambda store: _stored_spec(store, args.resume), None)
            if isinstance(found, int):
                return found
            spec, where = found
            if spec is None:
                print(f"invlab sweep: no sweep with id {args.resume} in {where} (no run store there yet)",
                      file=sys.stderr)
                return 1
        runs = spec.runs()
    except InvlabError as err:
        print(f"invlab sweep: {err}", file=sys.stderr)
        return 2 if isinstance(err, ConfigError) else 1
    for run in runs:
        print(run.key)
    print(f"{len(runs)} runs planned", file=sys.stderr)
    return 0


def _stored_spec(store, sweep_id: int):
    from ..sweeps import SweepSpec

    return SweepSpec.from_json(store.sweeps.get(sweep_id).spec)

