"""One class server (`invlab serve --basic-auth users.json --cookie-secret S`) for the raw-HTTP tests of logins and of
the routes a request without a login reaches (tests/bad_inputs/test_logins.py, test_unauthenticated_routes.py): the
`class_server` session fixture in tests/conftest.py starts it once per test process, on first use.

Its users file holds USERS; a module PROBE on the server's path leaves a mark (PROBE + ".imported" beside it) when
something imports it, so a test can tell that a URL never made the server import a module.
"""
from __future__ import annotations

import contextlib
import json
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

USERS = {"alice": "alice-pw", "bob": "bob-pw", "carol": "carol-pw", "dave": "dave-pw", "erin": "erin-pw"}
COOKIE_SECRET = "s" * 32
PROBE = "invlab_import_probe"
PROBE_SOURCE = "import pathlib\npathlib.Path(__file__).with_suffix('.imported').write_text('imported')\n"


@dataclass(frozen=True)
class Served:
    """A served dashboard: where it answers, its process, its folder (its log is `folder/served/server.log`), the
    folder on its path that holds PROBE, and its users file (None without logins)."""

    host: str
    port: int
    proc: object
    folder: Path
    users: Path | None

    @property
    def path(self) -> Path:
        return self.folder / "path"

    @property
    def log(self) -> Path:
        return self.folder / "served" / "server.log"


@contextlib.contextmanager
def serve_with_probe(folder: Path, logins: bool):
    """`invlab serve` from `folder`, with PROBE on its path and, if `logins`, USERS' logins: yields a Served."""
    from invlab.dashboard.serving.process import serve_dashboard_process

    (folder / "path").mkdir(parents=True)
    (folder / "path" / f"{PROBE}.py").write_text(PROBE_SOURCE)
    args, users = [], None
    if logins:
        users = folder / "users.json"
        users.write_text(json.dumps(USERS))
        args = ["--basic-auth", str(users), "--cookie-secret", COOKIE_SECRET]
    with serve_dashboard_process(folder / "served", args=args, extra_env={"PYTHONPATH": str(folder / "path")}) \
            as (url, proc):
        parts = urllib.parse.urlsplit(url)
        yield Served(parts.hostname, parts.port, proc, folder, users)
