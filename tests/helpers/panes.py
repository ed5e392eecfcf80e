"""What a Markdown or HTML pane shows on the page, as text: the HTML Panel renders for it, tags dropped."""
import html
import re


def pane_text(pane) -> str:
    """The text a reader sees in `pane` (a `pn.pane.Markdown`, `Alert` or `HTML`): rendered as Panel renders it for
    the page, with tags removed and entities decoded; Markdown's escapes therefore do not show."""
    rendered = html.unescape(pane._transform_object(pane.object)["object"])  # it travels escaped once more
    return html.unescape(re.sub(r"<[^>]+>", "", rendered)).strip()
