"""The page at the machine's speed: steps/s read from the served page in Chromium against the engine alone.

What a person gets: the dashboard served as `invlab serve` serves it (its own defaults: no thread override, no
steps/s cap, its own data directory), opened in Debian's headless Chromium, the page's default run (svgp on digits
with the page's defaults) given a step budget that outlasts the benchmark (`?train.steps=1000000`), and ▶ Start
pressed. Its steps/s are read from the page itself: the status line's step counter (`[data-field=step]`), read as
it changes `--warmup` seconds after the run is going and again `--window` seconds later.

Against it, the engine alone: the same configuration (`Explorer().run_config()`, what the page trains) trained by
`invlab.train.Trainer` in a fresh process with torch's default threads, evaluating on the page's wall-clock
schedule (every `eval_interval` seconds, as the page's session does), its steps counted over the same warm-up and
window. The arms are interleaved (alone, page, alone, page, ...; the page is paused while the alone arm runs), and
`ratio` is the median over repetitions of page ÷ the alone arm measured just before it.

Run `python -m benchmarks.dashboard.page_speed [--quick | --smoke] [--repeats N]`; the last line printed is one JSON
object. The page's curves and views keep going to the browser throughout, as they do for a user.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
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


def alone(warmup: float, window: float) -> dict:
    """The engine alone (run in a fresh process by `--alone`): steps/s over `window` seconds after `warmup`."""
    from invlab.train import Trainer

    config, interval = page_config()
    trainer = Trainer(config)
    start = time.perf_counter()
    marks, last_eval = {}, -float("inf")
    for _ in trainer.run(steps=BUDGET, every=10):  # the session's `every` for log_every = 10
        now = time.perf_counter()
        if interval and now - last_eval >= interval:  # as the page's session: by wall time
            trainer.evaluate()
            last_eval = time.perf_counter()
        if "start" not in marks and now - start >= warmup:
            marks["start"] = (now, trainer.step_count)
        if "start" in marks and now - marks["start"][0] >= window:
            t0, s0 = marks["start"]
            return {"steps_per_s": (trainer.step_count - s0) / (now - t0)}
    raise SystemExit("the alone arm ran out of steps")


def alone_in_a_fresh_process(warmup: float, window: float) -> float:
    env = {k: v for k, v in os.environ.items() if k not in ("INVLAB_TORCH_THREADS", "OMP_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-m", "benchmarks.dashboard.page_speed", "--alone", "--warmup", str(warmup),
                          "--window", str(window)], cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    if out.returncode != 0:
        raise SystemExit(f"the alone arm failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])["steps_per_s"]


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
    parser = arguments(__doc__, quick="2 repetitions of 10 s windows.", threads=False)
    parser.add_argument("--repeats", type=int, default=None, help="Interleaved repetitions of each arm (default 4).")
    parser.add_argument("--warmup", type=float, default=None, help="Seconds of training before a window (default 8).")
    parser.add_argument("--window", type=float, default=None, help="Seconds a window lasts (default 20).")
    parser.add_argument("--alone", action="store_true", help=argparse.SUPPRESS)  # the alone arm's own process
    args = parser.parse_args(argv)
    args.quick = args.quick or args.smoke
    warmup = args.warmup if args.warmup is not None else (1.0 if args.smoke else 4.0 if args.quick else 8.0)
    window = args.window if args.window is not None else (2.0 if args.smoke else 10.0 if args.quick else 20.0)
    if args.alone:
        print(json.dumps(alone(warmup, window)))
        return {}
    repeats = args.repeats or (1 if args.smoke else 2 if args.quick else 4)
    started, load_before = time.perf_counter(), os.getloadavg()[0]
    log(f"{repeats} interleaved repetitions of {window:g} s windows after {warmup:g} s, {os.cpu_count()} cores, "
        f"load {load_before:.2f}")
    page_rates, alone_rates = [], []
    with tempfile.TemporaryDirectory(prefix="invlab-page-speed-") as tmp:
        arm = PageArm(Path(tmp))
        try:
            for r in range(repeats):
                alone_rates.append(alone_in_a_fresh_process(warmup, window))
                page_rates.append(arm.run(warmup, window))
                log(f"repetition {r + 1}: alone {alone_rates[-1]:.2f} steps/s, page {page_rates[-1]:.2f} steps/s, "
                    f"ratio {page_rates[-1] / alone_rates[-1]:.3f}")
            errors = len(arm.errors)
        finally:
            arm.close()
    return emit({
        "benchmark": "dashboard_page_speed",
        "ratio": round(statistics.median(p / a for p, a in zip(page_rates, alone_rates)), 4),
        "steps_per_s_page": round(statistics.median(page_rates), 3),
        "steps_per_s_alone": round(statistics.median(alone_rates), 3),
        "repeats": repeats,
        "window_s": window,
        "page_errors": errors,
        "seconds": round(time.perf_counter() - started, 1),
    }, load_before=load_before)


if __name__ == "__main__":
    main()
