"""Words a student understands, in a real Chromium: the family selector names each family in words with its paper,
a control that does not apply is disabled and says why, and the Invariance tab of a finite orbit says what the
orbit is and that it has no ranges."""
import re

from lessonkit import group, open_tab, page_text
from pagekit import browser_page, poll


def reason_under(page, label: str) -> str:
    """The explanation shown under the control labelled `label` when it does not apply ("" when none)."""
    titles = [t for t in page.get_by_text(re.compile(r"^\s*" + re.escape(label))).all() if t.is_visible()]
    if not titles:
        return ""
    top = titles[0].bounding_box()["y"]
    for note in page.get_by_text(re.compile(r"^\s*Does not apply: ")).all():  # the control's note
        n = note.bounding_box() if note.is_visible() else None
        if n and 0 < n["y"] - top < 110:
            return note.inner_text()
    return ""


def test_the_family_selector_explains_each_family_with_its_paper(served_app):
    with browser_page(1440, 900) as (page, errors):
        page.goto(served_app + "?model=svgp")
        open_tab(page, "Model")
        select = page.locator(".bk-input-group", has_text="Model family").locator("select").first
        poll(lambda: select.count() > 0)
        # the chosen family in a sentence under the selector, and another family's once it is chosen
        words = page.locator(".invlab-family-words").first
        poll(lambda: "sparse variational GP" in words.inner_text() and "Hensman" in words.inner_text(), timeout=20)
        select.select_option("gwi")
        poll(lambda: "Gaussian Wasserstein inference" in words.inner_text(), timeout=20)
        assert "Wild, Hu & Sejdinovic (2022)" in words.inner_text()
        # the hover help names the papers by title, authors and year
        page.locator(".bk-input-group", has_text="Model family").locator(".bk-description").first.hover()
        poll(lambda: "Learning Invariances using the Marginal Likelihood" in page_text(page), timeout=15)
        assert "van der Wilk" in page_text(page)
        assert not errors, errors


def test_controls_that_do_not_apply_are_disabled_with_the_reason(served_app):
    with browser_page(1440, 900) as (page, errors):
        page.goto(served_app + "?model=svgp&data.dataset=symmetric-2d")
        open_tab(page, "Model")
        assert "polynomial" in poll(lambda: reason_under(page, "Degree"), timeout=30)
        open_tab(page, "Data")
        assert group(page, "Rotate").locator("input").first.is_disabled()
        assert "images" in poll(lambda: reason_under(page, "Rotate"), timeout=20)
        page.goto(served_app + "?model=rkhs")
        open_tab(page, "Optimisation")
        poll(lambda: group(page, "Learning rate").count() > 0)
        assert group(page, "Learning rate").locator("input").first.is_disabled()
        assert "L-BFGS" in poll(lambda: reason_under(page, "Learning rate"), timeout=20)
        assert not errors, errors


def test_a_finite_orbit_says_what_it_is_on_the_invariance_tab(served_app):
    query = "?model=invariant&data.dataset=symmetric-2d&model.augmentation=permutations&train.steps=5"
    with browser_page(1440, 900) as (page, errors):
        page.goto(served_app + query)
        page.get_by_role("button", name="▶ Start").click(timeout=90_000)
        open_tab(page, "Invariance")
        note = page.get_by_text(re.compile(r"finite orbit|no invariance ranges"))
        text = poll(lambda: next((n.inner_text() for n in note.all() if n.is_visible()), ""), timeout=90)
        assert "has no invariance ranges to set" not in text, text
        assert re.search(r"swap|permut", text) and "no ranges" in text, text
        assert not errors, errors
