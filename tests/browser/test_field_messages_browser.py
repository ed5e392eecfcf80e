"""Messages beside number fields, in a real Chromium: a subset larger than the data is refused in the field (not
taken into the box or the URL), Start after a change that needs a new model says it goes on with the current run,
and a message about an earlier bad value goes away once a value is accepted."""
import re
import time

from lessonkit import field, open_tab, page_text
from pagekit import browser_page, poll

SMALL = ("?model=svgp&data.subset=200&data.test_subset=100&model.num_inducing=10&train.batch_size=50"
         "&train.steps=100000")


def address(page) -> str:
    return page.evaluate("() => window.location.href")


def messages(page) -> list[str]:
    return [m.inner_text() for m in page.locator(".invlab-field-message").all() if m.is_visible()]


def test_a_subset_larger_than_the_data_is_refused_in_its_field(served_app):
    from invlab.data import load

    available = len(load("digits").y_train)  # the training points the bundled digits have
    with browser_page(1440, 900) as (page, errors):
        page.goto(served_app + SMALL)
        open_tab(page, "Data")
        box = field(page, "Subset")
        box.fill("99999999")
        box.press("Enter")
        text = poll(lambda: next((m for m in messages(page) if "Subset" in m), ""), timeout=30)
        assert "99999999" in text and f"≤ {available}" in text, text
        poll(lambda: box.input_value() == "200", timeout=15)
        time.sleep(1.0)
        assert "99999999" not in address(page)
        assert not errors, errors


def test_start_with_a_pending_change_says_it_goes_on_with_the_current_run(served_app):
    with browser_page(1440, 900) as (page, errors):
        page.goto(served_app + SMALL)
        page.get_by_role("button", name="▶ Start").click(timeout=90_000)
        step = page.locator("[data-field=step]").first
        poll(lambda: step.count() and step.inner_text().strip().isdigit() and int(step.inner_text()) >= 3, timeout=90)
        page.get_by_role("button", name="❚❚ Pause").click()
        open_tab(page, "Data")
        box = field(page, "Subset")
        box.fill("300")
        box.press("Enter")
        poll(lambda: "Press Reset to apply" in page_text(page), timeout=30)
        page.get_by_role("button", name="▶ Start").click()
        time.sleep(3.0)
        text = " ".join(page_text(page).split())
        assert re.search(r"Start goes on with the current run", text), "no word on what Start did"
        assert "Press Reset to apply" in text
        assert not errors, errors


def test_a_message_about_an_earlier_bad_value_goes_away(served_app):
    with browser_page(1440, 900) as (page, errors):
        page.goto(served_app + SMALL)
        open_tab(page, "Optimisation")
        batch = field(page, "Batch size")
        batch.fill("-5")
        batch.press("Enter")
        poll(lambda: any("Batch size" in m for m in messages(page)), timeout=30)
        rate = field(page, "Learning rate")  # another value, accepted
        rate.fill("0.02")
        rate.press("Enter")
        poll(lambda: not any("Batch size" in m for m in messages(page)), timeout=30)
        assert not errors, errors


def test_letters_typed_into_a_number_box_are_refused_with_a_message_at_the_box(served_app):
    """Bokeh's number boxes dropped letters without a word; the box now says why, and keeps its number."""
    with browser_page(1440, 900) as (page, errors):
        page.goto(served_app + SMALL)
        open_tab(page, "Data")
        box = field(page, "Subset")
        box.click()
        box.press("End")
        box.press_sequentially("x")
        message = box.evaluate("e => e.validationMessage")
        assert message == 'Numbers only: "x" cannot be part of a number.', message
        assert box.input_value() == "200"
        box.press_sequentially("0")  # an accepted character clears the message
        assert box.evaluate("e => e.validationMessage") == ""
        assert box.input_value() == "2000"
        assert not errors, errors
