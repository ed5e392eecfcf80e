"""An opened stored run in a real Chromium shows the run as it was stored: its learning rate in the status as in the
box, its augmentation ranges' history, the step it was paused at, and a continued run's plots go on from that step."""
import re
import time

from pagekit import browser_page, column_length, page_texts, poll

LINK = ("?model=invariant&model.augmentation=rotation&model.num_inducing=10&model.num_samples=2"
        "&data.subset=150&data.test_subset=60&data.rotate=90&train.batch_size=32&train.steps=100000"
        "&train.learning_rate=0.02")

# The largest x of the augmentation-range history plot (its x axis is the training step); -1 while it has no data.
RANGE_STEPS = """() => {
  let top = -1;
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      if (m.data) for (const key of Object.keys(m.data))
        if (key.replace(/_/g, " ") === "training step" && m.data[key].length)
          top = Math.max(top, ...Array.from(m.data[key]));
  return top;
}"""


# The labels of every legend entry on the page (the live run's and the faint overlays of earlier runs).
LEGEND_LABELS = """() => {
  const out = [];
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      if (m.label && typeof m.label.value === "string" && m.renderers !== undefined) out.push(m.label.value);
  return out;
}"""


def field(page, name: str) -> str:
    return page.locator(f".invlab-status [data-field={name}]").first.inner_text()


def tab(page, name: str):
    return page.locator(".bk-tab", has_text=re.compile(f"^{name}$")).first


def test_an_opened_paused_run_is_shown_and_continued_as_it_was(served_app):
    with browser_page(1440, 900) as (page, errors):
        page.goto(served_app + LINK)
        page.get_by_role("button", name="▶ Start").click(timeout=90_000)
        poll(lambda: field(page, "state") == "running" and int(field(page, "step")) >= 40
             and column_length(page, "elbo") >= 3, timeout=150)
        page.get_by_role("button", name="❚❚ Pause").click()
        poll(lambda: field(page, "state") == "paused")
        paused = int(field(page, "step"))
        # a new page (default learning rate 0.01) opens the paused run from the list
        page.goto(served_app + "?data.subset=150")
        poll(lambda: field(page, "state") == "idle")
        tab(page, "Runs").click()
        select = page.locator(".bk-input-group", has_text="Stored runs").locator("select").first
        listed = lambda: [t for t in select.locator("option").all_inner_texts() if f"paused, step {paused}" in t]  # noqa: E731
        poll(listed)
        select.select_option(label=listed()[0])
        page.get_by_role("button", name="Open run").click()
        poll(lambda: "opened stored run" in field(page, "message"))
        assert int(field(page, "step")) == paused, field(page, "message")  # the step it was paused at
        poll(lambda: "invariant on digits" in field(page, "run"), timeout=20)
        tab(page, "Optimisation").click()
        box = page.locator(".bk-input-group", has_text="Learning rate").locator("input").first
        poll(lambda: float(box.input_value()) == 0.02, timeout=10)
        poll(lambda: field(page, "lr") == "0.02", timeout=10)  # the status says what the box says
        poll(lambda: any("Augmentation ranges over training" in t for t in page_texts(page)))
        # scrolled into the window, as a user looks at it: a view off screen is not recomputed while training runs
        page.locator(".invlab-view--augmentation_history").first.scroll_into_view_if_needed()
        poll(lambda: page.evaluate(RANGE_STEPS) >= paused - 10, timeout=30)  # its history (logged every 10 steps)
        page.get_by_role("button", name="▶ Start").click()
        poll(lambda: field(page, "state") == "running" and int(field(page, "step")) >= paused + 20, timeout=150)
        page.locator(".invlab-view--augmentation_history").first.scroll_into_view_if_needed()  # back to the view
        poll(lambda: page.evaluate(RANGE_STEPS) >= paused + 10, timeout=30)  # goes on from the run's step
        assert not errors, errors


def test_two_tabs_on_one_run_the_second_follows_the_first_and_neither_page_breaks(served_app):
    """A second tab opened on a paused run's link, then the first tab goes on training it: the second's ▶ Start
    says another page of this server trains it and draws that page's points (no `kill`, no process id) as this run,
    not beside a faint copy of itself, and neither page throws (BokehJS's "reference … isn't known" included)."""
    with browser_page(1440, 900) as (first, first_errors), browser_page(1440, 900) as (second, second_errors):
        first.goto(served_app + "?data.subset=200&data.test_subset=100&model.num_inducing=10&train.steps=100000")
        first.get_by_role("button", name="▶ Start").click(timeout=90_000)
        poll(lambda: "run=" in first.evaluate("location.search") and int(field(first, "step")) >= 5, timeout=150)
        first.get_by_role("button", name="❚❚ Pause").click()
        poll(lambda: field(first, "state") == "paused")
        run_id = re.search(r"[?&]run=(\d+)", first.evaluate("location.search")).group(1)
        second.goto(served_app + first.evaluate("location.search"))
        poll(lambda: "Start continues it" in field(second, "message"), timeout=90)
        first.get_by_role("button", name="▶ Start").click()
        poll(lambda: field(first, "state") == "running")
        second.get_by_role("button", name="▶ Start").click()
        poll(lambda: "another page of this server" in field(second, "message"), timeout=60)
        message = field(second, "message")
        assert f"Start did not train run {run_id} here" in message and "kill" not in message, message
        drawn = column_length(second, "elbo")
        poll(lambda: column_length(second, "elbo") > drawn, timeout=60)  # the first page's new points
        labels = second.evaluate(LEGEND_LABELS)
        assert "this run" in labels and "same settings" not in labels, labels  # no faint copy of the run itself
        assert field(first, "state") == "running"
        assert first_errors == [] and second_errors == [], (first_errors, second_errors)


def test_a_new_tab_on_an_opened_run_whose_tab_closed_draws_its_curves(served_app):
    """A tab showing an opened stored run closes, and the run's link is opened again a moment later: the new tab
    takes over the old page (its Explorer), and its curves are drawn there with their points. The old page's end used
    to wipe the plots the new page had taken over, which then showed as empty frames."""
    with browser_page(1440, 900) as (first, _):
        first.goto(served_app + "?data.subset=200&data.test_subset=100&model.num_inducing=10&train.steps=100000")
        first.get_by_role("button", name="▶ Start").click(timeout=90_000)
        poll(lambda: "run=" in first.evaluate("location.search") and int(field(first, "step")) >= 30, timeout=150)
        first.get_by_role("button", name="❚❚ Pause").click()
        poll(lambda: field(first, "state") == "paused")
        link = first.evaluate("location.search")
        with browser_page(1440, 900) as (opened, _):
            opened.goto(served_app + link)
            poll(lambda: "opened stored run" in field(opened, "message"), timeout=90)
            poll(lambda: column_length(opened, "elbo") >= 3)
            drawn = column_length(opened, "elbo")
        time.sleep(2)  # its tab is gone; the server ends its session a few seconds later
        with browser_page(1440, 900) as (again, errors):
            again.goto(served_app + link)
            poll(lambda: "opened stored run" in field(again, "message"), timeout=90)
            time.sleep(8)  # past the old session's end
            assert column_length(again, "elbo") == drawn, (column_length(again, "elbo"), drawn)
            assert errors == []
