"""The Lessons page: one card per lesson (`lessons.catalogue`), each with its title, what it opens, its steps
and an
"Open lesson" link to its preset, in a grid that fills the page's width. Every text on a card is escaped."""
from __future__ import annotations

import panel as pn
import param

from invlab.dashboard.lessons.catalogue import LESSONS, Lesson, lesson_query
from invlab.dashboard.safe_text import html_text

CARD_CSS = """
:host { display: block; }
.invlab-lessons { display: grid; grid-template-columns: repeat(auto-fill, minmax(340px, 1fr)); gap: 16px;
  width: 100%; box-sizing: border-box; }
.invlab-lesson { border: 1px solid #d0d7de; border-radius: 8px; padding: 14px 16px; background: #fff;
  display: flex; flex-direction: column; font-size: 15px; line-height: 1.45; color: #1f2328; }
.invlab-lesson h3 { margin: 0 0 6px 0; font-size: 17px; color: #2f4f6f; }
.invlab-lesson .invlab-lesson-meta { font-size: 13px; color: #57606a; margin-bottom: 8px; }
.invlab-lesson p { margin: 0 0 6px 0; }
.invlab-lesson ol.invlab-steps { margin: 0 0 12px 0; padding-left: 20px; flex: 1; }
.invlab-lesson ol.invlab-steps li { margin-bottom: 4px; }
.invlab-lesson a.invlab-open { align-self: flex-start; background: #2f4f6f; color: #fff; text-decoration: none;
  padding: 6px 14px; border-radius: 6px; font-weight: 600; }
.invlab-lesson a.invlab-open:hover { background: #1f3a56; }
"""


def lesson_meta(lesson: Lesson) -> str:
    """One line under the title: the page or the family and dataset it opens, and what the comparison switches to."""
    if lesson.page == "prior":
        return "Deep kernel prior page"
    if lesson.page == "compare":
        return f"Compare page: Discover on {lesson.settings.get('data.dataset', 'digits')}"
    family = lesson.settings.get("model", "svgp")
    dataset = lesson.settings.get("data.dataset", "digits")
    then = lesson.compare.get("model")
    return f"{family} on {dataset}" + (f", then {then}" if then and then != family else "")


def card_html(lesson: Lesson, base: str = "", teacher: bool = False) -> str:
    """A lesson's card as HTML: title, meta line, text and an "Open lesson" link (every text escaped)."""
    href = html_text(base + lesson_query(lesson, teacher=teacher))
    steps = "".join(f"<li>{html_text(step.words)}</li>" for step in lesson.steps)
    return (f'<div class="invlab-lesson" data-lesson="{html_text(lesson.key)}">'
            f"<h3>{html_text(lesson.title)}</h3>"
            f'<div class="invlab-lesson-meta">{html_text(lesson_meta(lesson))}</div>'
            f"<p>{html_text(lesson.text)}</p>"
            f"<ol class=\"invlab-steps\">{steps}</ol>"
            f'<a class="invlab-open" href="{href}" target="_top">Open lesson</a></div>')


class LessonCards(pn.viewable.Viewer):
    """The landing view: one card per lesson (title, what to press and watch, an "Open lesson" link to its preset),
    in a grid that fills the page's width."""

    base = param.String(default="", doc="Prefix of the links (e.g. the app's path); empty: relative to the page.")
    teacher = param.Boolean(default=False, doc="Links open in teacher mode (controls a lesson does not use hidden).")

    def __init__(self, lessons: list[Lesson] | None = None, **params):
        super().__init__(**params)
        self.lessons = list(LESSONS if lessons is None else lessons)
        self._pane = pn.pane.HTML(self._html(), stylesheets=[CARD_CSS], sizing_mode="stretch_width",
                                  css_classes=["invlab-lesson-cards"])

    def _html(self) -> str:
        cards = "".join(card_html(lesson, self.base, self.teacher) for lesson in self.lessons)
        return f'<div class="invlab-lessons">{cards}</div>'

    @param.depends("base", "teacher", watch=True)
    def _refresh(self) -> None:
        self._pane.object = self._html()

    def __panel__(self):
        intro = pn.pane.Markdown(
            "## Lessons\nEach lesson opens the lab with its settings; press ▶ Start and watch what its card says. "
            "Most show their effect within a minute on a laptop; Discover's card says how long its study takes.",
            sizing_mode="stretch_width")
        return pn.Column(intro, self._pane, sizing_mode="stretch_width", name="Lessons")
