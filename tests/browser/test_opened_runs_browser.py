"""Stored runs opened one after another, and runs of a user's own loop (`invlab.train.watch`), in a real Chromium:
the second run opened replaces the first's curves (its line in step order, never back to its first point); a watched
run says what it is (its name and model, its step without the page's 2000-step total), ▶ Start is off with one whole
sentence saying why, the Data tab keeps the page's settings when the loop stored none, only the metrics it logged get
plots, a long gap in its steps breaks the line, and a long hyperparameter's plot title wraps between words with the
full name on hover."""
import math

from pagekit import browser_page, open_tab, poll
from tests.browser.lessonkit import select_value

# Each live curve's (metric, steps, values): the sources holding a `smoothed` column (one per CurvePlot).
LIVE = """() => {
  const out = [];
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      if (m.data && m.data.smoothed && m.data.step) {
        const metric = Object.keys(m.data).find((k) => k !== "step" && k !== "smoothed");
        out.push([metric, Array.from(m.data.step), Array.from(m.data.smoothed, (v) => (Number.isNaN(v) ? null : v))]);
      }
  return out;
}"""

# Every figure title's text and every hover tool's tooltip rows.
TITLES = """() => {
  const titles = [], tips = [];
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values()) {
      if (m.title && typeof m.title.text === "string" && m.renderers !== undefined) titles.push(m.title.text);
      if (Array.isArray(m.tooltips)) tips.push(...m.tooltips.map((row) => row.join(" ")));
    }
  return [titles, tips];
}"""

LONG = "hyperparameters/covar_module.base_kernel.base_kernel.lengthscale"


def status(page, name: str) -> str:
    return page.locator(f".invlab-status [data-field={name}]").first.inner_text()


def live(page) -> dict:
    return {metric: (steps, values) for metric, steps, values in page.evaluate(LIVE)}


class Mine:
    """A user's own model, with no views."""

    def diagnostics(self):
        return {}


def test_opening_a_second_stored_run_replaces_the_first_runs_curve(served_home):
    from invlab.train import RunConfig, watch

    url, folder = served_home
    config = RunConfig(data={"dataset": "digits", "subset": 200})
    runs = []
    for name, steps in (("first", 30), ("second", 20)):
        with watch(Mine(), name=name, config=config, data_dir=folder / "data") as run:
            for step in range(1, steps + 1):
                run.log(step, elbo=-100.0 + step)
        runs.append(run.run_id)
    with browser_page(1400, 1000) as (page, errors):
        page.goto(url + f"?run={runs[0]}")
        poll(lambda: live(page).get("elbo", ([], []))[0] == list(range(1, 31)))
        open_tab(page, "Runs")
        select = page.locator(".bk-input-group", has_text="Stored runs").locator("select").first
        poll(lambda: [t for t in select.locator("option").all_inner_texts() if t.startswith(f"#{runs[1]} second")])
        label = [t for t in select.locator("option").all_inner_texts() if t.startswith(f"#{runs[1]} second")][0]
        select.select_option(label=label)
        page.get_by_role("button", name="Open run").click()
        poll(lambda: live(page)["elbo"][0][-1:] == [20], timeout=30)  # the second run's last point has arrived
        steps = live(page)["elbo"][0]
        assert steps == list(range(1, 21)), steps  # the second run's points, once, in step order
        assert not errors, errors


def test_a_watched_run_says_what_it_is_and_start_cannot_train_the_defaults(served_home):
    from invlab.train import watch

    url, folder = served_home
    with watch(Mine(), name="my gpytorch loop", data_dir=folder / "data") as run:  # no config: nothing stored
        for step in [*range(1, 31), *range(300, 331)]:  # logged every step, then not for 270 steps
            run.log(step, loss=50.0 - step / 10, **{LONG: 1.0 + step / 1000})
    with browser_page(1400, 1000) as (page, errors):
        page.goto(url + f"?data.dataset=two-moons&run={run.run_id}")
        poll(lambda: "own loop" in status(page, "message"))
        poll(lambda: len(live(page).get("loss", ([], []))[0]) >= 61)
        assert status(page, "run") == "my gpytorch loop (Mine)"
        assert status(page, "step") == "330" and not page.locator(".invlab-status [data-field=total]").count()
        assert page.get_by_role("button", name="▶ Start").is_disabled()
        message = page.locator(".invlab-status [data-field=message]").first
        text = message.inner_text()
        assert "Start trains" not in text and text.rstrip().endswith("."), text
        assert message.evaluate("(el) => el.scrollHeight <= el.clientHeight + 1"), text  # whole, not cut
        curves = live(page)
        assert set(curves) == {"loss", LONG}, set(curves)  # no empty plots of metrics it never logged
        steps, values = curves["loss"]
        assert steps == sorted(steps)
        between = [v for s, v in zip(steps, values) if 30 < s < 300]
        assert between == [None], between  # the gap breaks the line: one NaN point, nothing drawn across it
        titles, tips = page.evaluate(TITLES)
        long_title = [t for t in titles if "lengthscale" in t.lower()]
        assert long_title and all(len(line) <= 48 for line in long_title[0].split("\n")), titles
        assert any(LONG in tip for tip in tips), tips  # its full name on hover
        open_tab(page, "Data")
        poll(lambda: select_value(page, "Dataset") == "two-moons", timeout=20)  # the page's own, not the defaults
        assert not errors, errors
        assert not math.isnan(float(status(page, "step")))
