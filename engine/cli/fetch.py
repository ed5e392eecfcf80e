"""`invlab fetch`: download a dataset once into the data directory."""
from __future__ import annotations

import argparse
import sys

from ..errors import InvlabError


def cmd_fetch(argv: list[str]) -> int:
    """`invlab fetch ARGV`; returns the exit status."""
    from ..data import fetch

    parser = argparse.ArgumentParser(prog="invlab fetch",
                                     description="Download a dataset once into the data directory.")
    parser.add_argument("name", choices=["mnist"])
    args = parser.parse_args(argv)
    try:
        path = fetch(args.name)
    except InvlabError as err:
        print(f"invlab fetch: {err}", file=sys.stderr)
        return 1
    print(f"{args.name} is ready: {path}")
    return 0

