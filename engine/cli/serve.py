"""`invlab serve`: the dashboard under `panel serve`, with the limits one page may ask of the server."""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import sys
from pathlib import Path

from ..errors import ConfigError
from .flags import int_flag

SECRET_FLAGS = ("--cookie-secret", "--oauth-secret", "--oauth-encryption-key", "--oauth-key")
CLASS_STEPS_PER_S = 25.0  # the default per-page cap on a server with logins (dashboard/session/scheduling.py says why)
UNUSED_SESSION_LIFETIME_MS = 5000  # a session without a connected browser is ended after this long
CHECK_UNUSED_SESSIONS_MS = 1000


def dashboard_app() -> Path:
    """The dashboard's `app.py`, found without importing the dashboard (the engine does not depend on it)."""
    spec = importlib.util.find_spec("invlab.dashboard")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    app = next((Path(folder) / "app.py" for folder in folders if (Path(folder) / "app.py").is_file()), None)
    if app is None or importlib.util.find_spec("panel") is None:
        raise ConfigError("the dashboard is not installed (the engine runs without it); install it with "
                          "pip install 'invariance-lab[dashboard]' (in a source checkout: make setup) to use "
                          "`invlab serve`")
    return app.resolve()


def serve_parser() -> argparse.ArgumentParser:
    """`invlab serve`'s own options (the others are passed to `panel serve`)."""
    parser = argparse.ArgumentParser(
        prog="invlab serve", description="Serve the dashboard. Options not listed here are passed to `panel serve` "
        "(e.g. --cookie-secret, --oauth-provider, --ssl-certfile).")
    parser.add_argument("--address", default="127.0.0.1",
                        help="Interface to bind (default 127.0.0.1: this machine only). Use 0.0.0.0 to expose it.")
    parser.add_argument("--port", type=int_flag("--port", 0, 65535), default=5006,
                        help="Port to listen on, 0..65535 (0: any free port).")
    parser.add_argument("--allow-websocket-origin", action="append", default=[], metavar="HOST[:PORT]",
                        help="Host names browsers may use to reach the server (repeatable).")
    parser.add_argument("--num-procs", type=int_flag("--num-procs"), default=1,
                        help="Worker processes (0 = one per core).")
    parser.add_argument("--max-training", type=int_flag("--max-training", 1), default=None,
                        help="Pages allowed to train at once per process (default: one per core up to 4 cores, "
                        "then cores − 4). A page training alone gets every core but the server's; pages training "
                        "together share the cores equally, re-balanced when one starts or stops.")
    parser.add_argument("--max-steps-per-s", type=float, default=None, metavar="R",
                        help="Steps a second each training page may take (0: no cap). Default: no cap, so a page "
                        f"trains at the machine's speed; on a server with logins (a class) {CLASS_STEPS_PER_S:g}.")
    parser.add_argument("--show", action="store_true", help="Open a browser tab.")
    parser.add_argument("--basic-auth", default=None, metavar="FILE|PASSWORD",
                        help="Logins: a JSON file of {\"user\": \"password\"} (read again when it changes) or one "
                        "password shared by everyone; needs --cookie-secret. A logout ends the login, wrong passwords "
                        "lock a user out for minutes (dashboard/serving/logins.py).")
    parser.add_argument("--admin", action="append", default=[], metavar="USER",
                        help="With --basic-auth or OAuth: a user who sees every user's runs and sweeps (repeatable); "
                        "the others see only their own.")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="The Dask scheduler the Compare page's runs go to (tcp://host:8786); default: a cluster "
                        "of this server's own. A page may not choose another (see --allow-page-scheduler), except "
                        "an --admin's.")
    parser.add_argument("--allow-page-scheduler", action="store_true",
                        help="Without logins: let every page type a Dask scheduler address. The server connects to "
                        "it and unpickles what its workers send, so whoever types one runs code as the server: only "
                        "where you trust everyone who can reach the page.")
    limits = parser.add_argument_group("what one page may ask of the server (the CLI's train has no limits)")
    limits.add_argument("--max-points", type=int, default=None, metavar="N",
                        help="Training + test points a run's data may have (default 100000).")
    limits.add_argument("--max-inducing", type=int, default=None, metavar="M",
                        help="Inducing points a run may have (default 2000).")
    limits.add_argument("--max-memory-mb", type=float, default=None, metavar="MB",
                        help="Estimated memory a run may need (default 2048).")
    limits.add_argument("--allow-data-dir", action="append", default=[], metavar="DIR",
                        help="A folder whose data files pages may read and list in the Data tab, besides the data "
                             "directory: CSV, npz and IDX files and image folders (repeatable).")
    return parser


def serve_command(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """The `panel serve` command line (and extra environment) that `invlab serve ARGS` runs."""
    args, passthrough = serve_parser().parse_known_args(argv)
    return panel_command(args, passthrough) + passthrough, server_environment(args, passthrough)


def panel_command(args: argparse.Namespace, passthrough: list[str]) -> list[str]:
    """`panel serve` on the dashboard's app with `invlab serve`'s address, port, origins and session timings."""
    app = dashboard_app()
    origins = args.allow_websocket_origin or [f"localhost:{args.port}", f"127.0.0.1:{args.port}"]
    cmd = [sys.executable, "-m", "panel", "serve", str(app), "--address", args.address, "--port", str(args.port),
           "--num-procs", str(args.num_procs)]
    for origin in origins:
        cmd += ["--allow-websocket-origin", origin]
    if args.show:
        cmd.append("--show")
    if args.basic_auth is not None:  # our logins (Panel's --basic-auth would install its own; logins.py says why)
        cmd += ["--auth-module", str(app.parent / "serving" / "_login_module.py")]
    # The first page after the server starts used to wait for the dashboard's imports (torch, HoloViews, the
    # engine) and its first build: up to a minute blank on a busy laptop. Panel's warm-up builds one page before the
    # server listens, so the first visitor's page comes as fast as the next one's.
    if "--warm" not in passthrough:
        cmd.append("--warm")
    # A closed browser tab ends its session (and its training) within seconds, not Bokeh's default 15–32 s.
    if not any(a.startswith("--unused-session-lifetime") for a in passthrough):
        cmd += ["--unused-session-lifetime", str(UNUSED_SESSION_LIFETIME_MS)]
    if not any(a.startswith("--check-unused-sessions") for a in passthrough):
        cmd += ["--check-unused-sessions", str(CHECK_UNUSED_SESSIONS_MS)]
    return cmd


def server_environment(args: argparse.Namespace, passthrough: list[str]) -> dict[str, str]:
    """The variables the served app reads its limits, admins and data folders from (ConfigError on a bad value)."""
    # Scripts and stylesheets from the installed packages, never a CDN (classrooms and clusters are often offline),
    # even where the environment says otherwise (BOKEH_RESOURCES=cdn, say from a notebook set-up).
    env = {"BOKEH_RESOURCES": "server"}
    if "MALLOC_ARENA_MAX" not in os.environ:
        # glibc gives each thread but the first its own malloc arena, whose heaps hand freed tensor memory back
        # and fault it in again: a page's training thread then took a quarter more time per step than the engine
        # alone in a main thread (benchmarks/dashboard/README.md). One arena keeps the freed memory for reuse.
        env["MALLOC_ARENA_MAX"] = "1"
    if args.max_training is not None:
        env["INVLAB_MAX_TRAINING"] = str(args.max_training)
    logins = args.basic_auth is not None or any(a.startswith("--oauth-provider") for a in passthrough)
    if args.basic_auth is not None:  # to the server's environment, not its command line (which `ps` shows anyone)
        if not args.basic_auth:
            raise ConfigError("--basic-auth needs a JSON file of user names and passwords, or a password")
        path = os.path.expanduser(args.basic_auth)
        env["INVLAB_BASIC_AUTH"] = os.path.abspath(path) if os.path.isfile(path) else args.basic_auth
    if args.max_steps_per_s is not None:
        if not math.isfinite(args.max_steps_per_s) or args.max_steps_per_s < 0:
            raise ConfigError(f"--max-steps-per-s must be a finite number, at least 0, not {args.max_steps_per_s}")
        env["INVLAB_MAX_STEPS_PER_S"] = format(args.max_steps_per_s, "g")
    elif logins:  # a class: every student's page gets its share of a cap, whoever presses Start first
        env["INVLAB_MAX_STEPS_PER_S"] = format(CLASS_STEPS_PER_S, "g")
    for flag, var, value in (("--max-points", "INVLAB_MAX_POINTS", args.max_points),
                             ("--max-inducing", "INVLAB_MAX_INDUCING", args.max_inducing),
                             ("--max-memory-mb", "INVLAB_MAX_MEMORY_MB", args.max_memory_mb)):
        if value is not None:
            if not math.isfinite(value) or value < 1:  # nan or inf would switch the limit off
                raise ConfigError(f"{flag} must be a finite number, at least 1, not {value}")
            env[var] = format(value, "g") if isinstance(value, float) else str(value)
    if args.admin:
        if not logins:
            raise ConfigError("--admin names a logged-in user, but this server has no logins (every page sees every "
                              "run); add --basic-auth FILE or --oauth-provider NAME, or leave --admin out")
        env["INVLAB_ADMINS"] = json.dumps(args.admin)
    env.update(scheduler_environment(args, logins))
    if args.allow_data_dir:
        dirs = [os.path.abspath(os.path.expanduser(d)) for d in args.allow_data_dir]
        env["INVLAB_DATA_DIRS"] = os.pathsep.join(dirs)
    return env


def scheduler_environment(args: argparse.Namespace, logins: bool) -> dict[str, str]:
    """`--scheduler` and `--allow-page-scheduler` as the served app reads them (dashboard/compare/scheduler_choice.py:
    who may choose the scheduler, and why); ConfigError for an address that is not one, or a page's choice on a
    server with logins."""
    from urllib.parse import urlsplit

    env = {}
    if args.scheduler is not None:
        address = args.scheduler.strip()
        parts = urlsplit(address if "://" in address else f"tcp://{address}")
        try:
            parts.port  # noqa: B018 — reading it checks it
        except ValueError:
            parts = None
        if parts is None or not parts.hostname:
            raise ConfigError(f"--scheduler {args.scheduler!r} is not an address like tcp://host:8786")
        env["INVLAB_SCHEDULER"] = address
    if args.allow_page_scheduler:
        if logins:
            raise ConfigError("--allow-page-scheduler lets any page name the Dask scheduler the server connects to, "
                              "and this server has logins (a class): there only the person running it chooses "
                              "(--scheduler ADDRESS) or a user named with --admin; leave --allow-page-scheduler out")
        env["INVLAB_PAGE_SCHEDULER"] = "1"
    return env


def shown(cmd: list[str]) -> str:
    """`cmd` as it may be printed: the value of every secret flag (and a `--basic-auth` password, as opposed to a
    file of users) replaced by ***, in both `--flag VALUE` and `--flag=VALUE` forms."""
    def secret(flag: str, value: str) -> bool:
        return flag in SECRET_FLAGS or (flag == "--basic-auth" and not os.path.isfile(value))

    out, hide_next = [], False
    for i, word in enumerate(cmd):
        flag, eq, value = word.partition("=")
        if hide_next:
            out.append("***")
        elif eq and secret(flag, value):
            out.append(f"{flag}=***")
        else:
            out.append(word)
        hide_next = not eq and i + 1 < len(cmd) and secret(word, cmd[i + 1])
    return " ".join(out)


def cmd_serve(argv: list[str]) -> int:
    """`invlab serve ARGV`: replaces this process with the server; returns 2 for a refused line."""
    import subprocess

    try:
        cmd, env = serve_command(argv)
    except ConfigError as err:
        print(f"invlab serve: {err}", file=sys.stderr)
        return 2
    print(f"serving the dashboard: {shown(cmd[2:])}", file=sys.stderr)  # never a secret on the terminal
    if "INVLAB_BASIC_AUTH" in env:
        users = env["INVLAB_BASIC_AUTH"]
        print(f"logins: the users in {users}" if os.path.isfile(users) else "logins: one shared password",
              file=sys.stderr)
    env = {**os.environ, **env}
    if os.name == "posix":  # the server takes this process's place, so Ctrl-C and SIGTERM reach it, not an orphan
        sys.stderr.flush()
        sys.stdout.flush()
        os.execve(cmd[0], cmd, env)
    try:
        return subprocess.call(cmd, env=env)
    except KeyboardInterrupt:
        return 0

