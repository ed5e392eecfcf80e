"""Panel's reading of a page's link: a value that only looks like a number to `str.isdigit` stays text.

Panel turns each query value that `str.isdigit()` accepts into an `int` as it builds `pn.state.location`, but
`isdigit` also accepts superscripts and other digits that `int` refuses (`?run=¹`): the `ValueError` left the page
unbuilt and a traceback in the server's log. `install()` wraps the parser Panel's `Location` uses so that such a
value (any digit outside ASCII) reaches the page as the text it was; the page then refuses it in words like any other
value that is not a number. Once per process (the app file calls it; idempotent).
"""
from __future__ import annotations

from urllib.parse import parse_qsl, urlencode


def _odd_digits(value: str) -> bool:
    return value.isdigit() and not value.isascii()


def parsed_with(parse_query):
    """Panel's `parse_query` (`?a=1&b=x` → {'a': 1, 'b': 'x'}) with values of non-ASCII digits kept as text."""
    def parse(query: str) -> dict:
        pairs = dict(parse_qsl(query[1:]))  # the last of a repeated key, as Panel reads it
        odd = {key: value for key, value in pairs.items() if _odd_digits(value)}
        if not odd:
            return parse_query(query)
        rest = parse_query("?" + urlencode([(key, value) for key, value in pairs.items() if key not in odd]))
        return {key: odd[key] if key in odd else rest[key] for key in pairs if key in odd or key in rest}

    parse.invlab_wrapped = True
    return parse


def install() -> None:
    """Read every served page's link with `parsed_with(Panel's parser)`; once per process."""
    from panel.io import location

    if not getattr(location.parse_query, "invlab_wrapped", False):
        location.parse_query = parsed_with(location.parse_query)
