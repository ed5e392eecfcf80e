"""How long a click takes to show its effect in the page while training runs, measured in Chromium.

The dashboard is served as a user serves it (`python -m invlab serve --port P`, in its own data directory
`INVLAB_DATA`, the server's own threads and pace, `--max-training 3` so that every open page trains) and opened in
Debian's headless Chromium through Playwright. Each page opens the `invariant` family on rotated digits (it has
an invariance range slider; Pause, Step and the learning rate are the same for every family) and presses Start.
Then, with training running, the benchmark times four actions, each from the input event in the page to its
visible effect in the page:

- `pause`:  click "❚❚ Pause"           → the status's `[data-field=state]` reads "paused";
- `step`:   click "+1 Step" (paused at step k) → `[data-field=step]` reads k + 1;
- `start`:  click "▶ Start" (to go on)  → `[data-field=state]` reads "running";
- `lr`:     type a new learning rate in the Optimisation tab and press Enter → `[data-field=lr]` shows it;
- `range`:  press End / Home on the rotation range's slider in the Invariance tab → a notice or status text in the
            page says the range was set to the slider's new value (e.g. "… half_width set to 178.2").

Timing is in the page, on its clock (`performance.now()`): a capture-phase listener on the document records the
last `click` / `keydown` (they cross shadow roots), and a watcher armed just before the action polls the page every
5 ms (through the shadow roots Panel's components live in) and records when the effect first holds;
`page.wait_for_function` waits for that record. No Python-side sleeps enter a figure.

Measured with one page, then with three pages at once (three browser contexts in one Chromium, each training);
with three pages the actions go round the pages, so every action happens while the two others train. With
`--pages N` (a classroom, e.g. 20), then N pages at once: two train and are timed as above, the others sit on the
Lessons page and on the deep kernel prior page (every other one), whose δ slider they move once a round.
Per action, p50 and p95 in milliseconds; `p95_ms_one_page` and `p95_ms_three_pages` are the p95 of the slowest
action (targets: < 300 ms and < 1000 ms; `p95_ms_classroom` < 1500 ms); `p95_all_ms_*` pool every action.

    python -m benchmarks.dashboard.latency [--quick | --smoke] [--rounds N] [--pages N] [--root DIR]

`--root` serves another checkout (e.g. an exported older commit, for a before/after). The last line printed
is one JSON object.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path

from invlab.dashboard.serving.process import CHROMIUM_ARGS, chromium_path, serve_dashboard

from ..common import arguments, emit
from .overhead import show_training_page

ROOT = Path(__file__).resolve().parents[2]  # the checkout: benchmarks/dashboard/latency.py -> .
# three pages at once: none of them may be treated as a background tab whose timers are throttled
LATENCY_ARGS = CHROMIUM_ARGS + ["--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                                "--disable-backgrounding-occluded-windows"]
QUERY = ("?model=invariant&model.augmentation=rotation&data.rotate=90&model.num_inducing=50&train.batch_size=64"
         "&train.eval_size=200&train.steps=1000000")
LEARNING_RATES = (0.005, 0.02)  # alternated; both differ from the page's default 0.01

# In-page helpers: find things through the shadow roots, record input events, watch for an effect.
HELPERS_JS = r"""() => {
  if (window.__lat) return true;
  let roots = [], scannedAt = -1e9;
  const scan = () => {
    roots = [document];
    const walk = (root) => {
      for (const el of root.querySelectorAll('*'))
        if (el.shadowRoot) { roots.push(el.shadowRoot); walk(el.shadowRoot); }
    };
    walk(document);
    scannedAt = performance.now();
  };
  const query = (sel) => {
    for (let pass = 0; pass < 2; pass++) {
      for (const r of roots) { const el = r.querySelector(sel); if (el) return el; }
      if (performance.now() - scannedAt < 50) return null;
      scan();
    }
    return null;
  };
  const field = (name) => { const el = query(`[data-field=${name}]`); return el ? el.textContent.trim() : null; };
  const NOTICE = '.alert, [data-field=message], [data-field=notice], .invlab-notice, .invlab-status';
  const notices = () => {
    if (performance.now() - scannedAt > 250) scan();
    const out = [];
    for (const r of roots)  // a Panel pane's text lives in its host's shadow root
      for (const el of r.querySelectorAll(NOTICE))
        out.push(el.textContent + (el.shadowRoot ? ' ' + el.shadowRoot.textContent : ''));
    return out;
  };
  const near = (text, value) => {
    const x = parseFloat(text);
    return Number.isFinite(x) && Math.abs(x - value) <= 1e-6 * Math.max(1, Math.abs(value));
  };
  const setTo = (value) => {  // a notice naming the new value: "... set to 178.2" (the value as %g, or rounded)
    for (const t of notices()) {
      for (const m of t.matchAll(/set to\s*(-?[0-9.]+(?:e[-+]?\d+)?)/g)) {
        const x = parseFloat(m[1]);
        if (Number.isFinite(x) && Math.abs(x - value) <= 0.01 * Math.max(1, Math.abs(value))) return true;
      }
    }
    return false;
  };
  const visibleHandles = () => {
    scan();
    let n = 0;
    for (const r of roots)
      for (const el of r.querySelectorAll('.noUi-handle')) if (el.getClientRects().length) n++;
    return n;
  };
  const lat = { lastInput: null, effectAt: null, timer: null, field, near, setTo, scan, visibleHandles };
  for (const type of ['click', 'keydown'])
    document.addEventListener(type, () => { lat.lastInput = performance.now(); }, true);
  lat.arm = (kind, arg) => {
    const tests = {
      state: () => field('state') === arg,
      step: () => field('step') === String(arg),
      lr: () => near(field('lr'), arg),
      range: () => setTo(arg),
    };
    const test = tests[kind];
    if (lat.timer) clearInterval(lat.timer);
    lat.lastInput = null; lat.effectAt = null;
    lat.timer = setInterval(() => {
      let ok = false;
      try { ok = test(); } catch (e) { ok = false; }
      if (ok) { lat.effectAt = performance.now(); clearInterval(lat.timer); lat.timer = null; }
    }, 5);
    return true;
  };
  window.__lat = lat;
  scan();
  return true;
}"""


def served(root: Path, workdir: Path, max_training: int):
    """`python -m invlab serve` from `root` on a free port with its own data directory; yields the page's URL."""
    return serve_dashboard(workdir, args=["--max-training", str(max_training)], root=root,
                           extra_env={"INVLAB_TORCH_THREADS": None, "INVLAB_MAX_STEPS_PER_S": None},  # its own
                           timeout=600.0)  # a first page on a loaded machine can take minutes


class Page:
    """One browser context with the dashboard open and training."""

    def __init__(self, browser, url: str, timeout_s: float):
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda err: self.errors.append(str(err)))
        self.timeout_ms = int(1000 * timeout_s)
        self.page.goto(url + QUERY, timeout=120_000)
        show_training_page(self.page)
        self.page.evaluate(HELPERS_JS)
        self.lr_index = 0
        self.range_high = False

    def field(self, name: str):
        return self.page.evaluate("(n) => window.__lat.field(n)", name)

    def wait(self, js: str, arg=None, timeout_s: float = 180.0):
        self.page.wait_for_function(js, arg=arg, timeout=int(1000 * timeout_s), polling=100)

    def start_training(self) -> None:
        self.page.get_by_role("button", name="▶ Start").click()
        self.wait("() => window.__lat.field('state') === 'running' && parseInt(window.__lat.field('step')) > 0")

    def _timed(self, kind: str, expected, act) -> float:
        """Arm the watcher for `kind`/`expected`, act, and return the ms from the last input event to the effect."""
        self.page.evaluate("([k, a]) => window.__lat.arm(k, a)", [kind, expected])
        act()
        handle = self.page.wait_for_function(
            "() => window.__lat.effectAt !== null && window.__lat.lastInput !== null "
            "&& [window.__lat.effectAt - window.__lat.lastInput]", timeout=self.timeout_ms, polling=50)
        return float(handle.json_value()[0])

    def button(self, name: str):
        return self.page.get_by_role("button", name=name)

    # -- the actions --------------------------------------------------------------------------------------------
    def pause(self) -> float:
        return self._timed("state", "paused", lambda: self.button("❚❚ Pause").click())

    def step(self) -> float:
        self.wait("() => window.__lat.field('state') === 'paused'")
        k = int(self.field("step"))
        return self._timed("step", k + 1, lambda: self.button("+1 Step").click())

    def start(self) -> float:
        ms = self._timed("state", "running", lambda: self.button("▶ Start").click())
        self.wait("() => window.__lat.field('state') === 'running'")
        return ms

    def _tab(self, name: str) -> None:
        self.page.locator(".bk-tab", has_text=name).first.click()

    def lr(self) -> float:
        self._tab("Optimisation")
        value = LEARNING_RATES[self.lr_index % len(LEARNING_RATES)]
        self.lr_index += 1
        box = self.page.locator(".bk-input-group", has_text="Learning rate").locator("input").first
        box.fill(f"{value:g}")
        return self._timed("lr", value, lambda: box.press("Enter"))

    def range(self) -> float:
        self._tab("Invariance")
        # the tab is drawn when opened; its rotation range (0-180 degrees) is the slider in sight whose end is past 1
        # (the curves' smoothing slider ends at 1)
        handles = self.page.locator(".noUi-handle:visible")
        pick = "(els) => els.findIndex((el) => parseFloat(el.getAttribute('aria-valuemax')) > 1)"
        deadline = time.time() + 120
        while (index := handles.evaluate_all(pick)) < 0 and time.time() < deadline:
            time.sleep(0.1)
        handle = handles.nth(max(index, 0))
        key = "Home" if self.range_high else "End"
        self.range_high = not self.range_high
        # the value the slider will hold after the key: its end, as the handle reports it
        bounds = handle.evaluate("(el) => [parseFloat(el.getAttribute('aria-valuemin')), "
                                 "parseFloat(el.getAttribute('aria-valuemax'))]")
        target = bounds[1] if key == "End" else bounds[0]
        ms = self._timed("range", target, lambda: handle.press(key))
        self._tab("Optimisation")
        return ms

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.button("❚❚ Pause").click(timeout=5000)
        self.context.close()


ACTIONS = ("pause", "step", "start", "lr", "range")


def measure(pages: list[Page], rounds: int, first: int = 0) -> dict[str, list[float]]:
    """`rounds` of every action on every page in turn (the others keep training); `first` numbers the rounds."""
    samples = {a: [] for a in ACTIONS}
    for r in range(first, first + rounds):
        for i, page in enumerate(pages):
            for action in ACTIONS:
                ms = getattr(page, action)()
                samples[action].append(ms)
                print(f"  round {r + 1}, page {i + 1}: {action} {ms:.0f} ms", flush=True)
    return samples


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    if not values:
        return float("nan")
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def summary(samples: dict[str, list[float]]) -> dict:
    out = {a: {"p50_ms": round(percentile(v, 0.5), 1), "p95_ms": round(percentile(v, 0.95), 1), "n": len(v)}
           for a, v in samples.items() if v}
    pooled = [x for v in samples.values() for x in v]
    return {"actions": out, "p95_worst_action_ms": max(a["p95_ms"] for a in out.values()),
            "p95_all_ms": round(percentile(pooled, 0.95), 1)}


class Onlooker:
    """A page of the class that does not train: on the Lessons page, or on the prior page moving δ now and then."""

    def __init__(self, browser, url: str, prior: bool):
        self.context = browser.new_context(viewport={"width": 1200, "height": 900})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda err: self.errors.append(str(err)))
        self.page.goto(url, timeout=300_000)
        self.prior = prior
        tab = "Deep kernel prior" if prior else "Lessons"
        self.page.locator(".bk-tab", has_text=tab).first.click(timeout=300_000)
        self.high = False

    def act(self) -> None:
        """On the prior page: move δ to an end of its slider (alternately)."""
        if self.prior:
            with contextlib.suppress(Exception):
                self.page.locator(".noUi-handle:visible").first.press("Home" if self.high else "End", timeout=5000)
                self.high = not self.high

    def close(self) -> None:
        self.context.close()


def run_with(browser, url: str, count: int, rounds: int, timeout_s: float,
             onlookers: int = 0) -> tuple[dict, list[str]]:
    others = [Onlooker(browser, url, prior=k % 2 == 1) for k in range(onlookers)]
    pages = [Page(browser, url, timeout_s) for _ in range(count)]
    try:
        for page in pages:
            page.start_training()
        samples = {a: [] for a in ACTIONS}
        for r in range(rounds):
            for other in others:
                other.act()
            for action, values in measure(pages, 1, first=r).items():
                samples[action] += values
    finally:
        errors = [e for p in pages + others for e in p.errors]
        for page in pages + others:
            page.close()
    return summary(samples), errors


def print_table(title: str, s: dict) -> None:
    print(f"{title}: p95 of the slowest action {s['p95_worst_action_ms']:.0f} ms, p95 of all {s['p95_all_ms']:.0f} ms")
    for action, a in s["actions"].items():
        print(f"  {action:6s} p50 {a['p50_ms']:7.0f} ms   p95 {a['p95_ms']:7.0f} ms   (n = {a['n']})")


def main(argv: list[str] | None = None) -> dict:
    parser = arguments(__doc__, quick="3 rounds with one page, 1 round per page with three.", threads=False)
    parser.add_argument("--rounds", type=int, default=None, help="Rounds of every action per page (default 10 / 4).")
    parser.add_argument("--root", type=Path, default=ROOT, help="The checkout to serve (default: this one).")
    parser.add_argument("--pages", type=int, default=0,
                        help="Also measure a classroom of this many pages (2 training, the others on the Lessons "
                             "and prior pages); e.g. 20. Default: no classroom.")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="Seconds an effect may take before it counts as lost.")
    args = parser.parse_args(argv)
    args.quick = args.quick or args.smoke
    rounds_one = args.rounds or (1 if args.smoke else 3 if args.quick else 10)
    rounds_three = 0 if args.smoke else args.rounds or (1 if args.quick else 4)  # --smoke: one page, one round
    chromium = chromium_path()
    if chromium is None:
        raise SystemExit("benchmarks.dashboard.latency needs Chromium (Debian's /usr/bin/chromium, or INVLAB_CHROMIUM)")
    from playwright.sync_api import sync_playwright

    t_start = time.perf_counter()
    print(f"serving {args.root}; {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}", flush=True)
    training = max(3, 2 if args.pages else 0)
    with tempfile.TemporaryDirectory(prefix="invlab-latency-") as tmp, \
            served(args.root.resolve(), Path(tmp), training) as url:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=LATENCY_ARGS)
            try:
                print("one page:", flush=True)
                one, errors_one = run_with(browser, url, 1, rounds_one, args.timeout)
                three, errors_three = {"p95_worst_action_ms": None, "p95_all_ms": None, "actions": {}}, []
                if rounds_three:
                    print("three pages:", flush=True)
                    three, errors_three = run_with(browser, url, 3, rounds_three, args.timeout)
                classroom, errors_class = {"p95_worst_action_ms": None, "p95_all_ms": None, "actions": {}}, []
                if args.pages:
                    print(f"a classroom of {args.pages} pages, 2 training:", flush=True)
                    classroom, errors_class = run_with(browser, url, 2, max(1, rounds_three), args.timeout,
                                                       onlookers=max(0, args.pages - 2))
            finally:
                browser.close()
    print_table("one page", one)
    if rounds_three:
        print_table("three pages", three)
    if args.pages:
        print_table(f"classroom of {args.pages}", classroom)
    result = {
        "benchmark": "dashboard_latency",
        "p95_ms_one_page": one["p95_worst_action_ms"],
        "p95_ms_three_pages": three["p95_worst_action_ms"],
        "p95_all_ms_one_page": one["p95_all_ms"],
        "p95_all_ms_three_pages": three["p95_all_ms"],
        "one_page": one["actions"],
        "three_pages": three["actions"],
        "p95_ms_classroom": classroom["p95_worst_action_ms"],
        "classroom_pages": args.pages,
        "classroom": classroom["actions"],
        "page_errors": len(errors_one) + len(errors_three) + len(errors_class),
        "seconds": round(time.perf_counter() - t_start, 1),
    }
    return emit(result)


if __name__ == "__main__":
    main()
