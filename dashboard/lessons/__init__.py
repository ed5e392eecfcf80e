"""Lessons: the catalogue of presets and their steps, their links and banners (`catalogue`), and the Lessons page's
cards (`cards`)."""
from invlab.dashboard.lessons.cards import LessonCards
from invlab.dashboard.lessons.catalogue import LESSONS, Lesson, Step, get_lesson, lesson_query

__all__ = ["LESSONS", "Lesson", "LessonCards", "Step", "get_lesson", "lesson_query"]
