"""Previous-run labels in a real Chromium: the dashed curve of a previous run is labelled by what really differed
from the run now drawn, changes made while it ran included, and never by a setting the user did not touch."""
import re

from invlab.dashboard.lessons.catalogue import get_lesson, lesson_query
from lessonkit import previous_labels
from pagekit import browser_page, poll


def field(page, label: str):
    return page.locator(".bk-input-group", has_text=re.compile(r"^\s*" + re.escape(label))).first.locator("input").first


def step(page) -> int:
    cell = page.locator("[data-field=step]").first
    text = cell.inner_text().strip() if cell.count() else "0"
    return int(text) if text.isdigit() else 0


SMALL = ("?model=svgp&data.subset=200&data.test_subset=100&model.num_inducing=10&train.batch_size=50"
         "&train.steps=100000&train.learning_rate=0.03")


def test_a_rate_changed_mid_run_labels_the_previous_run(served_app):
    with browser_page() as (page, errors):
        page.goto(served_app + SMALL)
        page.get_by_role("button", name="▶ Start").click(timeout=90_000)
        poll(lambda: step(page) >= 5, timeout=120)
        page.locator(".bk-tab", has_text="Optimisation").first.click()
        box = field(page, "Learning rate")
        box.fill("0.01")
        box.press("Enter")
        poll(lambda: page.locator("[data-field=lr]").first.inner_text().strip() == "0.01", timeout=20)
        page.get_by_role("button", name="↺ Reset").click()
        labels = poll(lambda: previous_labels(page), timeout=120)
        assert not any("same settings" in t for t in labels), labels
        assert any("lr 0.03" in t for t in labels), labels
        assert not errors, errors


def test_a_family_switch_is_labelled_by_the_family_alone(served_app):
    """Lesson 2: after the plain run, the invariant family; the dashed line says "svgp", not settings that only
    followed the family's defaults."""
    lesson = get_lesson("symmetry")
    with browser_page() as (page, errors):
        page.goto(served_app + lesson_query(lesson).replace("train.steps=800", "train.steps=30"))
        page.get_by_role("button", name="▶ Start").click(timeout=90_000)
        poll(lambda: step(page) >= 5, timeout=120)
        page.locator(".bk-tab", has_text=re.compile(r"^\s*Model\s*$")).first.click()
        family = page.locator(".bk-input-group", has_text="Model family").locator("select").first
        family.select_option("invariant")
        page.get_by_role("button", name="↺ Reset").click()
        labels = poll(lambda: previous_labels(page), timeout=120)
        assert labels == ["svgp"], labels
        assert not errors, errors
