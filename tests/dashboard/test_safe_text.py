"""The one escaping helper: a value shown through an HTML pane or through Panel's own Markdown renderer comes out as
exactly its characters, with no tag, link or emphasis of its own."""
import html
import re

import panel as pn
import pytest

from invlab.dashboard.safe_text import html_text, markdown_text

NASTY = [
    "<img src=x onerror=alert(1)>",
    '"\'><svg onload=alert(1)>',
    "[click](javascript:alert(1))",
    "**bold** _it_ `code` ~~gone~~",
    "# heading\n- item\n1. first\n> quote",
    "http://evil.example/x and www.evil.example",
    "a\\b & c; &amp; &lt;script&gt;",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "<script>alert(1)</script>",
    "![i](http://evil.example/i.png)",
    "$x^2$ :smile: [^1]",
]


def _rendered(markdown: str) -> str:
    """The HTML Panel's Markdown pane puts into the page for `markdown` (it travels escaped once more)."""
    pane = pn.pane.Markdown(markdown)
    return html.unescape(pane._transform_object(markdown)["object"])


@pytest.mark.parametrize("value", NASTY)
def test_markdown_text_renders_as_the_characters_it_was_given(value):
    out = _rendered(markdown_text(value))
    tags = re.findall(r"<(\w+)", out)
    assert set(tags) <= {"p"}, (value, out)  # one paragraph, nothing inside it
    text = html.unescape(re.sub(r"</?p>", "", out)).strip()
    assert text == " ".join(value.splitlines())


@pytest.mark.parametrize("value", NASTY)
def test_html_text_is_inert_in_an_element_and_in_an_attribute(value):
    out = html_text(value)
    assert "<" not in out and ">" not in out and '"' not in out and "'" not in out
    assert html.unescape(out) == value


def test_long_values_are_cut_with_their_length():
    value = "9" * 10_000
    assert html_text(value).endswith("… (10,000 characters in all)")
    assert len(html_text(value)) < 2100


@pytest.mark.parametrize("value", NASTY)
def test_the_page_notice_shows_its_text_inside_its_own_box_only(value):
    from invlab.dashboard.explorer.layout import notice_html

    out = notice_html(value)
    assert re.findall(r"<(\w+)", out) == ["div"]  # the notice's own box, nothing a value brought
    assert html.unescape(re.sub(r"</?div[^>]*>", "", out)) == value
    assert notice_html("") == ""  # nothing to say: no box
