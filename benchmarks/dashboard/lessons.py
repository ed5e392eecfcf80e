"""Does every lesson show its key effect within a minute? Each lesson's preset trained through `invlab.train.Trainer`.

As the page runs them: one torch thread, the test subset evaluated and a snapshot with views taken every 2 s of
wall time (the page's pace), the lesson's first run, then its comparison run (the page's "change the family and
press Reset"), all inside one budget of `--seconds` (default 60) per lesson. The first run of a comparison gets
`--first` seconds (default 20: what the lesson text tells a lecturer to wait) or until its steps are done; whether
its ELBO had flattened by then is reported. Printed per lesson: whether its key effect showed and when (seconds
since the first Start):

- rotation:   the invariant model's rotation range above 45° (half the data's 90°) and its ELBO above the plain run's
              final ELBO;
- symmetry:   the invariant model's ELBO above the plain run's final ELBO, and its test RMSE below the plain one's;
- patches:    conv-invariant's test error below 5 %, and the weighted model's test error then at or below
              conv-invariant's final one;
- functional: ν 0 → 1 in the running solver (as the slider does): the test error falls and the decision boundary
              moves (share of the grid whose predicted class changed);
- prior:      δ 1000 → 10 spreads the inverse Wishart's eigenvalues (log10 max/min up by half a decade or more) with
              the smallest still 100× the Wishart's, and α 0 → 2 lifts the residual Wishart's smallest eigenvalue
              100-fold; each redraw's time;
- discover:   the Compare page's Discover study on the lesson's data, as the page runs it (2 seeds, 300 steps, a
              LocalCluster of 2 workers): the time until every candidate is stored and the verdict names rotation,
              the learned range and the log Bayes factor over none; held to its card's time (`DISCOVER_SECONDS`, 90 s)
              rather than `--seconds`, when that is shorter.

    python -m benchmarks.dashboard.lessons [--lesson KEY ...] [--seconds 60] [--first 20] [--page]

`--page` then runs the comparison lessons in the real page too (served, headless Chromium): Start, wait for the
first run to finish, switch the family, Reset, and read the status bar's step when the budget is spent; the effect
counts as shown in the page when the second run got as far as the step at which it showed above.

Last line: one JSON object, per lesson the effect's time in seconds (null if it did not show) and the figures.
"""
from __future__ import annotations

import json
import math
import time

import numpy as np

from invlab.dashboard.lessons.catalogue import BY_KEY, LESSONS, prior_explorer, run_config
from invlab.train import Trainer
from invlab.train.edits import SetValue

from ..common import arguments, emit, log, parse

EVAL_EVERY_S = 2.0  # the page evaluates and draws its views every ~2 s of wall time


def smoothed(trainer: Trainer, metric: str, last: int = 3) -> float:
    values = trainer.history.get(metric, ([], []))[1] if metric in trainer.history else []
    return float(np.mean(values[-last:])) if values else float("nan")


class Timed:
    """One run as the page drives it: steps, plus an evaluation and a snapshot with views every EVAL_EVERY_S."""

    def __init__(self, settings: dict, clock_start: float):
        self.t_build = time.perf_counter()
        self.trainer = Trainer(run_config(settings))
        self.clock_start = clock_start
        self.build_s = time.perf_counter() - self.t_build
        self._last_eval = time.perf_counter()
        self.views = {}

    def elapsed(self) -> float:
        return time.perf_counter() - self.clock_start

    def train(self, until_s: float, check) -> float | None:
        """Step until `check(self)` is true (returns the elapsed time then) or the clock passes `until_s`."""
        tr = self.trainer
        gen = tr.run(steps=max(tr.tc.steps - tr.step_count, 1), every=1)
        try:
            for _ in gen:
                now = time.perf_counter()
                if now - self._last_eval >= EVAL_EVERY_S:
                    tr.report.evaluate()
                    self.views = tr.report.snapshot(views=True).views
                    self._last_eval = time.perf_counter()
                    if check(self):
                        return self.elapsed()
                if self.elapsed() >= until_s:
                    break
        finally:
            gen.close()
        tr.report.evaluate()
        return self.elapsed() if check(self) else None

    def last(self, metric: str) -> float:
        values = self.trainer.history.get(metric, ([], []))[1] if metric in self.trainer.history else []
        return float(values[-1]) if values else float("nan")

    def best(self, metric: str) -> float:
        values = self.trainer.history.get(metric, ([], []))[1] if metric in self.trainer.history else []
        return float(min(values)) if values else float("nan")


def flattened(run: Timed, tol: float = 0.02) -> bool:
    """The ELBO's mean over the last fifth of the logged values is within `tol` of its range of the fifth before."""
    values = run.trainer.history["elbo"][1] if "elbo" in run.trainer.history else []
    w = len(values) // 5
    if w < 5:
        return False
    last, before = np.mean(values[-w:]), np.mean(values[-2 * w:-w])
    span = max(values) - min(values)
    return span > 0 and abs(last - before) < tol * span


def two_runs(lesson, budget: float, first: float, second_effect) -> dict:
    """The lesson's first run (until its ELBO flattens or `first` s), then its comparison run in the rest of the
    budget; `second_effect(run, base)` says whether the key effect shows."""
    start = time.perf_counter()
    base = Timed(lesson.settings, start)
    base.train(first, lambda run: False)  # until its steps are done or `first` s: the text's "when it flattens"
    base_s = base.elapsed()
    base_figures = {"steps": base.trainer.step_count, "flattened": bool(flattened(base)), "seconds": round(base_s, 1),
                    "build_s": round(base.build_s, 2),
                    "elbo": smoothed(base.trainer, "elbo"), "test_error": base.last("test_error"),
                    "test_rmse": base.last("test_rmse")}
    log(f"  {lesson.key}: first run {base.trainer.config.model}: {base_figures}")
    second = Timed(lesson.compare_settings(), start)
    shown = second.train(budget, lambda run: second_effect(run, base))
    effect_step = second.trainer.step_count if shown is not None else None
    if shown is not None:  # go on to the end of the budget: the figures a lecturer sees at the end of the minute
        second.train(budget, lambda run: False)
    figures = {"steps": second.trainer.step_count, "seconds": round(second.elapsed() - base_s, 1),
               "build_s": round(second.build_s, 2), "elbo": smoothed(second.trainer, "elbo"),
               "test_error": second.last("test_error"), "test_rmse": second.last("test_rmse")}
    return {"first": base_figures, "second": figures, "base": base, "run": second, "effect_s": shown,
            "effect_step": effect_step}


def lesson_rotation(lesson, args) -> dict:
    reached = {}

    def effect(run, base):
        t = run.elapsed()
        rot = smoothed(run.trainer, "range.rotation", 1)
        if rot > 45 and "range" not in reached:
            reached["range"], reached["range_step"] = t, run.trainer.step_count
        if smoothed(run.trainer, "elbo") > smoothed(base.trainer, "elbo") and "elbo" not in reached:
            reached["elbo"], reached["elbo_step"] = t, run.trainer.step_count
        return "range" in reached and "elbo" in reached

    out = two_runs(lesson, args.seconds, args.first, effect)
    run = out.pop("run")
    out.pop("base")
    out["second"]["rotation_deg"] = smoothed(run.trainer, "range.rotation", 1)
    out["range_above_45_s"], out["range_above_45_step"] = reached.get("range"), reached.get("range_step")
    out["elbo_overtakes_s"], out["elbo_overtakes_step"] = reached.get("elbo"), reached.get("elbo_step")
    out["effect"] = "invariant: rotation range > 45° and ELBO above the plain model's"
    return out


def lesson_symmetry(lesson, args) -> dict:
    def effect(run, base):
        return smoothed(run.trainer, "elbo") > smoothed(base.trainer, "elbo") and \
            run.last("test_rmse") < base.last("test_rmse")

    out = two_runs(lesson, args.seconds, args.first, effect)
    out.pop("run"), out.pop("base")
    out["effect"] = "invariant: ELBO above the plain model's and test RMSE below it"
    return out


def lesson_patches(lesson, args, target: float = 0.05) -> dict:
    start = time.perf_counter()
    first = Timed(lesson.settings, start)
    below = {}

    def first_effect(run):
        if run.last("test_error") < target and "t" not in below:
            below["t"], below["step"] = run.elapsed(), run.trainer.step_count
        return False

    first.train(args.first, first_effect)  # the whole first run: the text's "when the test error has settled"
    first_s = first.elapsed()
    figures = {"steps": first.trainer.step_count, "seconds": round(first_s, 1), "build_s": round(first.build_s, 2),
               "test_error": first.last("test_error"), "best_test_error": first.best("test_error"),
               "views": sorted(first.views)}
    log(f"  patches: first run: {figures}")
    second = Timed(lesson.compare_settings(), start)
    matched = second.train(args.seconds, lambda run: run.last("test_error") <= first.last("test_error"))
    matched_step = second.trainer.step_count if matched is not None else None
    if matched is not None:
        second.train(args.seconds, lambda run: False)
    return {"first": figures,
            "second": {"steps": second.trainer.step_count, "seconds": round(second.elapsed() - first_s, 1),
                       "build_s": round(second.build_s, 2), "test_error": second.last("test_error"),
                       "best_test_error": second.best("test_error"), "views": sorted(second.views)},
            "invariant_below_target_s": below.get("t"), "invariant_below_target_step": below.get("step"),
            "weighted_matches_s": matched, "effect_step": matched_step,
            "effect_s": matched if below else None,
            "effect": f"conv-invariant test error < {target:.0%}, then conv-weighted's at or below conv-invariant's"}


def lesson_functional(lesson, args) -> dict:
    start = time.perf_counter()
    run = Timed(lesson.settings, start)
    tr = run.trainer

    def solve(limit_steps: int, until_s: float) -> None:
        end = tr.step_count + limit_steps
        while tr.step_count < end and run.elapsed() < until_s and not getattr(tr, "converged", False):
            before = smoothed(tr, "loss", 1)
            tr.step()
            after = smoothed(tr, "loss", 1)
            if math.isfinite(before) and abs(before - after) <= 1e-9 * max(1.0, abs(before)):
                break  # L-BFGS made no more progress: solved

    def boundary():
        field = tr.report.snapshot(views=True).views["decision_function"]
        return np.asarray(field.values if hasattr(field, "values") else field.z)

    solve(100, args.seconds / 2)
    error0, steps0, field0, t0 = tr.report.evaluate()["test_error"], tr.step_count, boundary(), run.elapsed()
    tr.edits.put(SetValue("nu", 1.0))  # what the ν slider does in the page
    solve(100, args.seconds)
    error1, field1 = tr.report.evaluate()["test_error"], boundary()
    t1 = run.elapsed()
    changed = float(np.mean(np.sign(field0) != np.sign(field1)))
    shown = error1 < error0 and changed > 0.01
    return {"nu0": {"test_error": error0, "steps": steps0, "seconds": round(t0, 1)},
            "nu1": {"test_error": error1, "steps": tr.step_count - steps0, "seconds": round(t1 - t0, 1)},
            "boundary_changed_fraction": changed, "effect_s": round(t1, 1) if shown else None,
            "effect": "ν 0 → 1: test error falls and the decision boundary moves"}


def lesson_prior(lesson, args) -> dict:
    explorer = prior_explorer(lesson.settings)
    redraws = []

    def draw():
        t = time.perf_counter()
        views = explorer.views()
        redraws.append(time.perf_counter() - t)
        return views

    def spread(values):
        v = np.asarray(values, dtype=float)
        v = v[v > 0]
        return float(np.log10(v.max() / v.min())), float(v.min())

    start = time.perf_counter()
    views = draw()
    iw_wide = spread(views["inverse_wishart_eigenvalues"].values)
    wish = spread(views["wishart_eigenvalues"].values)
    res0 = spread(views["residual_wishart_eigenvalues"].values)
    explorer.delta = 10.0
    views = draw()
    iw_narrow = spread(views["inverse_wishart_eigenvalues"].values)
    explorer.alpha = 2.0
    views = draw()
    res1 = spread(views["residual_wishart_eigenvalues"].values)
    elapsed = time.perf_counter() - start
    shown = iw_narrow[0] > iw_wide[0] + 0.5 and iw_narrow[1] > 100 * wish[1] and res1[1] > 100 * res0[1]
    return {"iw_log10_spread": {"delta_1000": iw_wide[0], "delta_10": iw_narrow[0]},
            "smallest_eigenvalue": {"wishart": wish[1], "iw_delta_10": iw_narrow[1], "residual_alpha_0": res0[1],
                                    "residual_alpha_2": res1[1]},
            "redraw_s": [round(r, 2) for r in redraws], "effect_s": round(elapsed, 1) if shown else None,
            "effect": "δ 1000 → 10 spreads IW eigenvalues (none near 0); α 0 → 2 lifts the residual Wishart's smallest"}


def page_lessons(args, headless: dict) -> dict:
    """The comparison lessons in the real page (served, in headless Chromium): press Start, wait for the first run to
    finish, choose the comparison's family, press Reset (and Start if the run does not go on by itself), and read the
    status bar's step until the budget is spent. The effect counts as shown in the page when the second run reached
    the step at which it showed in the headless run (`effect_step`)."""
    import tempfile
    from pathlib import Path

    from playwright.sync_api import sync_playwright

    from invlab.dashboard.lessons.catalogue import lesson_query
    from invlab.dashboard.screenshot import CHROMIUM_ARGS, executable, serve

    out = {}
    lessons = [lesson for lesson in LESSONS if lesson.compare and (not args.lesson or lesson.key in args.lesson)]
    with tempfile.TemporaryDirectory(prefix="invlab-lessons-") as tmp, serve(Path(tmp)) as url, \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable(), args=CHROMIUM_ARGS)
        try:
            for lesson in lessons:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(url + lesson_query(lesson), timeout=120_000)
                field = lambda name: page.locator(f"[data-field={name}]").first.inner_text().strip()  # noqa: E731
                page.get_by_role("button", name="▶ Start").click(timeout=120_000)
                start = time.perf_counter()
                elapsed = lambda: time.perf_counter() - start  # noqa: E731
                while elapsed() < args.seconds and field("state") not in ("finished", "converged", "failed"):
                    time.sleep(0.25)
                first_s, first_step, first_rate = elapsed(), field("step"), field("rate")
                page.locator(".bk-tab", has_text="Model").first.click()
                page.locator(".bk-input-group", has_text="Model family").locator("select").first.select_option(
                    lesson.compare["model"])
                page.get_by_role("button", name="↺ Reset").click()
                deadline = time.perf_counter() + 30
                while time.perf_counter() < deadline and \
                        field("state") not in ("idle", "running", "building", "queued"):
                    time.sleep(0.25)  # the reset has taken effect: a new run, not yet started (or already going)
                time.sleep(1.5)  # a person reads the page before pressing Start
                retries = -1
                while retries < 3 and field("state") not in ("running", "building", "queued", "finished"):
                    retries += 1  # a press the page did not act on (seen right after a Reset): press again
                    page.get_by_role("button", name="▶ Start").click()
                    deadline = time.perf_counter() + 10
                    while time.perf_counter() < deadline and (field("state") == "idle" or field("step") == "0"):
                        time.sleep(0.25)
                while elapsed() < args.seconds and field("state") not in ("finished", "converged", "failed"):
                    time.sleep(0.25)
                second_s = elapsed() - first_s
                second_step = int(field("step") or 0)
                status = page.locator(".invlab-status").first.inner_text()
                need = headless.get(lesson.key, {}).get("effect_step")
                out[lesson.key] = {"first_run_s": round(first_s, 1), "first_steps": first_step,
                                   "first_rate": first_rate, "second_steps_by_budget": second_step,
                                   "second_s": round(second_s, 1), "start_presses_ignored": max(retries, 0),
                                   "second_is_compare_family": f"{lesson.compare['model']} on" in status,
                                   "second_rate": field("rate"), "second_state": field("state"),
                                   "headless_effect_step": need,
                                   "effect_in_page_by_budget": None if need is None else second_step >= need}
                log(f"  page {lesson.key}: {out[lesson.key]}")
                page.close()
        finally:
            browser.close()
    return out


def lesson_discover(lesson, args) -> dict:
    import tempfile

    from invlab.dashboard.compare.discover import DEFAULT_SEEDS
    from invlab.dashboard.lessons.catalogue import split_settings
    from invlab.sweeps.discover import plan_candidates, run_candidates
    from invlab.sweeps.discover_report import discover_report
    from invlab.train import RunStore

    data = {"dataset": "digits", **split_settings(lesson.settings)["data"]}
    with tempfile.TemporaryDirectory(prefix="invlab-lesson-") as tmp:
        store = RunStore(f"{tmp}/runs.sqlite")
        start = time.perf_counter()
        plan = plan_candidates(data, seeds=DEFAULT_SEEDS, steps=300)
        sweep_id = run_candidates(plan, store, n_workers=2)
        elapsed = time.perf_counter() - start
        report = discover_report(store, sweep_id)
        store.close()
    best = report.ranking[0] if report.ranking else None
    rotation = report.row("rotation")
    shown = report.verdict.startswith("rotation-invariant") and not report.partial
    return {"verdict": report.verdict, "first": best.candidate if best else None,
            "rotation_learned_deg": rotation.learned.get("rotation", {}).get("mean") if rotation else None,
            "rotation_log_bf": rotation.log_bf if rotation else None, "runs": report.stored,
            "effect_s": round(elapsed, 1) if shown else None,
            "effect": "the verdict names rotation, learned near 90°, far above none"}


def budget_of(key: str, args) -> float:
    """A lesson's budget in seconds: `--seconds`, except Discover's study, held to what its card says it takes."""
    if key == "discover" and not args.quick:
        from invlab.dashboard.lessons.catalogue import DISCOVER_SECONDS

        return max(args.seconds, float(DISCOVER_SECONDS))
    return args.seconds


RUNNERS = {"rotation": lesson_rotation, "symmetry": lesson_symmetry, "patches": lesson_patches,
           "functional": lesson_functional, "prior": lesson_prior, "discover": lesson_discover}


def _clean(obj):
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, float):
        return None if not math.isfinite(obj) else float(f"{obj:.4g}")
    return obj


def main(argv=None) -> dict:
    parser = arguments(__doc__, quick="the first lesson only, with a 20 s budget (--smoke: the prior lesson, which "
                                      "trains nothing)")
    parser.add_argument("--lesson", action="append", choices=sorted(BY_KEY), help="only these lessons (repeatable)")
    parser.add_argument("--seconds", type=float, default=60.0, help="wall-clock budget per lesson")
    parser.add_argument("--first", type=float, default=20.0, help="at most this long for a comparison's first run")
    parser.add_argument("--page", action="store_true",
                        help="also run the comparison lessons in the served page (headless Chromium)")
    args = parse(parser, argv)
    if args.quick:
        args.lesson = args.lesson or ["prior" if args.smoke else LESSONS[0].key]
        args.seconds = min(args.seconds, 5.0 if args.smoke else 20.0)
        args.first = min(args.first, args.seconds)
    result = {"benchmark": "lessons", "threads": args.threads, "budget_s": args.seconds, "lessons": {}}
    rows = []
    for lesson in LESSONS:
        if args.lesson and lesson.key not in args.lesson:
            continue
        log(f"lesson {lesson.key}: {lesson.title}")
        t = time.perf_counter()
        out = _clean(RUNNERS[lesson.key](lesson, args))
        out["wall_s"] = round(time.perf_counter() - t, 1)
        result["lessons"][lesson.key] = out
        rows.append((lesson.key, out["effect"], out["effect_s"]))
        log(f"  {json.dumps(out)}")
    print(f"{'lesson':<12} {'shown':<6} {'at (s)':>7}  effect")
    for key, effect, at in rows:
        print(f"{key:<12} {'yes' if at is not None else 'NO':<6} {('-' if at is None else f'{at:.1f}'):>7}  {effect}")
    result["all_within_budget"] = all(at is not None and at <= budget_of(key, args) for key, _, at in rows)
    if args.page:
        log("the comparison lessons in the served page")
        result["page"] = page = _clean(page_lessons(args, result["lessons"]))
        print(f"{'in page':<12} {'1st run s':>9} {'2nd steps':>9} {'needed':>7}  shown by {args.seconds:g} s")
        for key, row in page.items():
            print(f"{key:<12} {row['first_run_s']:>9} {row['second_steps_by_budget']:>9} "
                  f"{str(row['headless_effect_step']):>7}  {row['effect_in_page_by_budget']}")
    return emit(result)


if __name__ == "__main__":
    main()
