"""Every model family's default in the page, trained by the Trainer alone: is it quick enough to watch?

The page (dashboard) starts each family from the engine's config defaults overridden by
`invlab.dashboard.state.FAMILY_DEFAULTS`, on the dataset `invlab.dashboard.state.FAMILY_DATASETS` gives it.
Targets:
at least 5 steps/s on a 2-core CPU with one torch thread, and a first test-error point within 10 s
of pressing Start.

For each family, in this process, with one torch intra-op thread (`--threads`):
- `build_s`: building the Trainer (loading the data, initialising the model), as the session does on Start;
- steps through `Trainer.run(every=10)` as the session drives them (evaluation off: the page evaluates by wall
  time): `steps_per_s` from the wall clock, and `cpu_ms_per_step` from this thread's CPU time, which does not
  depend on what else the machine runs (on a quiet 2-core machine steps/s ≈ 1000 / cpu_ms_per_step);
- `views_ms`: one `snapshot(views=True)` (diagnostics and numerics: what the page draws every couple of seconds);
- `eval_ms`: one `evaluate()` on the page's test subset (`train.eval_size` points);
- `page_steps_per_s`: the step rate left once the page's periodic work is paid (views every `--view-interval` s and
  an evaluation every `--eval-interval` s, both on the training thread);
- `first_eval_s`: build + first step + one evaluation — when the page's first test-error point exists (the session
  evaluates as soon as a run starts); the page shows it at its next tick;
- `converged`: an L-BFGS solve (`rkhs`) that stopped because it converged; its rate is over the steps it took.
The figures are medians over `--repeats` measurements taken round-robin over the families (interleaved, so a
burst of load on a shared machine does not fall on one family only).

    python -m benchmarks.dashboard.page_defaults [--quick] [--family NAME ...] [--dataset digits]

The last line printed is one JSON object.
"""
from __future__ import annotations

import os
import statistics
import time

from ..common import arguments, emit, parse


def page_config(family: str, dataset: str | None = None):
    from invlab.dashboard.state.defaults import page_run_config

    return page_run_config(family, dataset)


def suits(family: str, dataset: str) -> bool:
    """Whether the page can run `family` on `dataset` (its task, and images where the family needs them)."""
    from invlab.data.sources import resolve
    from invlab.models import get_model

    spec, source = get_model(family), resolve(dataset)
    return source.task in spec.tasks and (source.kind == "image" or not spec.image_only)


def _cpu_wall():
    return time.thread_time(), time.perf_counter()


class FamilyProbe:
    """One family's page default: a Trainer and the measurements taken on it."""

    def __init__(self, family: str, dataset: str | None = None):
        from invlab.train import Trainer

        self.family = family
        config = page_config(family, dataset)
        config.train = dict(config.train, eval_every=0, steps=10_000_000)  # the page evaluates by wall time
        self.config = config
        t0 = time.perf_counter()
        self.trainer = Trainer(config)
        self.build_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        self.trainer.step()
        self.first_step_s = time.perf_counter() - t0
        self.rates, self.cpu_ms, self.views_ms, self.eval_ms = [self.first_step_rate()], [], [], []
        self.converged = False

    def first_step_rate(self) -> float:
        return 1.0 / self.first_step_s

    def measure(self, steps: int, warmup: int) -> None:
        trainer = self.trainer
        for _ in trainer.run(steps=warmup, every=10):
            pass
        first = trainer.step_count
        (c0, w0) = _cpu_wall()
        for _ in trainer.run(steps=steps, every=10):  # what the session's thread does between its extra work
            pass
        (c1, w1) = _cpu_wall()
        taken = trainer.step_count - first  # fewer than asked once an L-BFGS solve has converged
        if taken > 0:
            self.rates.append(taken / (w1 - w0))
            self.cpu_ms.append(1000 * (c1 - c0) / taken)
        self.converged = trainer.solve.converged
        t0 = time.perf_counter()
        trainer.report.snapshot(views=True)
        self.views_ms.append(1000 * (time.perf_counter() - t0))
        t0 = time.perf_counter()
        trainer.report.evaluate()
        self.eval_ms.append(1000 * (time.perf_counter() - t0))

    def row(self, view_interval: float, eval_interval: float) -> dict:
        rate = statistics.median(self.rates[1:] or self.rates)  # the first step only when no other was taken
        views, evals = statistics.median(self.views_ms) / 1000, statistics.median(self.eval_ms) / 1000
        busy = views / view_interval + evals / eval_interval  # share of the training thread's time they take
        data = self.config.data
        return {
            "family": self.family,
            "dataset": data.get("dataset", "digits"),
            "num_train": int(self.trainer.X.shape[0]),
            "batch_size": self.trainer.tc.batch_size,
            "eval_size": int(len(self.trainer.evaluation.indices)),
            "build_s": round(self.build_s, 2),
            "steps_per_s": round(rate, 1),
            "cpu_ms_per_step": round(statistics.median(self.cpu_ms), 1) if self.cpu_ms else None,
            "views_ms": round(1000 * views, 1),
            "eval_ms": round(1000 * evals, 1),
            "page_steps_per_s": round(rate * max(0.0, 1.0 - busy), 1),
            "first_eval_s": round(self.build_s + self.first_step_s + evals, 2),
            "converged": self.converged,
        }


def warm_up() -> None:
    """Import what building and stepping a Trainer imports (a served page has done so long before Start)."""
    from invlab.train import RunConfig, Trainer

    Trainer(RunConfig(data={"dataset": "two-moons"}, train={"steps": 1})).step()


def main(argv: list[str] | None = None) -> dict:
    from invlab.models import model_names

    parser = arguments(__doc__, quick="1 repetition of 20 steps per family.")  # --threads 1: the page gives a session 1
    parser.add_argument("--family", nargs="*", default=None, help="Only these families (default: all).")
    parser.add_argument("--repeats", type=int, default=None, help="Round-robin repetitions (default 3).")
    parser.add_argument("--steps", type=int, default=None, help="Timed steps per repetition (default 50).")
    parser.add_argument("--dataset", default=None,
                        help="Run every family that can on this data set instead of its own (e.g. digits, which the "
                             "page keeps when the family changes).")
    parser.add_argument("--view-interval", type=float, default=2.0, help="Seconds between the page's view snapshots.")
    parser.add_argument("--eval-interval", type=float, default=2.0, help="Seconds between the page's evaluations.")
    args = parse(parser, argv)
    repeats = args.repeats or (1 if args.quick else 3)
    steps = args.steps or (2 if args.smoke else 20 if args.quick else 50)
    families = args.family or (["svgp"] if args.smoke else model_names())
    if args.dataset:
        families = [f for f in families if suits(f, args.dataset)]
    warm_up()

    t_start = time.perf_counter()
    print(f"{len(families)} families, {repeats} round-robin repetitions of {steps} steps, threads {args.threads}, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}", flush=True)
    probes = [FamilyProbe(f, args.dataset) for f in families]
    for _ in range(repeats):
        for probe in probes:
            probe.measure(steps, warmup=3)
    rows = [p.row(args.view_interval, args.eval_interval) for p in probes]
    columns = list(rows[0])
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in columns}
    print("  ".join(c.rjust(widths[c]) for c in columns))
    for r in rows:
        print("  ".join(str(r[c]).rjust(widths[c]) for c in columns))
    slow = [r["family"] for r in rows if r["page_steps_per_s"] < 5.0 or r["first_eval_s"] > 10.0]
    result = {
        "benchmark": "page_defaults",
        "families": {r["family"]: {k: v for k, v in r.items() if k != "family"} for r in rows},
        "min_page_steps_per_s": min(r["page_steps_per_s"] for r in rows),
        "min_steps_per_s_from_cpu": round(min(1000 / r["cpu_ms_per_step"] for r in rows if r["cpu_ms_per_step"]), 1),
        "max_first_eval_s": max(r["first_eval_s"] for r in rows),
        "below_target": slow,
        "dataset": args.dataset or "each family's own",
        "threads": args.threads,
        "seconds": round(time.perf_counter() - t_start, 1),
    }
    return emit(result)


if __name__ == "__main__":
    main()
