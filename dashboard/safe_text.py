"""Text from outside — a link, a file, a user, a stored run, an error message that quotes any of them — shown on the
page as text, never as markup.

Every pane that renders HTML (`pn.pane.HTML`, a toast) receives `html_text(value)`; every pane that renders
Markdown (`pn.pane.Markdown`, `pn.pane.Alert`) receives `markdown_text(value)`, which also neutralises Markdown's
own syntax (a link `[x](javascript:…)`, emphasis, a heading) so the words appear exactly as they were written; a
Bokeh hover tooltip's literal text receives `tooltip_text(value)`.
The page's own formatting is added around the escaped values, never inside them.
"""
from __future__ import annotations

import html
import re

import panel as pn

# The ASCII punctuation CommonMark lets a backslash escape, less `&` and `;` (kept for the entities `html.escape`
# writes), `<` and `>` (already entities) and the quotes (plain text in Markdown).
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~=:$%^@,/?])")
_LONG = 2000  # characters of one value shown at most; a longer one is cut with a note


def _shortened(value: object) -> str:
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= _LONG else f"{text[:_LONG]}… ({len(text):,} characters in all)"


def html_text(value: object) -> str:
    """`value` as text safe inside HTML, in an element or a quoted attribute (`<`, `>`, `&`, both quotes escaped)."""
    return html.escape(_shortened(value), quote=True)


def tooltip_text(value: object) -> str:
    """`value` as literal text in a Bokeh hover tooltip's template, which Bokeh parses as HTML after filling its
    `@column` and `$special` placeholders: HTML escaped, and `@` and `$` as character references (never a
    placeholder)."""
    return html_text(value).replace("@", "&#64;").replace("$", "&#36;")


def markdown_text(value: object) -> str:
    """`value` as Markdown that renders as exactly its characters: HTML escaped, Markdown's syntax backslash-escaped,
    line breaks kept as spaces (a value never opens a list, a quote or a heading on a line of its own)."""
    escaped = html.escape(_shortened(value), quote=False)  # quotes are plain text in Markdown
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(escaped.splitlines()))


def notify(kind: str, message: object, duration: int = 8000) -> None:
    """A toast of `kind` ('error', 'warning', 'info', 'success') whose message is shown as text (the toast library
    renders its message as HTML). Nothing happens on a page without notifications (a notebook cell)."""
    notifications = pn.state.notifications
    if notifications is not None:
        getattr(notifications, kind)(html_text(message), duration=duration)
