"""Every lesson walked in a real Chromium exactly as its card words it: the card lists the lesson's steps, the
lesson's banner lists them on the page it opens, and each step done with the page's own controls (a press, a
choice, a typed value, a dragged slider) shows its expected effect on the page.

The steps are data (`dashboard.lessons.Step`): what the card says, the control, the expected effect and how the
page shows it; this test reads the same data."""
import pytest

from dashboard.lessons import LESSONS, get_lesson, lesson_query
from lessonkit import do, effect_shown, page_text, view_title
from pagekit import browser_page, poll


def titles_for(lesson) -> dict:
    """The titles of the views the lesson's steps wait for, as the engine names them for its runs."""
    out = {}
    for step in lesson.steps:
        if step.expect[0] == "view":
            settings = lesson.compare_settings() if lesson.compare and step is lesson.steps[-1] else lesson.settings
            out[step.expect[1]] = view_title(settings, step.expect[1])
    return out


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.key)
def test_every_lesson_walked_as_its_card_words_it(served_app, lesson):
    titles = titles_for(lesson)
    words = [step.words for step in lesson.steps]
    with browser_page(1440, 900) as (page, errors):
        page.goto(served_app)
        card = page.locator(f".invlab-lesson[data-lesson={lesson.key}]").first
        card.wait_for(timeout=90_000)
        assert [" ".join(t.split()) for t in card.locator("li").all_inner_texts()] == words
        card.locator("a.invlab-open").click()
        poll(lambda: all(w in " ".join(page_text(page).split()) for w in words), timeout=90)  # the banner
        for step in lesson.steps:
            do(page, step)
            poll(lambda step=step: effect_shown(page, lesson, step, titles), timeout=180)
        assert not errors, errors


def test_the_prior_lesson_has_its_banner_and_teacher_mode_on_the_prior_page(served_app):
    lesson = get_lesson("prior")
    with browser_page(1440, 900) as (page, errors):
        page.goto(served_app + lesson_query(lesson, teacher=True))
        banner = page.locator(".invlab-lesson-banner", has_text=lesson.title)
        poll(lambda: any(b.is_visible() for b in banner.all()), timeout=90)
        poll(lambda: page.get_by_text("α (identity weight)").first.is_visible(), timeout=60)  # the lesson's α
        assert not [el for el in page.get_by_text("Alpha", exact=True).all() if el.is_visible()]  # not "Alpha"
        for unused in ("Width", "Lengthscale", "Seed"):
            shown = [el for el in page.get_by_text(unused, exact=True).all() if el.is_visible()]
            assert not shown, unused
        assert not errors, errors
