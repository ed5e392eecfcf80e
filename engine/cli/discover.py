"""`invlab discover --dataset DATA`: which invariances does a data set have? Every applicable registered augmentation
or orbit and no invariance (`none`) fitted over seeds as one stored sweep, ranked by whole-data ELBO, printed, written
as an offline HTML report and (with --json) as one JSON line last."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import InvlabError, printable
from ..train.states import RunStatus
from .flags import add_param_flags, collect, in_flag_words, int_flag

HELP = """Fit no invariance (`none`) and every registered augmentation or orbit that applies to the data (images:
rotation, affine, deformation, rot90, flips, cyclic_shifts; vectors: permutations, sign_flips; plugin orbits alike),
each with its ranges learned where it has any, over seeds; rank them by the ELBO on the whole training set with the
log Bayes factor against none; then combine the two best that beat none (stage 2). Every candidate gets the same
model (the invariant GP), kernel, inducing points, samples, steps and learning rate; the runs are stored as one sweep
(`invlab compare ID` lists them too)."""


def _parser() -> argparse.ArgumentParser:
    from ..data import DataConfig
    from ..sweeps.discover import DEFAULT_TRAIN

    parser = argparse.ArgumentParser(prog="invlab discover", description=HELP)
    parser.add_argument("--seeds", type=int_flag("--seeds", 1, 100), default=3,
                        help="Training seeds per candidate (default: 3); the spread over seeds says what is noise.")
    parser.add_argument("--steps", type=int_flag("--steps", 1, 1_000_000), default=300,
                        help="Optimiser steps per run, the same for every candidate (default: 300).")
    parser.add_argument("--orbit", action="append", metavar="NAME[:COORDS]",
                        help="Only this registered augmentation or orbit (repeatable); default: every one that "
                             "applies. A group on named vector coordinates: permutations:0,1 or sign_flips:2.")
    parser.add_argument("--no-combine", action="store_true",
                        help="Skip stage 2 (by default the two best single candidates that each beat none beyond "
                             "noise are combined, e.g. rotation+flips, and trained like the others).")
    parser.add_argument("--num-inducing", type=int_flag("--num-inducing", 1, 100_000), default=30,
                        help="Inducing points M of every candidate (default: 30).")
    parser.add_argument("--num-samples", type=int_flag("--num-samples", 2, 1024), default=6,
                        help="Augmented samples S per input and step (a finite orbit's whole orbit when smaller; "
                             "default: 6).")
    parser.add_argument("--learning-rate", type=float, default=0.02, help="Adam's learning rate (default: 0.02).")
    parser.add_argument("--batch-size", type=int_flag("--batch-size", 0), default=100,
                        help="Minibatch size, 0 = full batch (default: 100).")
    parser.add_argument("--elbo-precision", type=float, default=DEFAULT_TRAIN["elbo_precision"], metavar="NATS",
                        help="The Monte-Carlo standard error to which each sampled candidate's whole-data ELBO is "
                             "estimated, within a cap of 4096 samples per input; 0 = one evaluation (default: "
                             f"{DEFAULT_TRAIN['elbo_precision']:g}).")
    parser.add_argument("--source-option", action="append", default=[], metavar="KEY=VALUE",
                        help="Option of the data source, e.g. num_train=500 (repeatable).")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="A running Dask scheduler (tcp://host:8786); default: a LocalCluster on this machine.")
    parser.add_argument("--workers", type=int_flag("--workers", 1, 1024), default=None,
                        help="Worker processes of the LocalCluster (default: one per core).")
    parser.add_argument("--serial", action="store_true", help="Train the runs one after another in this process "
                        "(no Dask needed: the way to run discover where Dask is not installed).")
    parser.add_argument("--report", metavar="PATH",
                        help="Where to write the HTML report (default: discover-ID.html next to the run store).")
    parser.add_argument("--json", action="store_true",
                        help='End with one JSON line: {"ranking": [{"candidate", "elbo_mean", "elbo_sd", "elbo_mc_se", '
                             '"log_bf", "learned": {NAME: {"final", "kind", ...}}, ...}, ...], "verdict", '
                             '"second_opinion": {"agrees", "text"}, "notes", "partial", ...}.')
    parser.add_argument("--quiet", action="store_true", help="No progress lines.")
    # The data's seed is --data-seed, as `invlab train` names it (there --seed is the training seed; here the
    # training seeds are --seeds); --seed, this command's first name for it, still works for scripts.
    add_param_flags(parser, DataConfig, "data", {"seed": ("train", "seed")})
    parser.add_argument("--seed", dest="old_data_seed", type=int, metavar="SEED",
                        help="The same as --data-seed (its older name here, kept for scripts): the data's seed, not "
                             "a training seed (those are --seeds).")
    return parser


def _data(args, parser) -> dict:
    from .flags import source_options

    data = dict(collect(args)["data"])
    if args.old_data_seed is not None:
        if data.get("seed", args.old_data_seed) != args.old_data_seed:
            parser.error("--seed is the older name of --data-seed: give one of them")
        data["seed"] = args.old_data_seed
    if args.source_option:
        data["source_options"] = source_options(args.source_option)
    return data


def print_report(report, out=None) -> None:
    """The report for a terminal (`out`, default stdout): status, the ranked table, the verdict, the held-out test
    figures' second opinion and the notes."""
    out = out if out is not None else sys.stdout
    from ..sweeps.discover_html import table_rows

    headers, rows = table_rows(report, limit=3)
    rows = [[printable(cell) for cell in row] for row in rows]  # a column's name may hold control characters
    state = "partial: " if report.partial else ""
    print(f"discover {report.sweep_id} on {report.dataset}: {state}{report.stored}/{report.total} runs stored",
          file=out)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(), file=out)
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip(), file=out)
    print(f"verdict: {printable(report.verdict)}", file=out)
    if report.second is not None:
        print(f"second opinion: {printable(report.second.text)}", file=out)
    for note in report.notes:
        print(f"  - {printable(note)}", file=out)


def _teller(plan, sweep_id: int, args: argparse.Namespace):
    """Say on stderr what the study trains (unless --quiet), and return what says each stored run."""
    if not args.quiet:
        shown = ", ".join(printable(plan.label(n)) for n in plan.names)  # a group by its column names
        print(f"discover {sweep_id}: {len(plan.candidates)} candidates ({shown}) × "
              f"{len(plan.spec.seeds)} seeds, {args.steps} steps each", file=sys.stderr, flush=True)

    def said(candidate, seed, run_id, status, message):
        if not args.quiet:
            tail = f": {message}" if status != RunStatus.FINISHED and message else ""
            print(f"  {printable(plan.label(candidate))} seed {seed}: {status} (run {run_id}){tail}",
                  file=sys.stderr, flush=True)

    return said


def cmd_discover(argv: list[str]) -> int:
    """`invlab discover ARGV`; returns the exit status (0 every run finished, 1 refused or a run failed, 2 usage,
    130 interrupted)."""
    from ..sweeps.discover import check_runner, create_sweep, plan_candidates, run_candidates
    from ..sweeps.discover_html import write_report
    from ..sweeps.discover_report import discover_report, ranking_json
    from ..train import RunStore

    parser = _parser()
    args = parser.parse_args(argv)
    if args.serial and (args.scheduler or args.workers):
        parser.error("--serial trains in this process; leave out --scheduler and --workers")
    interrupted = False
    store = None
    try:
        data = _data(args, parser)
        plan = plan_candidates(data, seeds=args.seeds, steps=args.steps, orbits=args.orbit,
                               model_config={"num_inducing": args.num_inducing, "num_samples": args.num_samples},
                               train={"learning_rate": args.learning_rate, "batch_size": args.batch_size,
                                      "elbo_precision": args.elbo_precision},
                               combine=not args.no_combine)
        check_runner(args.scheduler, args.serial)  # no Dask, or no scheduler at the address: nothing is stored
        store = RunStore()
        sweep_id = create_sweep(plan, store)
        try:
            run_candidates(plan, store, sweep_id=sweep_id, scheduler=args.scheduler, n_workers=args.workers,
                           serial=args.serial, on_result=_teller(plan, sweep_id, args))
        except KeyboardInterrupt:
            interrupted = True
            print("\ninterrupted: the finished candidates are kept; the report is partial", file=sys.stderr)
        report = discover_report(store, sweep_id)
        path = Path(args.report) if args.report else store.path.parent / f"discover-{sweep_id}.html"
        write_report(report, path)
    except InvlabError as err:
        print(f"invlab discover: {in_flag_words(str(err), parser)}", file=sys.stderr)
        return 1
    except OSError as err:
        print(f"invlab discover: cannot write the report: {err}", file=sys.stderr)
        return 1
    finally:
        if store is not None:
            store.close()
    print_report(report)
    print(f"report: {path}")
    if args.json:
        print(ranking_json(report))
    if interrupted:
        return 130
    failed = any(c.failed for c in report.ranking)
    return 1 if failed else 0


__all__ = ["cmd_discover", "print_report"]
