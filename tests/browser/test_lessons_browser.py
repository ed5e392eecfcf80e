"""Lessons in a real headless Chromium: every card on the landing view opens its preset (the page shows the lesson's
title and selects its family and dataset, or opens the prior page), and its key view receives data; teacher mode
hides the controls a lesson does not list.

Page contract (CONTRACT.md): `?lesson=<key>` applies the lesson's settings and shows its title and text; the cards
are `.invlab-lesson[data-lesson=<key>]` with an `a.invlab-open` link (on the landing view, or a "Lessons" tab);
`page=prior` opens the "Deep kernel prior" page; `teacher=1` hides every control the lesson does not list.
"""
import pytest

from dashboard.lessons import LESSONS, get_lesson, lesson_query, prior_settings, visible_controls
from dashboard.screenshot import key_view_ready, key_view_title
from engine.train import TrainConfig
from pagekit import browser_page, page_texts, poll


def open_landing(page, url):
    page.goto(url)
    page.locator(".invlab-status, .invlab-lesson").first.wait_for(timeout=90_000)
    tab = page.locator(".bk-tab", has_text="Lessons")
    if tab.count():
        tab.first.click()
    return page


def select_value(page, label: str) -> str:
    return page.locator(".bk-input-group", has_text=label).locator("select").first.input_value()


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.key)
def test_lesson_card_opens_its_preset_and_its_key_view_gets_data(served_app, lesson):
    title = key_view_title(lesson)
    with browser_page() as (page, errors):
        open_landing(page, served_app)
        card = page.locator(f".invlab-lesson[data-lesson={lesson.key}]").first
        card.wait_for(timeout=30_000)
        card.locator("a.invlab-open").click()
        poll(lambda: f"lesson={lesson.key}" in page.url)
        heading = page.get_by_text(lesson.title)
        poll(lambda: heading.count() > 0 and any(heading.nth(i).is_visible() for i in range(heading.count())))

        if lesson.page == "prior":
            tab = page.locator(".bk-tab", has_text="Deep kernel prior").first
            poll(lambda: "bk-active" in (tab.get_attribute("class") or ""))
        elif lesson.page == "compare":  # the Discover study on the lesson's data, every candidate ticked
            tab = page.locator(".bk-tab", has_text="Compare").first
            poll(lambda: "bk-active" in (tab.get_attribute("class") or ""))
            poll(lambda: select_value(page, "Data set") == lesson.settings["data.dataset"], timeout=60)
            ticked = page.locator(".invlab-discover-candidates input[type=checkbox]")
            poll(lambda: ticked.count() >= 6 and all(ticked.nth(i).is_checked() for i in range(ticked.count())))
            names = [" ".join(t.split()) for t in page.locator(".invlab-discover-candidates label").all_inner_texts()]
            assert "rotation" in names and "flips" in names, names
            assert not errors, errors
            return  # the walk (test_lesson_walk_browser) presses ▶ Discover and waits for the ranking
        else:
            poll(lambda: select_value(page, "Model family") == lesson.settings["model"])
            if "data.dataset" in lesson.settings:
                assert select_value(page, "Dataset") == lesson.settings["data.dataset"]
            page.get_by_role("button", name="▶ Start").click(timeout=90_000)
        poll(lambda: key_view_ready(page, lesson, title, points=3), timeout=150)
        assert not errors, errors


def test_teacher_mode_hides_the_controls_a_lesson_does_not_list(served_app):
    lesson = get_lesson("rotation")
    shown = visible_controls(lesson)
    assert "train.learning_rate" in shown and "train.jitter" not in shown
    with browser_page() as (page, errors):
        page.goto(served_app + lesson_query(lesson, teacher=True))
        poll(lambda: page.get_by_text(lesson.title).count() > 0)
        page.locator(".bk-tab", has_text="Optimisation").first.click()
        rate = page.locator(".bk-input-group", has_text=TrainConfig.param["learning_rate"].label)
        jitter = page.locator(".bk-input-group", has_text=TrainConfig.param["jitter"].label)
        poll(lambda: rate.count() > 0 and rate.first.is_visible())
        assert jitter.count() == 0 or not jitter.first.is_visible()
        assert not errors, errors


def test_prior_lesson_link_sets_the_prior_sliders(served_app):
    """`prior.<name>` values in a lesson's link set the prior page's controls: the key view's title says δ."""
    lesson = next(lesson for lesson in LESSONS if lesson.page == "prior")
    delta = prior_settings(lesson)["delta"]
    with browser_page() as (page, errors):
        page.goto(served_app + lesson_query(lesson))
        poll(lambda: any(f"δ = {delta:g}" in text for text in page_texts(page)), timeout=120)
        assert not errors, errors
