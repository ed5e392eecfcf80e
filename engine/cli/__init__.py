"""`invlab`: train models, fetch data, list stored runs, start the dashboard.

Flags of `invlab train` are generated from the param configs (data options, the chosen model family's config, the
training setup): bounds, choices and docs come from the parameters, never copied here.

    invlab train --model svgp --dataset digits --steps 1000
    invlab train --resume 3
    invlab runs
    invlab fetch mnist
    invlab serve                      # the dashboard on http://127.0.0.1:5006
    invlab sweep sweep.toml           # a sweep on Dask (`invlab sweep --help`); --study rotation-choice
    invlab sweeps                     # stored sweeps
    invlab compare 1                  # a sweep's runs by whole-data ELBO
    invlab discover --dataset digits --rotate 90   # which invariances the data has, by the marginal likelihood
    invlab plugins                    # registered kernels, augmentations and models, and where each came from
    invlab notebooks DIR              # copy the teaching notebooks into DIR
    invlab lab                        # open them in JupyterLab (pip install 'invariance-lab[lab]')
    invlab --version
"""
from __future__ import annotations

import sys

from ..train.resume import FIXED_ON_RESUME
from .compare import cmd_compare
from .discover import cmd_discover
from .fetch import cmd_fetch
from .flags import GROUPS, add_param_flags, collect, int_flag
from .notebooks import cmd_lab, cmd_notebooks
from .plugins import cmd_plugins
from .runs import cmd_runs
from .serve import cmd_serve, dashboard_app, serve_command
from .sweep import SweepBar, cmd_sweep, parse_value, sweep_spec_from_args
from .sweeps import cmd_sweeps
from .train import cmd_train, summary_line

__all__ = ["COMMANDS", "FIXED_ON_RESUME", "GROUPS", "SweepBar", "add_param_flags", "collect", "dashboard_app",
           "int_flag", "main", "parse_value", "serve_command", "summary_line", "sweep_spec_from_args"]

COMMANDS = {"train": cmd_train, "runs": cmd_runs, "fetch": cmd_fetch, "serve": cmd_serve, "sweep": cmd_sweep,
            "sweeps": cmd_sweeps, "compare": cmd_compare, "discover": cmd_discover, "plugins": cmd_plugins,
            "notebooks": cmd_notebooks, "lab": cmd_lab}
"""Each `invlab` subcommand's name and the function that runs it on the rest of the command line."""


def main(argv: list[str] | None = None) -> int:
    """Run `invlab ARGV` (the console script); returns the exit status (0 ok, 1 refused or failed, 2 usage)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip() + "\n\ncommands: " + ", ".join(COMMANDS))
        return 0
    if argv[0] in ("-V", "--version"):
        from .. import __version__

        print(f"invlab {__version__}")
        return 0
    if argv[0] not in COMMANDS:
        print(f"invlab: unknown command {argv[0]!r}; commands: {', '.join(COMMANDS)} (`invlab --help` explains them)",
              file=sys.stderr)
        return 2
    from ..plugins import failure_lines

    try:
        for line in failure_lines():  # installed plugins register their parts before any flag is built
            print(f"invlab: warning: {line}", file=sys.stderr)
        code = COMMANDS[argv[0]](argv[1:])
        sys.stdout.flush()  # what is still buffered goes now, while a reader that has gone can be noticed here
        return code
    except BrokenPipeError:
        return _reader_gone()


def _reader_gone() -> int:
    """The reader of the output has gone (`invlab runs | head -1`): end quietly, as a Unix tool that SIGPIPE ends
    (exit status 128 + SIGPIPE). Standard output is pointed at /dev/null, so the interpreter's own last flush of what
    is still buffered says nothing either."""
    import os
    import signal

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (a test's capture): nothing is flushed to it
        pass
    return 128 + signal.SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
