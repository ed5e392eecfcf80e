"""Run and sweep ids as they enter from outside (a flag, a link): whole numbers from 1 to SQLite's largest integer.

The run store numbers runs and sweeps 1, 2, 3, ... in SQLite INTEGER columns, so an id outside 1..2^63-1 can name
nothing stored; it is refused here, in words, before it reaches the store (where SQLite would raise an
OverflowError). One function, so `invlab train --resume`, `invlab sweep --resume`, `invlab compare` and the
dashboard's links all say the same thing.
"""
from __future__ import annotations

import re

from .errors import ConfigError

MAX_ID = 2**63 - 1  # SQLite's largest INTEGER
SHOWN = 40  # characters of a refused value that are repeated back


def shorten(text: str, limit: int = SHOWN) -> str:
    """`text` itself when at most `limit` characters, else its start and end around an ellipsis (… with the length)."""
    text = str(text)
    if len(text) <= limit:
        return text
    keep = max(limit // 2 - 6, 4)
    return f"{text[:keep]}…{text[-6:]} ({len(text):,} characters)"


def parse_id(value, what: str = "run") -> int:
    """The id `value` (text or an integer) as an int in 1..MAX_ID; a ConfigError naming `what` ("run" or "sweep"),
    the range and the value as given (shortened if long) otherwise."""
    text = str(value).strip()
    number = None
    if not isinstance(value, bool) and re.fullmatch(r"[+-]?\d{1,25}", text):  # a few digits past MAX_ID's 19
        number = int(text)
    if number is None or not 1 <= number <= MAX_ID:
        raise ConfigError(f"{what} id must be a whole number from 1 to {MAX_ID} (SQLite's largest integer), not "
                          f"{shorten(text)!r}; `invlab {what}s` lists the stored {what}s")
    return number


__all__ = ["MAX_ID", "parse_id", "shorten"]
