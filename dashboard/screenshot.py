"""A screenshot of a lesson for the README, taken from a real browser.

Serves the dashboard (`invlab serve`) on a free localhost port with its own data directory, opens the lesson's link
in headless Chromium (Debian's /usr/bin/chromium through Playwright), presses ▶ Start (not on the prior page), waits
until the lesson's key view has data; for a lesson that compares two runs it then does what the text says (when the
first run finishes: the comparison's family, ↺ Reset, ▶ Start). After `--settle` seconds more it saves the visible
page as a small PNG (palette-quantised and optimised with Pillow; ≤ 200 KB at 1200×800).

    python -m invlab.dashboard.screenshot [--lesson rotation] [--out PATH] [--width 1200 --height 800]
    python -m invlab.dashboard.screenshot --family gwi --out docs/images/families/gwi.png

By default it rewrites the README's picture, dashboard/screenshots/lesson.png. `--family NAME` opens the Training
page on that model family's defaults instead of a lesson (the documentation's family pages show these).
"""
from __future__ import annotations

import argparse
import contextlib
import html
import io
import sys
import tempfile
import time
from pathlib import Path

from invlab.dashboard.lessons.catalogue import BY_KEY, LESSONS, Lesson, lesson_query
from invlab.dashboard.serving.process import CHROMIUM_ARGS, chromium_path, serve_dashboard
from invlab.dashboard.state_words import state_word
from invlab.train.states import PageState

MAX_BYTES = 200_000

# JavaScript: the number of points in the page's largest data source holding column `name`.
COLUMN_LENGTH = """(name) => {
  let n = 0;
  if (typeof Bokeh === "undefined") return 0;
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      if (m.data && m.data[name]) n = Math.max(n, m.data[name].length);
  return n;
}"""
# JavaScript: every text (titles, markup) in the page's Bokeh documents.
PAGE_TEXTS = """() => {
  const out = [];
  if (typeof Bokeh === "undefined") return out;
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values()) {
      if (typeof m.text === "string") out.push(m.text);
      if (typeof m.axis_label === "string") out.push(m.axis_label);
    }
  return out;
}"""


def log(message: str) -> None:
    """Print a progress line to stderr."""
    print(f"screenshot: {message}", file=sys.stderr, flush=True)


def serve(directory: Path, timeout: float = 120.0):
    """`invlab serve` on a free port with its own data directory (see `invlab.dashboard.serving`); yields the app's
    URL."""
    return serve_dashboard(directory, timeout=timeout)


def executable() -> str:
    """The path of the Chromium to drive; RuntimeError when none is installed."""
    path = chromium_path()
    if path is None:
        raise RuntimeError("Chromium not found: install Debian's chromium or set INVLAB_CHROMIUM")
    return path


def wait_for(fn, timeout: float, what: str, interval: float = 0.25):
    """Poll `fn` every `interval` seconds until it returns something true and return that; after `timeout` seconds,
    fail naming `what`."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def key_view_title(lesson: Lesson) -> str | None:
    """The title of a lesson's key view when it is a view (a plot or table) rather than a curve: computed by the
    engine with the lesson's settings (the prior explorer, or one training step). None when it is a curve."""
    from invlab.dashboard.lessons.catalogue import prior_explorer, run_config

    if lesson.page == "compare":
        return None  # the Discover ranking: ready when its verdict is drawn (`key_view_ready`)
    if lesson.page == "prior":
        explorer = prior_explorer(lesson.settings)
        explorer.size, explorer.num_points = 20, 20  # titles do not depend on the sizes
        return explorer.views()[lesson.key_view].title
    from invlab.train import Trainer

    trainer = Trainer(run_config(lesson.settings))
    trainer.step()
    if lesson.key_view in trainer.history or lesson.key_view.startswith("test_"):
        return None
    return trainer.report.snapshot(views=True).views[lesson.key_view].title


def key_view_ready(page, lesson: Lesson, title: str | None, points: int) -> bool:
    """A curve's data source holds `points` values, or a view's title (up to its first "=") is on the page: its
    pane exists once the view's first data has arrived. The Discover ranking is ready when every candidate is
    ranked and the verdict is drawn."""
    if lesson.page == "compare":
        return discover_verdict(page).startswith("Verdict:")
    if title is not None:
        stem = title.split("=")[0]  # the view's name, without the values that follow in its title (δ = 20)
        texts = page.evaluate(PAGE_TEXTS)
        return any(stem in text or html.escape(stem) in text for text in texts)
    return max(page.evaluate(COLUMN_LENGTH, name) for name in curve_columns(lesson.key_view)) >= points


def discover_verdict(page) -> str:
    """What the Compare page's Discover verdict says ("Verdict: rotation-invariant up to ±91° ...", "Partial:
    Verdict: ..." while candidates are still training), or ""."""
    verdict = page.locator(".invlab-discover-verdict")
    if not verdict.count():
        return ""
    return " ".join(verdict.first.evaluate("e => (e.shadowRoot || e).textContent").split())


def curve_columns(metric: str) -> list[str]:
    """Names the data of a metric's curve may have in the page: the metric's own (the page contract), and the
    column HoloViews makes from the curve's axis label (e.g. "ELBO (nats)")."""
    names = [metric]
    try:
        from holoviews.core.util import dimension_sanitizer

        from invlab.dashboard.views.panes import metric_spec

        label = metric_spec(metric).label
        names += [label, f"|{label}|", dimension_sanitizer(label), dimension_sanitizer(f"|{label}|")]
    except Exception:  # noqa: BLE001 — a page without labelled curves: the metric's name is the column
        pass
    return names


def run_comparison(page, lesson: Lesson, timeout: float) -> None:
    """What the lesson's text says: when the first run finishes, choose the comparison's family, press Reset (the
    first run stays as a dashed line) and Start."""
    state = lambda: page.locator("[data-field=state]").first.inner_text().strip()  # noqa: E731
    said = lambda *states: {state_word(s, PageState) for s in states}  # noqa: E731 — the status line's words
    wait_for(lambda: state() in said(PageState.FINISHED, PageState.CONVERGED), timeout, "the first run to finish")
    page.locator(".bk-tab", has_text="Model").first.click()
    page.locator(".bk-input-group", has_text="Model family").locator("select").first.select_option(
        lesson.compare["model"])
    page.get_by_role("button", name="↺ Reset").click()
    wait_for(lambda: state() in said(PageState.IDLE), 60, "the reset")
    time.sleep(1.5)  # as a person would: a press straight after Reset has been seen to get lost
    page.get_by_role("button", name="▶ Start").click()
    wait_for(lambda: state() in said(PageState.RUNNING, PageState.FINISHED), 60,
             f"the {lesson.compare['model']} run to start")
    log(f"second run ({lesson.compare['model']}) started")


def optimise_png(raw: bytes, max_bytes: int = MAX_BYTES) -> bytes:
    """Quantise to a palette (fewer colours until it fits) and save with Pillow's optimiser."""
    from PIL import Image

    image = Image.open(io.BytesIO(raw)).convert("RGB")
    data = b""
    for colours in (256, 128, 64, 32):
        buf = io.BytesIO()
        image.quantize(colors=colours, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
            buf, format="PNG", optimize=True)
        data = buf.getvalue()
        if len(data) <= max_bytes:
            break
    return data


def take(lesson: Lesson, out: Path, *, width: int = 1200, height: int = 800, settle: float = 15.0,
         timeout: float = 180.0, points: int = 5, teacher: bool = False, compare: bool = True) -> Path:
    """Serve the dashboard, open `lesson` in headless Chromium, press Start, wait until its key view has `points`
    points (and, for a comparing lesson, do what it says), and save the page as a small PNG at `out`; returns the
    path."""
    from playwright.sync_api import sync_playwright

    title = key_view_title(lesson)
    with tempfile.TemporaryDirectory(prefix="invlab-shot-") as tmp, serve(Path(tmp)) as url:
        link = url + (lesson_query(lesson, teacher=teacher) if lesson.key in BY_KEY else family_query(lesson))
        log(f"opening {link}")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=executable(), args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": width, "height": height})
                errors = []
                page.on("pageerror", lambda err: errors.append(str(err)))
                try:
                    page.goto(link, timeout=timeout * 1000)
                    if lesson.page == "prior":
                        tab = page.locator(".bk-tab", has_text="Deep kernel prior").first
                        tab.wait_for(timeout=timeout * 1000)
                        if "bk-active" not in (tab.get_attribute("class") or ""):
                            tab.click()  # the page did not open it from `page=prior`: open it as a visitor would
                    elif lesson.page == "compare":
                        page.get_by_role("button", name="▶ Discover").click(timeout=timeout * 1000)
                    else:
                        page.get_by_role("button", name="▶ Start").click(timeout=timeout * 1000)
                    wait_for(lambda: key_view_ready(page, lesson, title, points), timeout,
                             f"the key view {lesson.key_view}")
                except Exception as err:  # say what the page showed: a picture beside the output, the server's log
                    failed = out.with_suffix(".failed.png")
                    with contextlib.suppress(Exception):
                        page.screenshot(path=str(failed))
                    server_log = (Path(tmp) / "server.log").read_text()[-3000:]
                    raise RuntimeError(f"{err}\npage errors: {errors}\nwhat the page showed: {failed}\n"
                                       f"server log:\n{server_log}") from None
                if compare and lesson.compare and lesson.page == "training":
                    run_comparison(page, lesson, timeout)
                log(f"{lesson.key_view} has data; letting it run {settle:g} s more")
                time.sleep(settle)
                page.evaluate("() => window.scrollTo(0, 0)")
                raw = page.screenshot(full_page=False)
            finally:
                browser.close()
    data = optimise_png(raw)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    log(f"saved {out} ({len(data) / 1000:.0f} KB, {width}×{height})")
    return out


def family_lesson(family: str, key_view: str = "loss") -> Lesson:
    """A lesson-shaped preset for `take` that opens the Training page on model family `family` with its defaults and
    waits for curve `key_view`; it is not one of the page's lessons (its link names no lesson)."""
    return Lesson(key=f"family:{family}", title=family, text="", settings={"model": family}, key_view=key_view)


def family_query(lesson: Lesson) -> str:
    """The link of a `family_lesson`: its settings alone ("?model=gwi")."""
    from urllib.parse import urlencode

    return "?" + urlencode(lesson.settings)


def main(argv=None) -> int:
    """`python -m invlab.dashboard.screenshot`: take a lesson's screenshot (the README's by default); returns the exit
    status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lesson", default=LESSONS[0].key, choices=sorted(BY_KEY),
                        help="which lesson (default: %(default)s)")
    parser.add_argument("--family", default=None,
                        help="open the Training page on this model family's defaults instead of a lesson")
    parser.add_argument("--watch", default="loss", help="with --family: the curve to wait for (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "screenshots" / "lesson.png",
                        help="PNG to write (default: the README's, %(default)s)")
    parser.add_argument("--width", type=int, default=1200)
    parser.add_argument("--height", type=int, default=800)
    parser.add_argument("--settle", type=float, default=15.0, help="seconds to wait after the key view has data")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for the page and the key view")
    parser.add_argument("--teacher", action="store_true", help="open the lesson in teacher mode")
    parser.add_argument("--no-compare", dest="compare", action="store_false",
                        help="do not go on to the lesson's second run (by default: switch family, Reset, Start)")
    args = parser.parse_args(argv)
    try:
        lesson = family_lesson(args.family, args.watch) if args.family else BY_KEY[args.lesson]
        take(lesson, args.out, width=args.width, height=args.height, settle=args.settle,
             timeout=args.timeout, teacher=args.teacher, compare=args.compare)
    except (RuntimeError, TimeoutError) as err:
        print(f"screenshot: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
