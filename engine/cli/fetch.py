"""`invlab fetch`: download a dataset once into the data directory (those whose registry entry says how)."""
from __future__ import annotations

import argparse
import sys

from ..errors import InvlabError


def cmd_fetch(argv: list[str]) -> int:
    """`invlab fetch ARGV`; returns the exit status."""
    from ..data import fetch, fetchable

    parser = argparse.ArgumentParser(prog="invlab fetch",
                                     description="Download a dataset once into the data directory.")
    parser.add_argument("name", choices=fetchable(), help="the data set to fetch: %(choices)s")
    args = parser.parse_args(argv)
    try:
        path = fetch(args.name)
    except InvlabError as err:
        print(f"invlab fetch: {err}", file=sys.stderr)
        return 1
    print(f"{args.name} is ready: {path}")
    return 0
