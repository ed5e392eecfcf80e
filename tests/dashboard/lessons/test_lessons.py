"""Lessons: every preset is a valid run configuration, its key view is something its family produces, its teacher
controls name real parameters, its link round-trips through the page's URL decoding, and the cards render."""
import re

import pytest

from invlab.dashboard.lessons.cards import LessonCards, card_html
from invlab.dashboard.lessons.catalogue import (
    BUTTONS,
    LESSONS,
    compare_for_family,
    control_hidden,
    lesson_query,
    parse_query,
    prior_explorer,
    prior_settings,
    run_config,
    split_settings,
    visible_controls,
)
from invlab.data import DataConfig
from invlab.models import get_model
from invlab.models.dkp import PriorExplorer
from invlab.train import TrainConfig, Trainer

TRAINING = [lesson for lesson in LESSONS if lesson.page == "training"]
PRIOR = [lesson for lesson in LESSONS if lesson.page == "prior"]


def test_four_to_six_lessons_with_unique_keys_short_texts_and_steps():
    assert 4 <= len(LESSONS) <= 6
    assert len({lesson.key for lesson in LESSONS}) == len(LESSONS)
    for lesson in LESSONS:
        assert re.fullmatch(r"[a-z][a-z0-9-]*", lesson.key)
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", lesson.text.strip()) if s]
        assert 1 <= len(sentences) <= 2, (lesson.key, sentences)  # what it shows; the steps say what to do
        assert 2 <= len(lesson.steps) <= 5, lesson.key
        for step in lesson.steps:
            assert step.expect[0] in ("points", "view", "previous", "below", "text", "verdict"), step
            assert step.control in ("start", "reset", "model") or step.label, step  # a setting is found by its label
            assert step.control != "open" or step.value, step  # the ranking's row to click


def test_a_second_model_after_reset_waits_for_start_and_the_card_says_so():
    """Reset builds the second model and waits: every step after a Reset that is to train presses Start."""
    for lesson in LESSONS:
        controls = [step.control for step in lesson.steps]
        for i, control in enumerate(controls):
            if control == "reset":
                assert controls[i + 1] == "start", lesson.key
                assert "waits for Start" in lesson.steps[i].words


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.key)
def test_settings_validate_as_a_run_configuration(lesson):
    config = run_config(lesson.settings).validate()
    if lesson.page == "training":
        assert config.model == lesson.settings["model"]
    if lesson.compare:
        second = run_config(lesson.compare_settings()).validate()
        assert second.model == lesson.compare.get("model", config.model)
        # what the page applies over the family's defaults when the lecturer switches to the comparison's family
        assert compare_for_family(lesson, second.model) == second.model_config
        assert compare_for_family(lesson, "no-such-family") == {}
    split_settings(lesson.settings)  # only known prefixes


@pytest.mark.parametrize("lesson", PRIOR, ids=lambda lesson: lesson.key)
def test_prior_lesson_sets_real_prior_parameters_and_its_key_view_is_drawn(lesson):
    explorer = prior_explorer(lesson.settings)
    assert prior_settings(lesson)
    for name, value in prior_settings(lesson).items():
        assert getattr(explorer, name) == value
    explorer.size, explorer.num_points = 40, 30  # small: the view names do not depend on the sizes
    assert lesson.key_view in explorer.views()


def produced(settings: dict) -> set[str]:
    """History keys and view names of a family after a few steps and one evaluation, as the page sees them."""
    trainer = Trainer(run_config(settings))
    for _ in range(3):
        trainer.step()
    trainer.report.evaluate()
    return set(trainer.history) | set(trainer.report.snapshot(views=True).views)


@pytest.mark.parametrize("lesson", TRAINING, ids=lambda lesson: lesson.key)
def test_key_view_is_something_the_family_produces(lesson):
    names = produced(lesson.settings)
    assert lesson.key_view in names, sorted(names)
    if lesson.compare:
        names = produced(lesson.compare_settings())
        assert (lesson.compare_view or lesson.key_view) in names, sorted(names)


def _known(lesson, name: str) -> bool:
    if name == "model":
        return lesson.page == "training"
    prefix, _, param = name.partition(".")
    if prefix == "data":
        return param in DataConfig.param
    if prefix == "train":
        return param in TrainConfig.param
    if prefix == "prior":
        return param in PriorExplorer.param
    if prefix == "model":
        families = {lesson.settings.get("model", "svgp"), lesson.compare.get("model", lesson.settings.get("model"))}
        return any(param in get_model(f).config.param for f in families if f)
    return False


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.key)
def test_teacher_controls_name_real_parameters(lesson):
    assert lesson.controls, "teacher mode would hide every control"
    for name in lesson.controls:
        assert _known(lesson, name), f"{lesson.key}: {name!r} is not a real parameter"
        assert name != "model.name"
    touched = {step.control for step in lesson.steps if step.control not in BUTTONS}
    for name in touched - {"model"}:
        assert _known(lesson, name), f"{lesson.key}: a step touches {name!r}, not a real parameter"
    visible = visible_controls(lesson)
    assert visible == set(lesson.controls) | touched  # what the steps touch stays visible
    assert not control_hidden(lesson, lesson.controls[0])
    assert control_hidden(lesson, "train.jitter") and not control_hidden(None, "train.jitter")


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.key)
def test_lesson_query_round_trips_through_the_page_decoding(lesson):
    query = lesson_query(lesson)
    assert query.startswith(f"?lesson={lesson.key}&")
    assert " " not in query and '"' not in query
    decoded = parse_query(query)
    assert decoded.pop("lesson") == lesson.key
    assert decoded == lesson.settings
    assert parse_query(lesson_query(lesson.key, teacher=True))["teacher"] == 1


def test_cards_show_every_lesson_with_its_link():
    cards = LessonCards()
    html = cards._html()
    for lesson in LESSONS:
        assert f'data-lesson="{lesson.key}"' in html
        assert lesson.title.replace("&", "&amp;") in html
        assert f'href="{lesson_query(lesson).replace("&", "&amp;")}"' in html
    assert html.count("Open lesson") == len(LESSONS)
    cards.teacher = True
    assert "teacher=1" in cards._pane.object
    assert "teacher=1" in card_html(LESSONS[0], "/app", teacher=True)
    assert 'href="/app?lesson=' in card_html(LESSONS[0], "/app")
    cards.__panel__()  # builds
