"""Lessons in a real headless Chromium: teacher mode hides the controls a lesson does not list, and a prior lesson's
link sets the prior page's sliders. Every card's preset and key view are checked as its lesson is walked
(test_lesson_walk_browser.py).

Page contract (CONTRACT.md): `?lesson=<key>` applies the lesson's settings and shows its title and text; the cards
are `.invlab-lesson[data-lesson=<key>]` with an `a.invlab-open` link (on the landing view, or a "Lessons" tab);
`page=prior` opens the "Deep kernel prior" page; `teacher=1` hides every control the lesson does not list.
"""
from invlab.dashboard.lessons.catalogue import LESSONS, get_lesson, lesson_query, prior_settings, visible_controls
from invlab.train import TrainConfig
from pagekit import browser_page, page_texts, poll


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
