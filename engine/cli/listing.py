"""What `invlab runs` and `invlab sweeps` share: their flags, reading the run store without creating it, and stored
names made safe for a terminal."""
from __future__ import annotations

import argparse
import sys
from typing import Callable

from ..errors import InvlabError
from .flags import int_flag


def listing_args(prog: str, description: str, argv: list[str]) -> argparse.Namespace:
    """The parsed `--limit N` (0: all) and `--json` of a listing command."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--limit", type=int_flag("--limit", 0, 10**9), default=50,
                        help="Show at most this many (0: all).")
    parser.add_argument("--json", action="store_true", help="One JSON object per line.")
    return parser.parse_args(argv)


def read_store(command: str, read: Callable, empty) -> tuple[object, object] | int:
    """(`read(store)`, the store's path) from the data directory's run store, opened without creating anything;
    (`empty`, the path looked at) when no store is there yet; or exit status 1, with the message printed as
    `invlab COMMAND: …`, when the data directory itself is missing or the store cannot be read."""
    from ..train.store import NoRunStore, RunStore

    try:
        with RunStore(create=False) as store:  # listing never creates the data directory
            return read(store), store.path
    except NoRunStore as err:
        if not err.mistyped:
            return empty, err.path
        print(f"invlab {command}: {err}", file=sys.stderr)
    except InvlabError as err:
        print(f"invlab {command}: {err}", file=sys.stderr)
    return 1


def shown(text) -> str:
    """`text` (a stored name: a run's, a sweep's, a data set's) as it may go to a terminal: every character that is
    not printable (terminal escapes, newlines, carriage returns, bidirectional overrides) is written as its Python
    escape (`\\x1b`, `\\n`, `\\u202e`), so a name can neither move the cursor nor fake a line of the listing."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(text))
