"""Walking a lesson in a real Chromium as its card words it: do one `Step` (press, choose, type, drag) and read
from the page whether its expected effect happened."""
import math
import re

from invlab.dashboard.lessons.catalogue import Lesson, Step, run_config
from invlab.dashboard.screenshot import curve_columns, discover_verdict
from pagekit import TEXT, column_length, open_tab, page_texts

# The legend text of every dashed line (a previous run's curve, or a reference line) in the page, once each.
DASHED_LABELS = """() => {
  const out = new Set();
  const dashed = (d) => {
    const v = d && typeof d === "object" && "value" in d ? d.value : d;
    return Array.isArray(v) ? v.length > 0 : (typeof v === "string" && v !== "" && v !== "solid");
  };
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      if (m.label && typeof m.label === "object" && typeof m.label.value === "string" && m.renderers
          && m.visible !== false)  // a legend item the plot shows (a streamed plot keeps unused ones hidden)
        for (const r of m.renderers)
          if (r.glyph && r.visible !== false && dashed(r.glyph.line_dash)) out.add(m.label.value);
  return [...out];
}"""

# The last value of the longest data column named `name` (the run now drawn), or null.
LAST_VALUE = """(names) => {
  let best = null;
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      for (const name of names)
        if (m.data && m.data[name] && m.data[name].length && (!best || m.data[name].length > best.length))
          best = m.data[name];
  return best ? Number(best[best.length - 1]) : null;
}"""


def previous_labels(page) -> list[str]:
    """The labels of the previous runs' dashed curves, as the legend shows them (wrapped lines joined; the
    predictions plot's dashed reference line y = x left out)."""
    labels = (" ".join(text.split()) for text in page.evaluate(DASHED_LABELS))
    return [t for t in labels if t != "y = x"]


def group(page, label: str):
    """The input group whose label starts with `label` (so "Subset" is not "Test subset")."""
    return page.locator(".bk-input-group", has_text=re.compile(r"^\s*" + re.escape(label))).first


def select_value(page, label: str) -> str:
    """The value selected in the drop-down under `label`."""
    return page.locator(".bk-input-group", has_text=label).locator("select").first.input_value()


def field(page, label: str):
    return group(page, label).locator("input").first


def page_text(page) -> str:
    """Everything the page shows as text; "" while a page that was just opened (a lesson's link) is still loading."""
    from playwright.sync_api import Error

    try:
        return page.evaluate(TEXT) + "\n" + "\n".join(page_texts(page))
    except Error as err:
        if still_loading(err):
            return ""
        raise


def still_loading(err: Exception) -> bool:
    """Whether a page script failed only because the page is (re)loading: BokehJS not there yet, or the old page
    gone mid-call."""
    return "Bokeh is not defined" in str(err) or "Execution context was destroyed" in str(err)


def view_title(settings: dict, name: str) -> str:
    """The title the engine gives view `name` of a run with these lesson settings (after one step)."""
    from invlab.train import Trainer

    trainer = Trainer(run_config(settings))
    trainer.step()
    return trainer.report.snapshot(views=True).views[name].title


def drag_slider(page, label: str, fraction: float) -> None:
    """Drag the handle of the slider under the text `label` to `fraction` of its track, as a person does."""
    heading = [el for el in page.get_by_text(label).all() if el.is_visible()][0].bounding_box()
    handles = [h for h in page.locator(".noUi-handle").all() if h.is_visible()]
    below = [h for h in handles if h.bounding_box()["y"] >= heading["y"] - 5]
    handle = min(below, key=lambda h: h.bounding_box()["y"] - heading["y"])
    track = handle.locator("xpath=ancestor::div[contains(@class, 'noUi-target')]").first.bounding_box()
    box = handle.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    target = track["x"] + fraction * track["width"]
    page.mouse.move(target, box["y"] + box["height"] / 2, steps=12)
    page.mouse.up()


def slider_fraction(step: Step) -> float:
    """Where `step.value` sits on the prior page's slider for its setting."""
    from invlab.models.dkp import PriorExplorer

    if step.control == "prior.delta":  # a log slider over δ's soft bounds
        lo, hi = (math.log10(b) for b in PriorExplorer.param["delta"].softbounds)
        return (math.log10(step.value) - lo) / (hi - lo)
    if step.control == "prior.alpha":
        return step.value / 5.0  # the α slider spans 0..5
    raise ValueError(f"no slider known for {step.control}")


def do(page, step: Step) -> None:
    """Do what the step says, with the page's own controls."""
    if step.control == "start":
        page.get_by_role("button", name="▶ Start").click(timeout=90_000)
    elif step.control == "reset":
        page.get_by_role("button", name="↺ Reset").click()
    elif step.control == "discover":
        page.get_by_role("button", name=step.label).click(timeout=90_000)
    elif step.control == "open":  # the ranking's row of candidate `value` (its candidate cell says exactly that)
        cell = page.locator(".invlab-discover-table .tabulator-cell[tabulator-field=candidate]",
                            has_text=re.compile(r"^\s*" + re.escape(step.value) + r"\s*$")).first
        cell.click(timeout=60_000)
    elif step.control == "model":
        open_tab(page, step.tab)
        page.locator(".bk-input-group", has_text=step.label).locator("select").first.select_option(step.value)
    elif step.control.startswith("prior."):
        drag_slider(page, step.label, slider_fraction(step))
    else:
        open_tab(page, step.tab)
        box = field(page, step.label)
        box.wait_for(timeout=60_000)
        box.fill(format(step.value, "g"))
        box.press("Enter")


def effect_shown(page, lesson: Lesson, step: Step, titles: dict) -> bool:
    """Whether the page shows the step's expected effect (see `Step.check`); not yet while the page is (re)loading,
    e.g. just after a Discover candidate opened its run on the Training page."""
    from playwright.sync_api import Error

    try:
        return _effect_shown(page, lesson, step, titles)
    except Error as err:
        if still_loading(err):
            return False
        raise


def _effect_shown(page, lesson: Lesson, step: Step, titles: dict) -> bool:
    kind, arg, *rest = step.expect
    if kind == "points":
        return max(column_length(page, name) for name in curve_columns(arg)) >= 3
    if kind == "view":
        stem = titles[arg].split("=")[0]
        return any(stem in text for text in page_texts(page))
    if kind == "previous":
        return arg in previous_labels(page)
    if kind == "below":
        last = page.evaluate(LAST_VALUE, curve_columns(arg))
        return last is not None and last < rest[0]
    if kind == "text":
        return arg in page_text(page)
    if kind == "verdict":  # the finished study's verdict, not the card's words about it
        verdict = discover_verdict(page)
        return verdict.startswith("Verdict:") and arg in verdict
    raise ValueError(f"unknown check {kind!r}")
