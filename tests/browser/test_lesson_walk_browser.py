"""Every lesson walked in a real Chromium exactly as its card words it: the card lists the lesson's steps, its link
opens the lesson's preset (the page shows the lesson's title and selects its family and data set, or opens the prior
or Compare page), the lesson's banner lists the steps on the page it opens, and each step done with the page's own
controls (a press, a choice, a typed value, a dragged slider) shows its expected effect on the page; the first
step's effect is the lesson's key view receiving data.

The steps are data (`invlab.dashboard.lessons.Step`): what the card says, the control, the expected effect and how the
page shows it; this test reads the same data."""
import pytest

from invlab.dashboard.lessons.catalogue import LESSONS, get_lesson, lesson_query
from lessonkit import do, effect_shown, open_tab, page_text, select_value, view_title
from pagekit import browser_page, poll


def titles_for(lesson) -> dict:
    """The titles of the views the lesson's steps wait for, as the engine names them for its runs."""
    out = {}
    for step in lesson.steps:
        if step.expect[0] == "view":
            settings = lesson.compare_settings() if lesson.compare and step is lesson.steps[-1] else lesson.settings
            out[step.expect[1]] = view_title(settings, step.expect[1])
    return out


# A step shows its effect within three minutes on a busy 2-core machine; Discover's verdict within what its card
# promises there ("up to four [minutes] when it is busy with other work"), with three minutes to spare.
STEP_S, DISCOVER_VERDICT_S = 180, 420


def step_timeout(step) -> float:
    if step.control == "discover":
        assert get_lesson("discover").takes in step.effect, step.effect
        return DISCOVER_VERDICT_S
    return STEP_S


def preset_shown(page, lesson) -> None:
    """The page a lesson's card opened shows the lesson: its key in the address, its title, and its page and
    settings selected (the prior page; Compare with the lesson's data and every Discover candidate ticked; or the
    Training page with the lesson's family and data set)."""
    poll(lambda: f"lesson={lesson.key}" in page.url)
    heading = page.get_by_text(lesson.title)
    poll(lambda: heading.count() > 0 and any(heading.nth(i).is_visible() for i in range(heading.count())))
    if lesson.page == "prior":
        tab = page.locator(".bk-tab", has_text="Deep kernel prior").first
        poll(lambda: "bk-active" in (tab.get_attribute("class") or ""))
    elif lesson.page == "compare":
        tab = page.locator(".bk-tab", has_text="Compare").first
        poll(lambda: "bk-active" in (tab.get_attribute("class") or ""))
        poll(lambda: select_value(page, "Data set") == lesson.settings["data.dataset"], timeout=60)
        ticked = page.locator(".invlab-discover-candidates input[type=checkbox]")
        poll(lambda: ticked.count() >= 6 and all(ticked.nth(i).is_checked() for i in range(ticked.count())))
        names = [" ".join(t.split()) for t in page.locator(".invlab-discover-candidates label").all_inner_texts()]
        assert "rotation" in names and "flips" in names, names
    else:  # each control read on its own tab, as a person looks for it
        open_tab(page, "Model")
        poll(lambda: select_value(page, "Model family") == lesson.settings["model"])
        if "data.dataset" in lesson.settings:
            open_tab(page, "Data")
            poll(lambda: select_value(page, "Dataset") == lesson.settings["data.dataset"], timeout=30)


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
        preset_shown(page, lesson)
        poll(lambda: all(w in " ".join(page_text(page).split()) for w in words), timeout=90)  # the banner
        for step in lesson.steps:
            do(page, step)
            poll(lambda step=step: effect_shown(page, lesson, step, titles), timeout=step_timeout(step))
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
