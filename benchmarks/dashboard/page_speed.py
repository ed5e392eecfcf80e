"""The page at the machine's speed: steps/s read from the served page in Chromium against the engine alone.

What a person gets: the dashboard served as `invlab serve` serves it (its own defaults: no thread override, no
steps/s cap, its own data directory), opened in Debian's headless Chromium, the page's default run (svgp on digits
with the page's defaults) given a step budget that outlasts the benchmark (`?train.steps=1000000`), and ▶ Start
pressed. Its steps/s are read from the page itself: the status line's step counter (`[data-field=step]`), read as
it changes `--settle` seconds after the run is going and again `--window` seconds later.

Against it, the engine alone: the same configuration (`Explorer().run_config()`, what the page trains) trained by
`invlab.train.Trainer` in a fresh process with torch's default threads, evaluating on the page's wall-clock
schedule (every `eval_interval` seconds, as the page's session does), its steps counted over the same settling time
and window. The two take turns (alone, page, alone, page, ...): the page is paused while the alone arm trains, and
the alone arm's process is stopped (SIGSTOP) while the page trains and continued (SIGCONT) for its turn. Each arm
first trains `--warmup` seconds untimed. Short turns keep the two arms within seconds of each other, so that the
machine's own drift (on a shared 2-core machine, steps/s of either arm alone move by a fifth within minutes) falls
on both alike. `ratio` is the median over turns of page ÷ the alone arm's turn just before it; `ratio_of_means` is
the page's mean steps/s ÷ the alone arm's.

Run `python -m benchmarks.dashboard.page_speed [--quick | --smoke] [--repeats N]`; the last line printed is one JSON
object. The page's curves and views keep going to the browser throughout, as they do for a user.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from ..common import arguments, emit, log

ROOT = Path(__file__).resolve().parents[2]
BUDGET = 1_000_000  # steps: the run never finishes during the benchmark


def page_config():
    """The page's default run with the benchmark's step budget, and the session's evaluation interval (seconds)."""
    from invlab.dashboard import Explorer

    explorer = Explorer(store=None)
    try:
        config = explorer.run_config()
        interval = float(explorer.session.eval_interval or 0.0)
    finally:
        explorer.close()
    config.train = dict(config.train, steps=BUDGET)
    return config, interval


def alone() -> None:
    """The engine alone (run in a fresh process by `--alone`): trains the page's run for good, evaluating on the
    page's wall-clock schedule, and prints `monotonic-seconds step` after every 10 steps. The benchmark stops and
    continues the whole process (SIGSTOP / SIGCONT) to take turns with the page."""
    from invlab.train import Trainer

    config, interval = page_config()
    trainer = Trainer(config)
    last_eval = -float("inf")
    for _ in trainer.run(steps=BUDGET, every=10):  # the session's `every` for log_every = 10
        now = time.monotonic()
        if interval and now - last_eval >= interval:  # as the page's session: by wall time
            trainer.report.evaluate()
            last_eval = time.monotonic()
        print(f"{time.monotonic():.6f} {trainer.step_count}", flush=True)
    raise SystemExit("the alone arm ran out of steps")


class AloneArm:
    """The engine alone in a fresh process with torch's default threads (`alone`), stopped between its turns."""

    def __init__(self):
        env = {k: v for k, v in os.environ.items() if k not in ("INVLAB_TORCH_THREADS", "OMP_NUM_THREADS")}
        self._stderr = tempfile.TemporaryFile(mode="w+")  # a file, not a pipe: warnings never fill it and block
        self.proc = subprocess.Popen([sys.executable, "-m", "benchmarks.dashboard.page_speed", "--alone"], cwd=ROOT,
                                     env=env, stdout=subprocess.PIPE, stderr=self._stderr, text=True)
        self.latest: tuple[float, int] | None = None
        self._changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            t, step = line.split()
            with self._changed:
                self.latest = (float(t), int(step))
                self._changed.notify_all()

    def next_count(self, timeout: float = 600) -> tuple[float, int]:
        """The moment of the next step count it prints, and the count (10 steps apart)."""
        with self._changed:
            before = self.latest
            if not self._changed.wait_for(lambda: self.latest is not before, timeout=timeout):
                self._stderr.seek(0)
                err = self._stderr.read()[-2000:]
                raise SystemExit(f"the alone arm printed no step in {timeout:g} s{':' if err else ''}\n{err}")
            return self.latest

    def run(self, warmup: float, window: float) -> float:
        """Continue the process, let it train `warmup` s, count its steps over `window` s, stop it."""
        os.kill(self.proc.pid, signal.SIGCONT)
        try:
            time.sleep(warmup)
            t0, s0 = self.next_count()
            time.sleep(window)
            t1, s1 = self.next_count()
        finally:
            os.kill(self.proc.pid, signal.SIGSTOP)
        return (s1 - s0) / (t1 - t0)

    def start(self, warmup: float) -> None:
        """Wait for its first steps and `warmup` s more (its start-up is not timed), then stop it."""
        self.next_count()
        time.sleep(warmup)
        os.kill(self.proc.pid, signal.SIGSTOP)

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.kill()
        self.proc.wait(timeout=60)
        self._stderr.close()


class PageArm:
    """The dashboard served as `invlab serve` serves it, and its page in headless Chromium, training."""

    def __init__(self, workdir: Path):
        from playwright.sync_api import sync_playwright

        from invlab.dashboard.serving.process import CHROMIUM_ARGS, chromium_path, serve_dashboard_process

        chromium = chromium_path()
        if chromium is None:
            raise SystemExit("benchmarks.dashboard.page_speed needs Chromium (Debian's /usr/bin/chromium, "
                             "or INVLAB_CHROMIUM)")
        defaults = {"INVLAB_TORCH_THREADS": None, "INVLAB_MAX_STEPS_PER_S": None}  # the server's own, whatever is set
        self._server = serve_dashboard_process(workdir, extra_env=defaults, timeout=600.0)
        url, _ = self._server.__enter__()
        self._pw = sync_playwright().start()
        self.browser = self._pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        self.page = self.browser.new_page(viewport={"width": 1400, "height": 1000})
        self.errors: list[str] = []
        self.page.on("pageerror", lambda err: self.errors.append(str(err)))
        self.page.goto(f"{url}?train.steps={BUDGET}", timeout=600_000)
        from .overhead import show_training_page

        show_training_page(self.page, timeout=600)

    def field(self, name: str) -> str:
        return self.page.locator(f".invlab-status [data-field={name}]").first.inner_text()

    def step(self) -> int:
        digits = re.sub(r"\D", "", self.field("step"))
        return int(digits) if digits else 0

    def wait(self, predicate, timeout: float, what: str) -> None:
        deadline = time.time() + timeout
        while not predicate():
            if time.time() > deadline:
                raise SystemExit(f"timed out waiting for {what} (state {self.field('state')!r})")
            time.sleep(0.1)

    def next_count(self) -> tuple[float, int]:
        """The moment the status line's step counter next changes, and its new value: the counter moves once a tick,
        so a window read between ticks would be up to a tick's steps off at each end."""
        from .latency import HELPERS_JS

        self.page.evaluate(HELPERS_JS)  # window.__lat.field: a status field found through the shadow roots
        before = self.page.evaluate("() => window.__lat.field('step')")
        self.page.wait_for_function("(old) => window.__lat.field('step') !== old", arg=before, polling=10,
                                    timeout=60_000)
        return time.perf_counter(), self.step()

    def run(self, warmup: float, window: float) -> float:
        """Press Start, let it train `warmup` s, count the page's steps over `window` s, press Pause."""
        self.page.get_by_role("button", name="▶ Start").click()
        self.wait(lambda: self.field("state") == "running" and self.step() > 0, 600, "the page to train")
        time.sleep(warmup)
        t0, s0 = self.next_count()
        time.sleep(window)
        t1, s1 = self.next_count()
        self.page.get_by_role("button", name="❚❚ Pause").click()
        self.wait(lambda: self.field("state") == "paused", 120, "the page to pause")
        return (s1 - s0) / (t1 - t0)

    def close(self) -> None:
        try:
            self.browser.close()
            self._pw.stop()
        finally:
            self._server.__exit__(None, None, None)


def main(argv: list[str] | None = None) -> dict:
    parser = arguments(__doc__, quick="4 turns of 5 s windows.", threads=False)
    parser.add_argument("--repeats", type=int, default=None, help="Turns of each arm (default 8).")
    parser.add_argument("--warmup", type=float, default=None,
                        help="Seconds each arm trains, untimed, before its first turn (default 8).")
    parser.add_argument("--settle", type=float, default=None,
                        help="Seconds an arm trains after it is continued before its window opens (default 2).")
    parser.add_argument("--window", type=float, default=None, help="Seconds a window lasts (default 10).")
    parser.add_argument("--alone", action="store_true", help=argparse.SUPPRESS)  # the alone arm's own process
    args = parser.parse_args(argv)
    if args.alone:
        alone()
        return {}
    args.quick = args.quick or args.smoke
    warmup = args.warmup if args.warmup is not None else (1.0 if args.smoke else 4.0 if args.quick else 8.0)
    settle = args.settle if args.settle is not None else (0.5 if args.smoke else 2.0)
    window = args.window if args.window is not None else (2.0 if args.smoke else 5.0 if args.quick else 10.0)
    repeats = args.repeats or (1 if args.smoke else 4 if args.quick else 8)
    started, load_before = time.perf_counter(), os.getloadavg()[0]
    log(f"{repeats} turns of {window:g} s windows ({settle:g} s after each continue; {warmup:g} s of warm-up), "
        f"{os.cpu_count()} cores, load {load_before:.2f}")
    page_rates, alone_rates = [], []
    with tempfile.TemporaryDirectory(prefix="invlab-page-speed-") as tmp:
        arm = PageArm(Path(tmp))
        solo = AloneArm()
        try:
            solo.start(warmup)
            arm.run(warmup, 0.0)  # the page's warm-up turn, not counted
            for r in range(repeats):
                alone_rates.append(solo.run(settle, window))
                page_rates.append(arm.run(settle, window))
                log(f"turn {r + 1}: alone {alone_rates[-1]:.2f} steps/s, page {page_rates[-1]:.2f} steps/s, "
                    f"ratio {page_rates[-1] / alone_rates[-1]:.3f}")
            errors = len(arm.errors)
        finally:
            solo.close()
            arm.close()
    return emit({
        "benchmark": "dashboard_page_speed",
        "ratio": round(statistics.median(p / a for p, a in zip(page_rates, alone_rates)), 4),
        "ratio_of_means": round(statistics.fmean(page_rates) / statistics.fmean(alone_rates), 4),
        "steps_per_s_page": round(statistics.median(page_rates), 3),
        "steps_per_s_alone": round(statistics.median(alone_rates), 3),
        "repeats": repeats,
        "window_s": window,
        "page_errors": errors,
        "seconds": round(time.perf_counter() - started, 1),
    }, load_before=load_before)


if __name__ == "__main__":
    main()
