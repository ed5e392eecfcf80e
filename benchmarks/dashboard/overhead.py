"""What the live dashboard costs training: the Trainer alone against the same Trainer inside a served Explorer.

Problem: the dashboard's default run — sklearn's bundled `digits` (no download), the `svgp` family with its
page defaults (`dashboard.state.defaults`: RBF kernel, M = 100 inducing points, softmax likelihood over 10 classes,
float64, Adam on minibatches of 256, loss logged every 10 steps, test metrics on the test subset every
`eval_interval` seconds of wall time, as the page's session evaluates). The step budget is raised so the run never
finishes during the benchmark; no run store on either side (SQLite writes are not the dashboard's). The alone arm
trains the configuration the served page reports (`Explorer.run_config()`), so both arms run the same thing.

Arm "alone": an `invlab.train.Trainer` stepped by `Trainer.run(every=10)` in the main thread, evaluating at the
same wall-clock interval as the session (once when a repetition starts, then every `eval_interval` s), nothing else.
Arm "dashboard": the same configuration inside an `Explorer`, served in-process with
`pn.serve(..., threaded=True)` on 127.0.0.1, with Debian's headless Chromium (driven by Playwright, launched
with the same flags as tests/browser) showing the page. The session's daemon thread trains; the server thread's
periodic callback (`Explorer.tick`, at the page's tick period) drains the session and appends the new points to the
curves' Bokeh `ColumnDataSource`s (`stream`), and a snapshot with views (K_uu spectrum, inducing inputs,
hyper-parameters) goes out every `view_interval` seconds — exactly what a user watching the dashboard gets.

Each arm runs with its own defaults: the page with the dashboard's (no thread override, no steps/s cap: a page
training alone takes every core, `dashboard.session.scheduling`), the alone arm with torch's default threads; nothing is
turned off in either arm. Each arm keeps one model across its
repetitions, so both advance over the same steps. Repetitions are interleaved (alone, dashboard, alone, ...);
in each, `--warmup` steps are taken untimed, then `--steps` steps are timed by the wall-clock between the
completion of the warm-up's last step and of the window's last step (everything between steps, snapshots and
GIL waits included). `ratio` is the median over repetitions of (dashboard steps/s ÷ the alone steps/s measured
just before), which follows the load of a shared machine better than a ratio of overall medians (also printed).

Where the time goes (Linux): for the training thread of each arm, the fractions of the timed window it spent on a
CPU, waiting for one (`runqueue`: the machine is busy) and neither (`blocked`: in this workload, waiting for the
GIL, which the server thread holds while it renders and serialises), from /proc/self/task/<tid>/schedstat; and the
CPU milliseconds per step. On a machine with more runnable work than cores (`runqueue` well above 0, see
`load_avg_1min`), the CPU that the server thread and Chromium use comes out of the same scheduler share as the
training thread, so the ratio there is lower than on a quiet machine with a core to spare; compare ratios only
between runs with similar load.

Latency: the server clock when `tick()` hands the ELBO points up to step k to the curve board, against the page's
clock (same machine) when the ELBO ColumnDataSource in the browser first holds step k (a 10 ms poller in the
page). This covers the board's update, Bokeh's serialisation, the websocket and BokehJS applying the change.

Run `python -m benchmarks.dashboard.overhead [--quick]`. The last line printed is one JSON object.
"""
from __future__ import annotations

import logging
import os
import statistics
import threading
import time

# the page's own threads and pace, whatever the shell says (read when the dashboard is imported)
os.environ.pop("INVLAB_TORCH_THREADS", None)
os.environ.pop("INVLAB_MAX_STEPS_PER_S", None)

from invlab.dashboard.serving.process import CHROMIUM_ARGS, chromium_path, free_port  # noqa: E402

from ..common import arguments, emit  # noqa: E402

# In the page: record Date.now() when a step first appears in a data source with an `elbo` column.
INSTALL_POLLER_JS = """() => {
  window.__seen = {};
  let sources = [], lastScan = 0;
  const scan = () => {
    sources = [];
    for (const doc of Bokeh.documents)
      for (const m of doc._all_models.values())
        if (m.data && m.data.elbo && m.data.step) sources.push(m);
  };
  const check = () => {
    const now = Date.now();
    if (now - lastScan > 500 || sources.length === 0) { scan(); lastScan = now; }
    for (const s of sources) {
      const st = s.data.step;
      for (let i = st.length - 1; i >= 0 && !(st[i] in window.__seen); i--) window.__seen[st[i]] = now;
    }
  };
  window.__poller = setInterval(check, 10);
  return true;
}"""


def run_config():
    from invlab.train import RunConfig

    # the page's default run (svgp on digits with the page's defaults) with a budget that outlasts the benchmark
    return RunConfig(train={"steps": 1_000_000})


def timed_trainer_class():
    """A Trainer that notes the wall-clock time at which each optimiser step completes (both arms use it)."""
    from invlab.train import Trainer

    class TimedTrainer(Trainer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.step_times: list[float] = []

        def _step(self):
            terms = super()._step()
            self.step_times.append(time.perf_counter())
            return terms

    return TimedTrainer


def window_rate(times: list[float], start: int, warmup: int, steps: int) -> float:
    """Steps per second over `steps` steps, after `warmup` steps of the repetition that began at index `start`."""
    t0, t1 = times[start + warmup - 1], times[start + warmup + steps - 1]
    return steps / (t1 - t0)


class ThreadClock:
    """CPU, run-queue and blocked time of one thread (Linux schedstat), to say where a window's wall-clock went."""

    def __init__(self, native_id: int):
        self.path = f"/proc/self/task/{native_id}/schedstat"

    def read(self) -> tuple[float, float, float] | None:
        try:
            with open(self.path) as f:
                cpu_ns, wait_ns = f.read().split()[:2]
        except (OSError, ValueError):
            return None
        return time.perf_counter(), int(cpu_ns) / 1e9, int(wait_ns) / 1e9

    @staticmethod
    def split(before, after, steps: int) -> dict | None:
        if before is None or after is None:
            return None
        wall, cpu, runqueue = (b - a for a, b in zip(before, after))
        return {"cpu": cpu / wall, "runqueue": runqueue / wall, "blocked": max(wall - cpu - runqueue, 0.0) / wall,
                "cpu_ms_per_step": 1000 * cpu / steps}


def show_training_page(page, timeout: float = 120.0) -> None:
    """Wait for the page, and open its Training tab if it opened elsewhere (e.g. on the lesson cards)."""
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0", timeout=1000 * timeout)
    start = page.get_by_role("button", name="▶ Start")
    deadline = time.time() + timeout
    while not start.first.is_visible():
        tab = page.locator(".bk-tab", has_text="Training")
        if tab.count():
            tab.first.click()
        if time.time() > deadline:
            raise RuntimeError("the page shows no ▶ Start button (nor a Training tab that has one)")
        time.sleep(0.3)


def wait_until(predicate, timeout: float, what: str, interval: float = 0.02):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise RuntimeError(f"timed out waiting for {what}")


class DashboardArm:
    """An Explorer served in-process, a headless Chromium on its page, and the send/arrival clocks."""

    def __init__(self):
        import panel as pn

        import invlab.dashboard.session.training
        from invlab.dashboard import Explorer

        # the session builds its Trainer from this name
        invlab.dashboard.session.training.Trainer = timed_trainer_class()
        pn.extension()
        self.sent: list[tuple[int, float]] = []  # (last ELBO step handed to the curve board, server ms)
        holder = {}

        def app():
            explorer = Explorer(run_config(), store=None)
            curves = explorer.curves
            original = curves.send

            def send(metric, steps, values):
                if metric == "elbo" and len(steps):
                    self.sent.append((int(steps[-1]), time.time() * 1000.0))
                original(metric, steps, values)

            curves.send = send
            holder["explorer"] = explorer
            return explorer

        port = free_port()
        self.server = pn.serve({"bench": app}, port=port, address="127.0.0.1", show=False, threaded=True,
                               verbose=False, websocket_origin=[f"127.0.0.1:{port}", f"localhost:{port}"])
        from playwright.sync_api import sync_playwright

        self._pw = sync_playwright().start()
        chromium = chromium_path()
        if chromium is None:
            raise SystemExit("benchmarks.dashboard.overhead needs Chromium (Debian's /usr/bin/chromium, "
                             "or INVLAB_CHROMIUM)")
        self.browser = self._pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        self.page = self.browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page_errors: list[str] = []
        self.page.on("pageerror", lambda err: self.page_errors.append(str(err)))
        url = f"http://127.0.0.1:{port}/bench"
        deadline = time.time() + 60
        while True:  # the server thread may need a moment to bind
            try:
                self.page.goto(url, timeout=60_000)
                break
            except Exception:
                if time.time() > deadline:
                    raise
                time.sleep(0.3)
        show_training_page(self.page)
        self.page.evaluate(INSTALL_POLLER_JS)
        wait_until(lambda: "explorer" in holder, 30, "the Explorer")
        self.explorer = holder["explorer"]
        wait_until(lambda: self.periodic_callback() is not None, 30, "the periodic callback")

    def periodic_callback(self):
        feed = getattr(self.explorer, "feed", None)  # the live feed holds it (older pages: the Explorer itself)
        return feed.callback if feed is not None else getattr(self.explorer, "_callback", None)

    @property
    def eval_interval(self) -> float:
        """Seconds between the session's evaluations (0: it evaluates by step count, as the config says)."""
        return float(getattr(self.explorer.session, "eval_interval", 0.0) or 0.0)

    @property
    def times(self) -> list[float]:
        trainer = self.explorer.session.trainer
        return trainer.step_times if trainer is not None else []

    def run(self, warmup: int, steps: int) -> tuple[float, dict | None]:
        session = self.explorer.session
        clock = ThreadClock(session.thread.native_id)
        start = len(self.times)
        self.explorer.start()
        wait_until(lambda: session.trainer is not None and len(self.times) >= start + warmup, 600,
                   "the dashboard's warm-up steps", interval=0.01)
        before = clock.read()
        wait_until(lambda: len(self.times) >= start + warmup + steps, 600, "the dashboard's training steps",
                   interval=0.05)
        after = clock.read()
        self.explorer.pause()
        wait_until(lambda: session.state == "paused", 60, "the session to pause")
        time.sleep(0.6)  # let the last points reach the page before the other arm runs
        return window_rate(self.times, start, warmup, steps), ThreadClock.split(before, after, steps)

    def latencies_ms(self) -> list[float]:
        seen = self.page.evaluate("() => window.__seen")
        return [seen[str(k)] - t for k, t in self.sent if str(k) in seen]

    def close(self) -> None:
        self.explorer.close()  # training thread and periodic callback first: nothing more to send
        for name in ("asyncio", "tornado", "bokeh.server"):  # the server's complaints about the page going away
            logging.getLogger(name).setLevel(logging.CRITICAL)
        try:
            self.page.close()
            self.browser.close()
            self._pw.stop()
        finally:
            self.server.stop()


class AloneArm:
    def __init__(self, config, eval_interval: float):
        self.trainer = timed_trainer_class()(config)
        self.eval_interval = eval_interval

    def run(self, warmup: int, steps: int) -> tuple[float, dict | None]:
        clock = ThreadClock(threading.get_native_id())
        start = len(self.trainer.step_times)
        marks = {}
        last_eval = -float("inf")
        for _ in self.trainer.run(steps=warmup + steps, every=10):  # the session's `every` for log_every = 10
            now = time.perf_counter()
            if self.eval_interval and now - last_eval >= self.eval_interval:  # as the session: by wall time
                self.trainer.report.evaluate()
                last_eval = time.perf_counter()
            n = len(self.trainer.step_times) - start
            if n >= warmup and "before" not in marks:
                marks["before"] = clock.read()
        after = clock.read()
        rate = window_rate(self.trainer.step_times, start, warmup, steps)
        return rate, ThreadClock.split(marks["before"], after, steps)


def main(argv: list[str] | None = None) -> dict:
    parser = arguments(__doc__, quick="2 repetitions of 60 timed steps (under a minute).", threads=False)
    parser.add_argument("--repeats", type=int, default=None, help="Interleaved repetitions of each arm (default 5).")
    parser.add_argument("--steps", type=int, default=None, help="Timed steps per repetition (default 200).")
    parser.add_argument("--warmup", type=int, default=10, help="Untimed steps at the start of each repetition.")
    args = parser.parse_args(argv)  # each arm takes its own default threads
    args.quick = args.quick or args.smoke
    repeats = args.repeats or (1 if args.smoke else 2 if args.quick else 5)
    steps = args.steps or (5 if args.smoke else 60 if args.quick else 200)
    if args.smoke:
        args.warmup = min(args.warmup, 2)

    t_start = time.perf_counter()
    print(f"{repeats} interleaved repetitions of {steps} timed steps "
          f"(+{args.warmup} warm-up), {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}", flush=True)
    dash = DashboardArm()
    try:
        config = dash.explorer.run_config()  # what the page trains, page defaults included
        config.train = dict(config.train, steps=1_000_000)
        alone = AloneArm(config, dash.eval_interval)
        dash.run(warmup=10, steps=10)  # untimed: builds the session's model and the curve plots in the page
        alone.run(warmup=10, steps=10)
        dash.sent.clear()
        rates_alone, rates_dash, clocks_alone, clocks_dash = [], [], [], []
        for r in range(repeats):
            for arm, rates, clocks in ((alone, rates_alone, clocks_alone), (dash, rates_dash, clocks_dash)):
                rate, clock = arm.run(args.warmup, steps)
                rates.append(rate)
                if clock is not None:
                    clocks.append(clock)
            print(f"repetition {r + 1}: alone {rates_alone[-1]:.2f} steps/s, dashboard {rates_dash[-1]:.2f} steps/s, "
                  f"ratio {rates_dash[-1] / rates_alone[-1]:.3f}" + "".join(
                      f"; {name} thread " + " ".join(f"{k} {v:.2f}" for k, v in c[-1].items())
                      for name, c in (("alone", clocks_alone), ("dashboard", clocks_dash)) if c), flush=True)
        latencies = dash.latencies_ms()
        errors = list(dash.page_errors)
    finally:
        dash.close()
    if not latencies and not args.smoke:  # a smoke run's few steps may log no ELBO point
        raise SystemExit("no ELBO point was seen arriving in the page")
    alone_med, dash_med = statistics.median(rates_alone), statistics.median(rates_dash)
    result = {
        "benchmark": "dashboard_overhead",
        "ratio": round(statistics.median(d / a for d, a in zip(rates_dash, rates_alone)), 4),
        "ratio_of_medians": round(dash_med / alone_med, 4),
        "latency_ms_median": round(statistics.median(latencies), 1) if latencies else None,
        "latency_ms_p90": round(sorted(latencies)[int(0.9 * (len(latencies) - 1))], 1) if latencies else None,
        "latency_samples": len(latencies),
        "steps_per_s_alone": round(alone_med, 3),
        "steps_per_s_dashboard": round(dash_med, 3),
        "repeats": repeats,
        "steps_per_repeat": steps,
        "page_errors": len(errors),
        "seconds": round(time.perf_counter() - t_start, 1),
    }
    for name, clocks in (("alone", clocks_alone), ("dashboard", clocks_dash)):
        for key in ("blocked", "runqueue", "cpu_ms_per_step"):
            if clocks:
                result[f"{key}_{name}"] = round(statistics.median(c[key] for c in clocks), 3)
    return emit(result)


if __name__ == "__main__":
    main()
